// Proves the wait path allocates nothing in steady state: a poll parked on shard 0 is woken
// by commits on shard 1 (park -> commit -> settle -> hand-back -> answer -> park again), and
// after a warm-up the count of operator new calls over all threads stays at zero. Runs in the
// plain release build only (the sanitizers replace the allocator).
#include <atomic>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "hark/core/wait/wait_shard.h"
#include "hark/io/shard_group.h"
#include "hark/tests/support/counting_allocator.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;

// Shard 0: parks on the partition and parks again after each answer.
struct Consumer final : WaitClient, io::Task {
  void on_wait_done(Wait&, WaitState state, Registration*) override {
    if (state != WaitState::notified) return;  // Shutdown: stay unparked.
    // Park again before telling the test thread, whose next commit must find us parked
    // (otherwise the new poll would want the offset after that commit and wait forever).
    park();
    answers.fetch_add(1, std::memory_order_release);
  }
  void run() override {  // First park, on shard 0.
    park();
    started.store(true, std::memory_order_release);
  }
  void park() {
    const CommitSnapshot seen = point->snapshot();
    const Watch watch{point, Offset(seen.next_offset), 1, seen.epoch};
    Result<ParkResult> parked =
        shard->park({&watch, 1}, reactor->clock().monotonic_now() + 1h, *this, 1);
    HARK_ASSERT(parked.ok());
    if (parked->state != WaitState::waiting) park();
  }
  io::Reactor* reactor = nullptr;
  WaitShard* shard = nullptr;
  CommitPoint* point = nullptr;
  std::atomic<uint64_t> answers{0};
  std::atomic<bool> started{false};
};

// Shard 1: one commit per run.
struct Producer final : io::Task {
  void run() override { shard->publish(*point, point->snapshot().next_offset + 1); }
  WaitShard* shard = nullptr;
  CommitPoint* point = nullptr;
};

struct TwoShards final : io::ShardSetup {
  Status on_start(io::Reactor& reactor) override {
    shards[reactor.id().value()] = std::make_unique<WaitShard>(reactor, WaitShardOptions{});
    if (reactor.id() == point.owner()) shards[reactor.id().value()]->adopt(point);
    reactors[reactor.id().value()] = &reactor;
    return ok_status();
  }
  void on_stop(io::Reactor& reactor) override {
    if (reactor.id() == point.owner()) {
      shards[reactor.id().value()]->release(point, AbortReason::shutdown);
    }
  }
  // Asserts every Wait and Registration came home.
  void on_drained(io::Reactor& reactor) override { shards[reactor.id().value()].reset(); }
  CommitPoint point{ShardId(1)};
  std::unique_ptr<WaitShard> shards[2];
  io::Reactor* reactors[2] = {nullptr, nullptr};
};

TEST(WaitAllocation, ParkCommitWakeHandBackAllocatesNothingAfterWarmUp) {
  if (!test::counting_allocator_active()) GTEST_SKIP() << "sanitizer build: allocator replaced";
  const uint64_t probe_before = test::allocations_count();
  auto probe = std::make_unique<int>(1);
  ASSERT_GT(test::allocations_count(), probe_before) << "the counting allocator is not linked";
  TwoShards setup;
  auto group =
      std::move(io::ShardGroup::start(io::ShardGroupOptions{.shards_count = 2}, &setup)).value();
  Consumer consumer;
  consumer.reactor = setup.reactors[0];
  consumer.shard = setup.shards[0].get();
  consumer.point = &setup.point;
  Producer producer;
  producer.shard = setup.shards[1].get();
  producer.point = &setup.point;
  group->post(ShardId(0), consumer);
  while (!consumer.started.load(std::memory_order_acquire)) std::this_thread::yield();

  const auto give_up = std::chrono::steady_clock::now() + 60s;
  auto cycle = [&](uint64_t count) {
    for (uint64_t i = 0; i < count && std::chrono::steady_clock::now() < give_up; i++) {
      const uint64_t before = consumer.answers.load(std::memory_order_acquire);
      group->post(ShardId(1), producer);
      while (consumer.answers.load(std::memory_order_acquire) == before &&
             std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
    }
  };
  cycle(1000);  // Warm-up: heaps, outboxes and the timer wheel reach their sizes.
  const uint64_t before = test::allocations_count();
  cycle(2000);
  const uint64_t allocations = test::allocations_count() - before;
  group->stop();
  EXPECT_EQ(consumer.answers.load(), 3000u);
  EXPECT_EQ(allocations, 0u) << "allocations in 2000 park/commit/wake cycles";
}

}  // namespace
}  // namespace hark::core
