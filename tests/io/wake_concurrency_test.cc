// Covers the cross-shard wake (Inbox + SleepGate) under real concurrency, for ThreadSanitizer:
// producers and shards push through many sleep/wake cycles while a lost-wakeup monitor fails
// the test if a gate stays Sleeping with a non-empty inbox for over a second (generous: this
// VM stalls for 100+ ms at times). The mutant build (HARK_MUTANT_SKIP_RECHECK) removes the
// sleeper's re-check and must fail here: tests/io/CMakeLists.txt registers it as WILL_FAIL.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/io/reactor.h"
#include "hark/io/shard_group.h"
#include "hark/tests/support/wait_until.h"

namespace hark::io {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Watches gates from its own thread. A lost wake-up shows as a gate that reads Sleeping while
// its inbox holds work; after `bound` of that, it records the failure and writes the eventfd
// itself so the test can finish.
class LostWakeupMonitor {
 public:
  explicit LostWakeupMonitor(std::vector<Reactor*> reactors)
      : reactors_(std::move(reactors)), thread_([this] { run(); }) {}
  ~LostWakeupMonitor() { stop(); }
  // Must run before the reactors it watches are destroyed.
  void stop() {
    if (thread_.joinable()) {
      stop_.store(true);
      thread_.join();
    }
  }
  int lost() const { return lost_.load(); }

 private:
  void run() {
    std::vector<Clock::time_point> stuck_since(reactors_.size());
    while (!stop_.load()) {
      // Not a wait for a signal: the monitor's sampling period.
      std::this_thread::sleep_for(1ms);
      for (size_t i = 0; i < reactors_.size(); i++) {
        Reactor& reactor = *reactors_[i];
        // Notified counts too: the eventfd is written then, so a healthy shard leaves it at once.
        const bool stuck =
            reactor.gate().state() != SleepGate::State::running && !reactor.inbox().empty();
        if (!stuck) {
          stuck_since[i] = {};
        } else if (stuck_since[i] == Clock::time_point{}) {
          stuck_since[i] = Clock::now();
        } else if (Clock::now() - stuck_since[i] > 1s) {
          lost_.fetch_add(1);
          const uint64_t one = 1;
          [[maybe_unused]] const ssize_t written = ::write(reactor.gate().eventfd(), &one, 8);
          stuck_since[i] = {};
        }
      }
    }
  }

  std::vector<Reactor*> reactors_;
  std::atomic<bool> stop_{false};
  std::atomic<int> lost_{0};
  std::thread thread_;
};

struct CountingTask final : Task {
  void run() override { runs.fetch_add(1, std::memory_order_release); }
  std::atomic<uint64_t> runs{0};
};

std::chrono::seconds stress_duration() {
  const char* text = std::getenv("HARK_STRESS_SECONDS");
  return std::chrono::seconds(text != nullptr ? std::atoi(text) : 2);
}

// Waits for `done()` with a short spin then yields, bounded by `give_up`.
template <typename Done>
void wait_for(Done&& done, Clock::time_point give_up) {
  for (uint32_t spins = 0; !done() && Clock::now() < give_up; spins++) {
    if (spins % 64 == 63) std::this_thread::yield();
  }
}

// Busy-waits a few hundred nanoseconds, so pushes land at every point of the shard's path
// from "inbox empty" to "asleep", including the few instructions a broken handshake exposes.
void jitter(uint64_t& state) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  const auto until = Clock::now() + std::chrono::nanoseconds((state >> 33) % 1500);
  while (Clock::now() < until) {
  }
}

// Outside threads ping one shard: push, wait for the task to run, repeat, so the shard goes
// to sleep and is woken many thousands of times. Every fourth push is a chain of two.
TEST(WakeConcurrency, OutsideProducersNeverLoseAWakeup) {
  auto group = std::move(ShardGroup::start(ShardGroupOptions{.shards_count = 1}, nullptr)).value();
  Reactor& shard = group->shard(ShardId(0));
  LostWakeupMonitor monitor({&shard});
  constexpr int producers_count = 2;
  // Bounded by rounds and by time (HARK_STRESS_SECONDS, default 2), and ends early once the
  // monitor has caught a lost wake-up.
  constexpr uint64_t rounds = 2'000'000;
  const auto stop_at = Clock::now() + stress_duration();
  const auto give_up = Clock::now() + 30s;
  std::vector<std::thread> producers;
  std::vector<CountingTask> singles(producers_count), pairs_first(producers_count),
      pairs_second(producers_count);
  for (int p = 0; p < producers_count; p++) {
    producers.emplace_back([&, p] {
      const auto index = static_cast<size_t>(p);
      uint64_t random = index + 1;
      for (uint64_t round = 1; round <= rounds && Clock::now() < stop_at && monitor.lost() == 0;
           round++) {
        jitter(random);
        if (round % 4 == 0) {
          CountingTask& second = pairs_second[index];
          Inbox::link(pairs_first[index], second);
          shard.inbox().push_chain(pairs_first[index], second);
          shard.gate().notify();
          wait_for([&] { return second.runs.load(std::memory_order_acquire) == round / 4; },
                   give_up);
          continue;
        }
        CountingTask& task = singles[index];
        const uint64_t before = task.runs.load(std::memory_order_acquire);
        shard.post_from_outside(task);
        wait_for([&] { return task.runs.load(std::memory_order_acquire) != before; }, give_up);
      }
    });
  }
  for (std::thread& producer : producers) producer.join();
  EXPECT_EQ(monitor.lost(), 0) << "a shard slept with work in its inbox";
  EXPECT_LT(Clock::now(), give_up)
      << "producers gave up waiting for their tasks; gate state "
      << static_cast<int>(shard.gate().state()) << ", inbox empty " << shard.inbox().empty()
      << ", monitor rescues " << monitor.lost() << ", singles run " << singles[0].runs.load() << "/"
      << singles[1].runs.load() << ", pairs run " << pairs_second[0].runs.load() << "/"
      << pairs_second[1].runs.load();
  const uint64_t writes = shard.gate().eventfd_writes();
  monitor.stop();
  group->stop();
  EXPECT_GT(writes, 0u);
}

// A task that bounces between two shards `hops` times through Reactor::post (the batched
// shard-to-shard path), then signals the test.
struct Bounce final : Task {
  void run() override {
    if (hops_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      done.store(true, std::memory_order_release);
      return;
    }
    Reactor& here = *shards[at];
    at = 1 - at;
    here.post(shards[at]->id(), *this);
  }
  Reactor* shards[2] = {nullptr, nullptr};
  size_t at = 0;
  std::atomic<int> hops_left{0};
  std::atomic<bool> done{false};
};

TEST(WakeConcurrency, ShardsBouncingTasksNeverLoseAWakeup) {
  auto group = std::move(ShardGroup::start(ShardGroupOptions{.shards_count = 2}, nullptr)).value();
  Reactor& a = group->shard(ShardId(0));
  Reactor& b = group->shard(ShardId(1));
  LostWakeupMonitor monitor({&a, &b});
  std::vector<Bounce> balls(4);
  for (size_t i = 0; i < balls.size(); i++) {
    balls[i].shards[0] = &a;
    balls[i].shards[1] = &b;
    balls[i].at = i % 2;
    balls[i].hops_left.store(4000);
  }
  for (size_t i = 0; i < balls.size(); i++)
    group->post(ShardId(static_cast<uint32_t>(i % 2)), balls[i]);
  const auto give_up = Clock::now() + 20s;
  for (Bounce& ball : balls) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(give_up - Clock::now());
    test::wait_until([&] { return ball.done.load(std::memory_order_acquire); },
                     std::max(left, std::chrono::milliseconds(0)));
    EXPECT_TRUE(ball.done.load());
  }
  EXPECT_EQ(monitor.lost(), 0) << "a shard slept with work in its inbox";
  monitor.stop();
  group->stop();
}

}  // namespace
}  // namespace hark::io
