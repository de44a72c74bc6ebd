// Covers the wait machinery on one shard, stepped by hand with a manual clock (no sleeping):
// every rule of docs/long-polling.md that lives in core/wait — wake on commit, timeout at the
// deadline, register-then-recheck, purge and delete aborts, cancel without an answer,
// multi-partition first-commit-wins, min_messages, pool limits, zombie sweeps, an append's
// acknowledgement only after the woken poll's answer was submitted, and every Wait back in its
// pool exactly once (the WaitShard destructor asserts it).
#include "hark/core/wait/wait_shard.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "hark/io/reactor.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;

struct Outcome {
  WaitState state;
  uint64_t cookie;
  CommitPoint* winner;
  AbortReason reason;
};

struct RecordingClient final : WaitClient {
  void on_wait_done(Wait& wait, WaitState state, Registration* winner) override {
    outcomes.push_back({state, wait.cookie(), winner != nullptr ? &winner->point() : nullptr,
                        wait.abort_reason()});
  }
  std::vector<Outcome> outcomes;
};

class WaitShardTest : public ::testing::Test {
 protected:
  WaitShardTest()
      : reactor_(std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{.clock = &clock_}))
                     .value()),
        shard_(std::make_unique<WaitShard>(
            *reactor_,
            WaitShardOptions{.waits_max = 4, .registrations_max = 8, .sweep_interval = 1s})) {
    shard_->adopt(a_);
    shard_->adopt(b_);
  }
  ~WaitShardTest() override {
    shard_->release(a_, AbortReason::deleted);
    shard_->release(b_, AbortReason::deleted);
    step();
    shard_.reset();
  }

  void step(int iterations = 3) {
    for (int i = 0; i < iterations; i++) reactor_->run_once(false);
  }
  Watch watch(CommitPoint& point, uint64_t want, uint32_t min_messages = 1) {
    return Watch{&point, Offset(want), min_messages, point.snapshot().epoch};
  }
  ParkResult park(std::vector<Watch> watches, Duration wait, uint64_t cookie = 1) {
    Result<ParkResult> result =
        shard_->park(watches, clock_.monotonic_now() + wait, client_, cookie);
    EXPECT_TRUE(result.ok());
    return *result;
  }

  ManualClock clock_;
  std::unique_ptr<io::Reactor> reactor_;
  CommitPoint a_{ShardId(0)};
  CommitPoint b_{ShardId(0)};
  std::unique_ptr<WaitShard> shard_;
  RecordingClient client_;
};

TEST_F(WaitShardTest, ACommitWakesTheParkedPollWithItsPartition) {
  EXPECT_EQ(park({watch(a_, 0)}, 5s).state, WaitState::waiting);
  step();
  EXPECT_TRUE(client_.outcomes.empty());
  shard_->publish(a_, 1);
  step();
  ASSERT_EQ(client_.outcomes.size(), 1u);
  EXPECT_EQ(client_.outcomes[0].state, WaitState::notified);
  EXPECT_EQ(client_.outcomes[0].winner, &a_);
  EXPECT_EQ(shard_->counters().woken, 1u);
  EXPECT_EQ(shard_->waits_free(), 4u);
}

// A client that answers a woken poll by queueing a send on the ring (a nop stands in for it),
// and an acknowledgement that notes whether that answer was already handed to the kernel.
struct AnsweringClient final : WaitClient, io::Completion {
  void on_wait_done(Wait& /*wait*/, WaitState /*state*/, Registration* /*winner*/) override {
    reactor->ring().nop(*this);
    order.push_back('w');
  }
  void complete(int32_t /*result*/, uint32_t /*flags*/) override {}
  io::Reactor* reactor = nullptr;
  std::vector<char> order;
};

struct Acknowledgement final : io::Task {
  void run() override {
    client->order.push_back('a');
    early_submits = client->reactor->counters().early_submits;
  }
  AnsweringClient* client = nullptr;
  uint64_t early_submits = 0;
};

TEST_F(WaitShardTest, AnAcknowledgementAfterSettleRunsOnceTheWokenPollsAnswerWasSubmitted) {
  AnsweringClient answering;
  answering.reactor = reactor_.get();
  std::vector<Watch> watches = {watch(a_, 0)};
  ASSERT_TRUE(shard_->park(watches, clock_.monotonic_now() + 5s, answering, 1).ok());
  step();
  Acknowledgement ack;
  ack.client = &answering;
  shard_->publish(a_, 1);
  shard_->after_settle(ack);
  reactor_->run_once(false);  // The commit's iteration: wake, answer, then the acknowledgement.
  EXPECT_EQ(answering.order, (std::vector<char>{'w', 'a'}));
  EXPECT_EQ(ack.early_submits, 1u) << "the answer was not submitted before the acknowledgement";
  step();  // The nop's completion.
}

TEST_F(WaitShardTest, ACommitBelowWantWakesNobody) {
  park({watch(a_, 5)}, 5s);
  shard_->publish(a_, 5);  // Offsets 0..4 committed; the poll wants offset 5.
  step();
  EXPECT_TRUE(client_.outcomes.empty());
  shard_->publish(a_, 6);
  step();
  EXPECT_EQ(client_.outcomes.size(), 1u);
}

TEST_F(WaitShardTest, MinMessagesWaitsForEnough) {
  park({watch(a_, 0, 3)}, 5s);
  shard_->publish(a_, 2);
  step();
  EXPECT_TRUE(client_.outcomes.empty());
  shard_->publish(a_, 3);
  step();
  EXPECT_EQ(client_.outcomes.size(), 1u);
}

TEST_F(WaitShardTest, TimeoutAnswersAtTheDeadlineNotBefore) {
  park({watch(a_, 0)}, 100ms);
  clock_.advance(99ms);
  step();
  EXPECT_TRUE(client_.outcomes.empty());
  clock_.advance(2ms);
  step();
  ASSERT_EQ(client_.outcomes.size(), 1u);
  EXPECT_EQ(client_.outcomes[0].state, WaitState::timed_out);
  // The registration is still on the partition: the Wait returns to the pool after the sweep.
  EXPECT_EQ(shard_->waits_free(), 3u);
  clock_.advance(1s);
  step();
  EXPECT_EQ(shard_->waits_free(), 4u);
  EXPECT_EQ(shard_->counters().zombies_swept, 1u);
}

TEST_F(WaitShardTest, ACommitBetweenEvaluationAndParkIsCaughtByTheRecheck) {
  const Watch seen = watch(a_, 0);  // The poll evaluated: nothing at offset 0.
  shard_->publish(a_, 1);           // A commit lands before the poll parks.
  Result<ParkResult> result = shard_->park({&seen, 1}, clock_.monotonic_now() + 5s, client_, 1);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->state, WaitState::notified);
  step();
  EXPECT_TRUE(client_.outcomes.empty());  // The caller answers a ready park itself.
  EXPECT_EQ(shard_->waits_free(), 4u);
}

TEST_F(WaitShardTest, PurgeAbortsParkedPolls) {
  shard_->publish(a_, 3);
  step();
  park({watch(a_, 3)}, 5s);
  shard_->reset(a_, 0);
  step();
  ASSERT_EQ(client_.outcomes.size(), 1u);
  EXPECT_EQ(client_.outcomes[0].state, WaitState::aborted);
  EXPECT_EQ(client_.outcomes[0].reason, AbortReason::purged);
}

TEST_F(WaitShardTest, APurgeBetweenEvaluationAndParkAbortsAtOnce) {
  const Watch seen = watch(a_, 0);
  shard_->reset(a_, 0);
  Result<ParkResult> result = shard_->park({&seen, 1}, clock_.monotonic_now() + 5s, client_, 1);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->state, WaitState::aborted);
  EXPECT_EQ(result->wait->abort_reason(), AbortReason::purged);
  step();
}

TEST_F(WaitShardTest, DeleteAbortsWithItsReason) {
  CommitPoint doomed{ShardId(0)};
  shard_->adopt(doomed);
  park({watch(doomed, 0)}, 5s);
  shard_->release(doomed, AbortReason::deleted);
  step();
  ASSERT_EQ(client_.outcomes.size(), 1u);
  EXPECT_EQ(client_.outcomes[0].reason, AbortReason::deleted);
}

TEST_F(WaitShardTest, CancelledPollsAreNeverAnswered) {
  ParkResult parked = park({watch(a_, 0)}, 100ms);
  shard_->cancel(*parked.wait);
  shard_->publish(a_, 1);
  clock_.advance(2s);
  step();
  EXPECT_TRUE(client_.outcomes.empty());
  EXPECT_EQ(shard_->counters().cancelled, 1u);
  EXPECT_EQ(shard_->waits_free(), 4u);
}

TEST_F(WaitShardTest, TheFirstPartitionToCommitWinsAMultiPartitionWait) {
  park({watch(a_, 0), watch(b_, 0)}, 5s);
  shard_->publish(b_, 1);
  step();
  shard_->publish(a_, 1);
  step();
  ASSERT_EQ(client_.outcomes.size(), 1u);
  EXPECT_EQ(client_.outcomes[0].winner, &b_);
  EXPECT_EQ(shard_->waits_free(), 4u);
  EXPECT_EQ(shard_->registrations_free(), 8u);
}

TEST_F(WaitShardTest, AFullPoolRejectsWithAnIggyCode) {
  for (int i = 0; i < 4; i++) park({watch(a_, 0)}, 5s, static_cast<uint64_t>(i));
  Watch one = watch(a_, 0);
  Result<ParkResult> full = shard_->park({&one, 1}, clock_.monotonic_now() + 5s, client_, 9);
  EXPECT_EQ(full.error(), Error::feature_unavailable);
  EXPECT_EQ(shard_->counters().rejected_full, 1u);
  shard_->publish(a_, 1);
  step();
  EXPECT_EQ(client_.outcomes.size(), 4u);
}

TEST_F(WaitShardTest, OneCommitWakesEveryWaiterOnce) {
  for (int i = 0; i < 4; i++) park({watch(a_, 0)}, 5s, static_cast<uint64_t>(i));
  shard_->publish(a_, 1);
  shard_->publish(a_, 2);  // Two commits in one iteration coalesce into one settle.
  step();
  ASSERT_EQ(client_.outcomes.size(), 4u);
  std::vector<bool> seen(4, false);
  for (const Outcome& outcome : client_.outcomes) {
    EXPECT_FALSE(seen[outcome.cookie]);
    seen[outcome.cookie] = true;
  }
}

TEST_F(WaitShardTest, ShutdownAbortsEverything) {
  park({watch(a_, 0)}, 5s, 1);
  park({watch(b_, 0)}, 5s, 2);
  shard_->abort_all(AbortReason::shutdown);
  step();
  ASSERT_EQ(client_.outcomes.size(), 2u);
  EXPECT_EQ(client_.outcomes[0].reason, AbortReason::shutdown);
}

}  // namespace
}  // namespace hark::core
