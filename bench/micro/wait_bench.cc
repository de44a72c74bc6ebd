// Google Benchmark figures for the wait machinery (core/wait):
//   BM_wait_commit_no_waiters        publish + end-of-iteration settle, nobody parked
//   BM_wait_park_wake_same_shard     park, commit, settle, hand-back, answer: one shard
//   BM_wait_commit_wakes/K           K polls parked on shard 0, one commit on shard 1; time
//                                    from the commit to the K-th answer (Time) and to the
//                                    first (first_answer_us), shard CPU per woken waiter,
//                                    eventfd writes per commit
//   BM_metrics_latency_record        what a commit or a wake adds for /metrics: one
//                                    monotonic clock read (through the reactor's Clock) and
//                                    one LatencyHistogram::record
// Every benchmark reports allocs_per_op from the counting allocator.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "hark/core/wait/wait_shard.h"
#include "hark/io/shard_group.h"
#include "hark/tests/support/counting_allocator.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;

struct NullClient final : WaitClient {
  void on_wait_done(Wait&, WaitState, Registration*) override { answers++; }
  uint64_t answers = 0;
};

void report_allocations(benchmark::State& state, uint64_t before) {
  state.counters["allocs_per_op"] =
      benchmark::Counter(static_cast<double>(test::allocations_count() - before) /
                         static_cast<double>(state.iterations()));
}

void BM_wait_commit_no_waiters(benchmark::State& state) {
  auto reactor = std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{})).value();
  CommitPoint point{ShardId(0)};
  {
    WaitShard shard(*reactor, WaitShardOptions{.waits_max = 16, .registrations_max = 16});
    shard.adopt(point);
    uint64_t next = 0;
    const uint64_t before = test::allocations_count();
    for (auto _ : state) {
      shard.publish(point, ++next);
      shard.on_iteration_end();
    }
    report_allocations(state, before);
    state.SetItemsProcessed(state.iterations());
    shard.release(point, AbortReason::shutdown);
  }
}
BENCHMARK(BM_wait_commit_no_waiters);

void BM_wait_park_wake_same_shard(benchmark::State& state) {
  auto reactor = std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{})).value();
  CommitPoint point{ShardId(0)};
  NullClient client;
  {
    WaitShard shard(*reactor, WaitShardOptions{.waits_max = 16, .registrations_max = 16});
    shard.adopt(point);
    uint64_t next = 0;
    const Instant far = reactor->clock().monotonic_now() + 1h;
    const uint64_t before = test::allocations_count();
    for (auto _ : state) {
      const Watch watch{&point, Offset(next), 1, 0};
      benchmark::DoNotOptimize(shard.park({&watch, 1}, far, client, 1));
      shard.publish(point, ++next);
      reactor->run_once(false);  // Settle: the hand-back is posted to this shard...
      reactor->run_once(false);  // ...and answered here.
    }
    report_allocations(state, before);
    state.SetItemsProcessed(state.iterations());
    shard.release(point, AbortReason::shutdown);
    reactor->run_once(false);
    reactor->run_once(false);
  }
}
BENCHMARK(BM_wait_park_wake_same_shard);

// Shard 0 parks K polls; shard 1 owns the partition and commits.
struct FanoutSetup final : io::ShardSetup, WaitClient {
  Status on_start(io::Reactor& reactor) override {
    shards[reactor.id().value()] = std::make_unique<WaitShard>(reactor, WaitShardOptions{});
    reactors[reactor.id().value()] = &reactor;
    if (reactor.id() == point.owner()) shards[1]->adopt(point);
    return ok_status();
  }
  void on_stop(io::Reactor& reactor) override {
    if (reactor.id() == point.owner()) shards[1]->release(point, AbortReason::shutdown);
  }
  void on_drained(io::Reactor& reactor) override { shards[reactor.id().value()].reset(); }
  void on_wait_done(Wait&, WaitState state, Registration*) override {
    if (state != WaitState::notified) return;
    if (first_answer_ns.load(std::memory_order_relaxed) == 0) {
      first_answer_ns.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                            std::memory_order_relaxed);
    }
    answered.fetch_add(1, std::memory_order_release);
  }

  CommitPoint point{ShardId(1)};
  std::unique_ptr<WaitShard> shards[2];
  io::Reactor* reactors[2] = {nullptr, nullptr};
  std::atomic<uint64_t> answered{0};
  std::atomic<int64_t> first_answer_ns{0};
};

struct ParkMany final : io::Task {
  void run() override {
    const CommitSnapshot seen = setup->point.snapshot();
    const Watch watch{&setup->point, Offset(seen.next_offset), 1, seen.epoch};
    const Instant far = setup->reactors[0]->clock().monotonic_now() + 1h;
    for (int64_t i = 0; i < count; i++) {
      benchmark::DoNotOptimize(setup->shards[0]->park({&watch, 1}, far, *setup, 1));
    }
    done.store(true, std::memory_order_release);
  }
  FanoutSetup* setup = nullptr;
  int64_t count = 0;
  std::atomic<bool> done{false};
};

struct CommitOne final : io::Task {
  void run() override {
    setup->shards[1]->publish(setup->point, setup->point.snapshot().next_offset + 1);
  }
  FanoutSetup* setup = nullptr;
};

void BM_wait_commit_wakes(benchmark::State& state) {
  const int64_t waiters = state.range(0);
  FanoutSetup setup;
  auto group =
      std::move(io::ShardGroup::start(io::ShardGroupOptions{.shards_count = 2}, &setup)).value();
  ParkMany park;
  park.setup = &setup;
  park.count = waiters;
  CommitOne commit;
  commit.setup = &setup;
  Duration cpu{0};
  double first_answer_us = 0;
  const uint64_t writes_before = setup.reactors[1]->counters().wakes_sent;
  for (auto _ : state) {
    park.done.store(false);
    group->post(ShardId(0), park);
    while (!park.done.load(std::memory_order_acquire)) std::this_thread::yield();
    std::this_thread::sleep_for(200us);  // Both shards asleep: the wake is cross-core.
    const uint64_t target = setup.answered.load() + static_cast<uint64_t>(waiters);
    const Duration cpu_before = group->cpu_time(ShardId(0)) + group->cpu_time(ShardId(1));
    setup.first_answer_ns.store(0);
    const auto start = std::chrono::steady_clock::now();
    group->post(ShardId(1), commit);
    while (setup.answered.load(std::memory_order_acquire) < target) {
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    first_answer_us +=
        static_cast<double>(setup.first_answer_ns.load() - start.time_since_epoch().count()) /
        1000.0;
    cpu += group->cpu_time(ShardId(0)) + group->cpu_time(ShardId(1)) - cpu_before;
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
  }
  const auto woken = static_cast<double>(state.iterations() * waiters);
  state.counters["cpu_us_per_woken"] =
      std::chrono::duration<double, std::micro>(cpu).count() / woken;
  state.counters["first_answer_us"] = first_answer_us / static_cast<double>(state.iterations());
  state.counters["eventfd_per_commit"] =
      static_cast<double>(setup.reactors[1]->counters().wakes_sent - writes_before) /
      static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(woken));
  group->stop();
}
BENCHMARK(BM_wait_commit_wakes)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->UseManualTime();

void BM_metrics_latency_record(benchmark::State& state) {
  Clock& clock = SystemClock::instance();
  LatencyHistogram histogram;
  const Instant start = clock.monotonic_now();
  for (auto _ : state) histogram.record(clock.monotonic_now() - start);
  benchmark::DoNotOptimize(histogram);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_metrics_latency_record);

}  // namespace
}  // namespace hark::core

BENCHMARK_MAIN();
