// What a scrape costs a shard's other work: a core::Broker with one shard owning every
// partition (the worst case), a consumer offset stored on each, scraped back to back by
// GetStats with the series harkd's /metrics asks for, while a probe stands in for a client: a
// byte written to a socket that the shard polls on its io_uring, answered from the shard's
// completion, so its round trip waits for whatever the shard runs between two reads of its
// ring. Run once per step bound (BrokerOptions::stats_step_max): "all" walks a shard in one
// task (before the walk had steps), then 256, 64 (the default) and 16.
//
//   hark_stats_walk_bench [--partitions N] [--scrapes N] [--smoke]
//
// Prints, per bound: the scrape's duration, and the probe's round trip while scraping and
// while idle, in wall time and in the shard thread's CPU time spent between the probe's write
// and its answer (the work the probe waited behind: immune to the machine's other load). The
// partitions live in a temporary directory; each holds 4 open files, so N is bounded by
// RLIMIT_NOFILE / 4.
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include "hark/bench/support/latency.h"
#include "hark/core/base/message_layout.h"
#include "hark/core/broker/blocking.h"

namespace hark::core {
namespace {

using Clock = std::chrono::steady_clock;

// Shard 0's end of a socket pair, polled on its ring: each byte the probe writes is read and
// answered with a byte from the completion, as a request would be. Each round trip is measured
// twice: in wall time, and in the CPU time the shard thread spent between the write and the
// answer (what the request waited behind, whatever else the machine's CPUs were doing).
class Probe final : public ShardHooks, private io::Completion {
 public:
  struct Trip {
    double wall_us = 0;
    double shard_cpu_us = 0;
  };

  Probe() {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds_) != 0) std::abort();
  }
  ~Probe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  Status on_start(Broker& /*broker*/, io::Reactor& reactor) override {
    if (reactor.id() != ShardId(0)) return ok_status();
    if (::pthread_getcpuclockid(::pthread_self(), &shard_clock_) != 0) std::abort();
    ring_ = &reactor.ring();
    ring_->poll(fds_[0], POLLIN, *this);
    return ok_status();
  }
  void on_stop(io::Reactor& reactor) override {
    if (reactor.id() == ShardId(0)) ring_->cancel(*this);
  }
  Trip round_trip() {
    const int64_t cpu_before = cpu_ns(shard_clock_);
    const Clock::time_point start = Clock::now();
    char byte = 1;
    if (::write(fds_[1], &byte, 1) != 1 || ::read(fds_[1], &byte, 1) != 1) std::abort();
    const double wall = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    const int64_t cpu = answered_cpu_ns_.load(std::memory_order_acquire) - cpu_before;
    return {.wall_us = wall, .shard_cpu_us = static_cast<double>(cpu) / 1e3};
  }

 private:
  static int64_t cpu_ns(clockid_t clock) {
    timespec now{};
    ::clock_gettime(clock, &now);
    return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
  }
  void complete(int32_t result, uint32_t /*flags*/) override {
    if (result < 0) return;  // Cancelled at stop.
    char bytes[64];
    if (::recv(fds_[0], bytes, sizeof bytes, MSG_DONTWAIT) <= 0) std::abort();
    answered_cpu_ns_.store(cpu_ns(CLOCK_THREAD_CPUTIME_ID), std::memory_order_release);
    if (::send(fds_[0], bytes, 1, MSG_DONTWAIT) != 1) std::abort();
    ring_->poll(fds_[0], POLLIN, *this);
  }

  int fds_[2] = {-1, -1};
  io::Ring* ring_ = nullptr;
  clockid_t shard_clock_{};
  std::atomic<int64_t> answered_cpu_ns_{0};
};

std::vector<std::byte> message() {
  std::vector<std::byte> bytes(message_layout::header_bytes + 8);
  store_u32(bytes, message_layout::payload_length, 8);
  return bytes;
}

std::unique_ptr<Broker> start(const std::string& directory, uint32_t step, Probe& probe) {
  BrokerOptions options;
  options.data_directory = directory;
  options.shards_count = 1;
  options.stats_step_max = step;
  options.log.durability = storage::Durability::memory;
  options.hooks = &probe;
  auto broker = Broker::start(options);
  if (!broker.ok()) {
    std::fprintf(stderr, "broker: %s\n", std::string(error_name(broker.error())).c_str());
    std::exit(1);
  }
  return std::move(broker).value();
}

// `partitions` in topics of up to 1,000, one message and one stored offset on each.
void populate(Broker& broker, uint32_t partitions) {
  Blocking<CreateStream> stream;
  stream.name = "bench";
  if (!stream.call(broker).ok()) std::exit(1);
  const std::vector<std::byte> bytes = message();
  for (uint32_t topic = 0; topic * 1000 < partitions; ++topic) {
    Blocking<CreateTopic> create;
    create.stream = NameOrId::id(0);
    create.name = "t" + std::to_string(topic);
    create.settings.partitions_count = std::min<uint32_t>(1000, partitions - topic * 1000);
    if (!create.call(broker).ok()) std::exit(1);
    for (uint32_t p = 0; p < create.settings.partitions_count; ++p) {
      Blocking<Append> append;
      append.stream = NameOrId::id(0);
      append.topic = NameOrId::id(topic);
      append.partitioning = Partitioning{Partitioning::Kind::partition, p};
      append.messages = bytes;
      append.count = 1;
      Blocking<StoreOffset> store;
      store.consumer = {.kind = ConsumerRef::Kind::consumer, .id = 1};
      store.stream = NameOrId::id(0);
      store.topic = NameOrId::id(topic);
      store.partition = p;
      if (!append.call(broker).ok() || !store.call(broker).ok()) std::exit(1);
    }
  }
}

struct Trips {
  std::vector<double> wall;
  std::vector<double> cpu;
  void add(const Probe::Trip& trip) {
    wall.push_back(trip.wall_us);
    cpu.push_back(trip.shard_cpu_us);
  }
};

void print(const std::string& bound, std::vector<double>& scrape_ms, Trips& busy, Trips& idle) {
  const bench::Percentiles s = bench::summarize(scrape_ms);
  const bench::Percentiles wall = bench::summarize(busy.wall);
  const bench::Percentiles cpu = bench::summarize(busy.cpu);
  const bench::Percentiles idle_wall = bench::summarize(idle.wall);
  const bench::Percentiles idle_cpu = bench::summarize(idle.cpu);
  std::printf("%-5s %7.2f %7.2f | %6zu %8.1f %8.1f %8.1f %8.1f %8.1f | %7.1f %7.1f\n",
              bound.c_str(), s.p50, s.max, wall.count, wall.p50, wall.max, cpu.p50, cpu.p99,
              cpu.max, idle_wall.p50, idle_cpu.max);
}

void run(const std::string& directory, uint32_t step, uint32_t scrapes) {
  Probe probe;
  std::unique_ptr<Broker> broker = start(directory, step, probe);
  Trips idle;
  for (int i = 0; i < 1000; ++i) idle.add(probe.round_trip());
  std::atomic<bool> scraping{true};
  std::vector<double> scrape_ms;
  std::thread scraper([&] {
    for (uint32_t i = 0; i < scrapes; ++i) {
      Blocking<GetStats> stats;
      stats.limits = {.partitions = 10000, .consumers = 1000};
      const Clock::time_point begin = Clock::now();
      if (!stats.call(*broker).ok()) std::exit(1);
      scrape_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
    }
    scraping = false;
  });
  // Paced, so the probes sample the time evenly (back to back, most would land between two
  // scrapes, where they are quick, and say little about a walk).
  Trips busy;
  while (scraping.load()) {
    busy.add(probe.round_trip());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  scraper.join();
  broker->stop();
  print(step == UINT32_MAX ? "all" : std::to_string(step), scrape_ms, busy, idle);
}

}  // namespace
}  // namespace hark::core

int main(int argc, char** argv) {
  uint32_t partitions = 4000;
  uint32_t scrapes = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--smoke") {
      partitions = 64;
      scrapes = 2;
    } else if (arg == "--partitions" && i + 1 < argc) {
      partitions = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (arg == "--scrapes" && i + 1 < argc) {
      scrapes = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--partitions N] [--scrapes N] [--smoke]\n", argv[0]);
      return 2;
    }
  }
  const std::string directory = (std::filesystem::temp_directory_path() /
                                 ("hark_stats_walk_bench_" + std::to_string(::getpid())))
                                    .string();
  std::filesystem::remove_all(directory);
  {
    hark::core::Probe probe;
    auto broker = hark::core::start(directory, hark::core::stats_step_default, probe);
    hark::core::populate(*broker, partitions);
    broker->stop();
  }
  std::printf("%u partitions on one shard, 1 stored offset each; %u scrapes per bound\n",
              partitions, scrapes);
  std::printf("%-5s %7s %7s | %6s %8s %8s %8s %8s %8s | %7s %7s\n", "step", "scrape", "scrape",
              "probes", "wall", "wall", "shard", "shard", "shard", "idle", "idle");
  std::printf("%-5s %7s %7s | %6s %8s %8s %8s %8s %8s | %7s %7s\n", "", "p50 ms", "max ms", "",
              "p50 µs", "max µs", "CPU p50", "CPU p99", "CPU max", "p50 µs", "CPU max");
  for (const uint32_t step : {UINT32_MAX, 256u, 64u, 16u}) {
    hark::core::run(directory, step, scrapes);
  }
  std::filesystem::remove_all(directory);
  return 0;
}
