// The io layer's wake-up costs, measured on real threads (loopback-free: this is all in one
// process). Scenarios:
//   wake_asleep     a driver thread posts one task every `gap` to an idle shard (asleep in
//                   io_uring_enter); latency = the task runs - the post began; waker cost = the
//                   time post_from_outside() took (inbox push + gate notify + eventfd write).
//   wake_running    the same while the shard is kept busy by a task that re-posts itself: the
//                   waker only checks the gate word, and no eventfd is written.
//   burst           the driver posts 1000 tasks back to back: eventfd writes per 1000 pushes.
//   spin_<n>us      wake_asleep with a 50 µs gap and the reactor spinning n µs before it
//                   sleeps: latency against the shard thread's CPU time per post.
//   timer_<n>ms     a shard arms one timer at a time for n ms: overshoot = fired - deadline.
// Usage: hark_io_wake_bench [--smoke]   (smoke: tiny counts, for the bench-smoke ctest label)
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hark/bench/support/latency.h"
#include "hark/io/shard_group.h"

namespace hark::bench {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

double micros_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

double thread_cpu_micros() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
}

// Runs on the shard: records when it ran and the shard thread's CPU clock.
struct StampTask final : io::Task {
  void run() override {
    ran_at = SteadyClock::now();
    cpu_micros = thread_cpu_micros();
    done.store(true, std::memory_order_release);
  }
  SteadyClock::time_point ran_at;
  double cpu_micros = 0;
  std::atomic<bool> done{false};
};

// Keeps a shard busy: re-posts itself every run (through the shard's own inbox).
struct BusyTask final : io::Task {
  void run() override {
    const auto until = SteadyClock::now() + 2us;
    while (SteadyClock::now() < until) {
    }
    if (!stop.load(std::memory_order_acquire)) reactor->post(reactor->id(), *this);
  }
  io::Reactor* reactor = nullptr;
  std::atomic<bool> stop{false};
};

struct WakeResult {
  std::vector<double> latency_us;
  std::vector<double> waker_us;
  double shard_cpu_us_per_post = 0;
  uint64_t eventfd_writes = 0;
};

WakeResult measure_wakes(io::ShardGroup& group, int count, std::chrono::microseconds gap) {
  io::Reactor& shard = group.shard(ShardId(0));
  WakeResult result;
  const uint64_t writes_before = shard.gate().eventfd_writes();
  double first_cpu = -1;
  double last_cpu = 0;
  for (int i = 0; i < count; i++) {
    std::this_thread::sleep_for(gap);
    StampTask task;
    const auto start = SteadyClock::now();
    shard.post_from_outside(task);
    const auto posted = SteadyClock::now();
    while (!task.done.load(std::memory_order_acquire)) {
    }
    result.latency_us.push_back(micros_between(start, task.ran_at));
    result.waker_us.push_back(micros_between(start, posted));
    if (first_cpu < 0) first_cpu = task.cpu_micros;
    last_cpu = task.cpu_micros;
  }
  result.eventfd_writes = shard.gate().eventfd_writes() - writes_before;
  result.shard_cpu_us_per_post = count > 1 ? (last_cpu - first_cpu) / (count - 1) : 0;
  return result;
}

std::unique_ptr<io::ShardGroup> start_shard(Duration spin) {
  io::ShardGroupOptions options{.shards_count = 1};
  options.reactor.spin = spin;
  return std::move(io::ShardGroup::start(options, nullptr)).value();
}

void report_wakes(const std::string& name, WakeResult& result) {
  const Percentiles waker = summarize(result.waker_us);
  char notes[160];
  std::snprintf(notes, sizeof notes, "waker p50 %.2f µs p99 %.2f µs; eventfd writes %llu/%zu",
                waker.p50, waker.p99, static_cast<unsigned long long>(result.eventfd_writes),
                result.latency_us.size());
  print_row(name, summarize(result.latency_us), notes);
}

void wake_asleep(int count) {
  auto group = start_shard(Duration(0));
  WakeResult result = measure_wakes(*group, count, 1000us);
  report_wakes("wake_asleep (gap 1 ms)", result);
}

void wake_running(int count) {
  auto group = start_shard(Duration(0));
  BusyTask busy;
  busy.reactor = &group->shard(ShardId(0));
  group->post(ShardId(0), busy);
  WakeResult result = measure_wakes(*group, count, 200us);
  busy.stop.store(true, std::memory_order_release);
  report_wakes("wake_running (busy shard)", result);
}

void burst(int rounds) {
  auto group = start_shard(Duration(0));
  io::Reactor& shard = group->shard(ShardId(0));
  std::vector<StampTask> tasks(1000);
  uint64_t writes = 0;
  std::vector<double> per_push_us;
  for (int round = 0; round < rounds; round++) {
    std::this_thread::sleep_for(2ms);
    for (StampTask& task : tasks) task.done.store(false);
    const uint64_t before = shard.gate().eventfd_writes();
    const auto start = SteadyClock::now();
    for (StampTask& task : tasks) shard.post_from_outside(task);
    per_push_us.push_back(micros_between(start, SteadyClock::now()) / 1000.0);
    for (StampTask& task : tasks) {
      while (!task.done.load(std::memory_order_acquire)) {
      }
    }
    writes += shard.gate().eventfd_writes() - before;
  }
  char notes[128];
  std::snprintf(notes, sizeof notes, "eventfd writes per 1000 pushes: %.1f",
                static_cast<double>(writes) / rounds);
  print_row("burst (1000 pushes, waker µs/push)", summarize(per_push_us), notes);
}

void spin(int count, std::chrono::microseconds spin_time) {
  auto group = start_shard(std::chrono::duration_cast<Duration>(spin_time));
  WakeResult result = measure_wakes(*group, count, 50us);
  char notes[128];
  std::snprintf(notes, sizeof notes, "shard CPU %.1f µs per post (gap 50 µs); eventfd %llu/%d",
                result.shard_cpu_us_per_post,
                static_cast<unsigned long long>(result.eventfd_writes), count);
  print_row("spin_" + std::to_string(spin_time.count()) + "us", summarize(result.latency_us),
            notes);
}

// Arms one timer at a time on the shard and records how late each fires.
struct OvershootTimer final : io::Timer, io::Task {
  void run() override { arm(); }  // First arm happens on the shard thread.
  void arm() { reactor->timers().add(*this, reactor->clock().monotonic_now() + period); }
  void expire() override {
    const Duration late = reactor->clock().monotonic_now() - deadline();
    samples_us.push_back(static_cast<double>(late.count()) / 1000.0);
    if (static_cast<int>(samples_us.size()) < count) {
      arm();
    } else {
      done.store(true, std::memory_order_release);
    }
  }
  io::Reactor* reactor = nullptr;
  Duration period{};
  int count = 0;
  std::vector<double> samples_us;
  std::atomic<bool> done{false};
};

void timer_overshoot(int count, std::chrono::milliseconds period) {
  auto group = start_shard(Duration(0));
  OvershootTimer timer;
  timer.reactor = &group->shard(ShardId(0));
  timer.period = period;
  timer.count = count;
  timer.samples_us.reserve(static_cast<size_t>(count));
  group->post(ShardId(0), timer);
  while (!timer.done.load(std::memory_order_acquire)) std::this_thread::sleep_for(1ms);
  group->stop();
  print_row("timer_" + std::to_string(period.count()) + "ms overshoot", summarize(timer.samples_us),
            "fired - deadline");
}

}  // namespace
}  // namespace hark::bench

int main(int argc, char** argv) {
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  const int count = smoke ? 20 : 2000;
  hark::bench::print_header();
  hark::bench::wake_asleep(count);
  hark::bench::wake_running(count);
  hark::bench::burst(smoke ? 2 : 50);
  for (int spin_us : {0, 20, 100}) {
    hark::bench::spin(count, std::chrono::microseconds(spin_us));
  }
  hark::bench::timer_overshoot(smoke ? 10 : 500, std::chrono::milliseconds(1));
  hark::bench::timer_overshoot(smoke ? 5 : 100, std::chrono::milliseconds(10));
  return 0;
}
