// The fault test's history checker (tests/cluster/history.h) on synthetic histories, no
// processes: a history that keeps every promise passes, and each kind of violation is reported
// (a lost acknowledged send, a payload stored twice, a gap in a log, a payload nobody sent, a
// send stored in another partition, a poll that saw what the final read does not hold at that
// offset, a poll whose answer skips offsets, a poll answered late, never or twice), while what
// is allowed is not (an unacknowledged send stored once or not at all, a poll the client gave
// up on before its deadline, a poll late only by a pause of the node it waited on).
// Label unit: every stage.
#include "history.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using Outcome = History::Outcome;
using Message = History::Message;

constexpr std::chrono::milliseconds slack = 1s;

class HistoryTest : public ::testing::Test {
 protected:
  // A time `ms` milliseconds into the history.
  History::Clock::time_point t(int ms) const { return start_ + std::chrono::milliseconds(ms); }

  void send(uint32_t partition, const std::string& payload, Outcome outcome, int at_ms = 0) {
    const size_t id = history_.invoke_send(1, 1, partition, payload, t(at_ms));
    history_.complete_send(id, outcome, outcome == Outcome::error ? 11001 : 0, t(at_ms + 5));
  }

  size_t poll(uint32_t partition, uint64_t from, std::vector<Message> messages, int at_ms = 0,
              int took_ms = 10) {
    const size_t id = history_.invoke_poll(2, 2, partition, from, 500ms, t(at_ms));
    history_.complete_poll(id, Outcome::ok, 0, std::move(messages), t(at_ms + took_ms));
    return id;
  }

  // The violations, with one that starts with `kind` expected among them.
  ::testing::AssertionResult reports(const std::string& kind) {
    const std::vector<std::string> found = history_.check(slack);
    for (const std::string& violation : found) {
      if (violation.rfind(kind, 0) == 0) return ::testing::AssertionSuccess() << violation;
    }
    ::testing::AssertionResult failure = ::testing::AssertionFailure();
    failure << "no \"" << kind << "\" among " << found.size() << " violations:";
    for (const std::string& violation : found) failure << "\n  " << violation;
    return failure;
  }

  // A passing base: partition 0 holds a0, a1, u0 (an unacknowledged send that was stored);
  // partition 1 holds b0; u1 failed and is absent.
  void passing_history() {
    send(0, "a0", Outcome::ok);
    send(0, "a1", Outcome::ok, 10);
    send(0, "u0", Outcome::lost, 20);
    send(0, "u1", Outcome::error, 30);
    send(0, "u2", Outcome::timed_out, 40);
    send(1, "b0", Outcome::ok, 50);
    poll(0, 0, {{0, "a0"}, {1, "a1"}}, 60);
    poll(0, 2, {{2, "u0"}}, 70);
    poll(1, 0, {}, 80, 505);  // Empty at its deadline.
    history_.final_read(0, {{0, "a0"}, {1, "a1"}, {2, "u0"}});
    history_.final_read(1, {{0, "b0"}});
  }

  History::Clock::time_point start_ = History::Clock::now();
  History history_{start_};
};

TEST_F(HistoryTest, AHistoryThatKeepsEveryPromisePasses) {
  passing_history();
  EXPECT_EQ(history_.check(slack), std::vector<std::string>{});
  const History::Summary summary = history_.summary();
  EXPECT_EQ(summary.sends, 6u);
  EXPECT_EQ(summary.acknowledged, 3u);
  EXPECT_EQ(summary.lost, 0u);
  EXPECT_EQ(summary.duplicates, 0u);
  EXPECT_EQ(summary.polls, 3u);
  EXPECT_EQ(summary.polled_messages, 3u);
}

TEST_F(HistoryTest, AnAcknowledgedSendMissingFromTheFinalReadIsLost) {
  send(0, "a0", Outcome::ok);
  send(0, "a1", Outcome::ok);
  history_.final_read(0, {{0, "a0"}});
  EXPECT_TRUE(reports("lost: send a1 to partition 0"));
  EXPECT_EQ(history_.summary().lost, 1u);
  EXPECT_NE(history_.excerpt("a1").find("send a1"), std::string::npos);
}

TEST_F(HistoryTest, AnAcknowledgedSendOfAPartitionNeverReadIsLost) {
  send(2, "c0", Outcome::ok);
  EXPECT_TRUE(reports("lost: send c0 to partition 2"));
}

TEST_F(HistoryTest, APayloadStoredTwiceIsADuplicateAcknowledgedOrNot) {
  send(0, "a0", Outcome::ok);
  send(0, "u0", Outcome::lost);
  history_.final_read(0, {{0, "a0"}, {1, "u0"}, {2, "u0"}});
  EXPECT_TRUE(reports("duplicate: u0 is stored 2 times"));
  EXPECT_EQ(history_.summary().duplicates, 1u);
}

TEST_F(HistoryTest, OffsetsThatAreNotDenseAreAGap) {
  send(0, "a0", Outcome::ok);
  send(0, "a1", Outcome::ok);
  history_.final_read(0, {{0, "a0"}, {2, "a1"}});
  EXPECT_TRUE(reports("gap: the final read of partition 0 has offset 2 at position 1"));
}

TEST_F(HistoryTest, APayloadNobodySentIsAPhantom) {
  send(0, "a0", Outcome::ok);
  history_.final_read(0, {{0, "a0"}, {1, "zz"}});
  EXPECT_TRUE(reports("phantom: zz"));
}

TEST_F(HistoryTest, ASendStoredInAnotherPartitionAsWellIsMisplaced) {
  send(0, "a0", Outcome::ok);
  history_.final_read(0, {{0, "a0"}});
  history_.final_read(1, {{0, "a0"}});
  EXPECT_TRUE(reports("misplaced: send a0"));
}

TEST_F(HistoryTest, APollThatSawAMessageTheFinalReadLacksIsAnUnstableRead) {
  send(0, "a0", Outcome::ok);
  send(0, "u0", Outcome::lost);
  // The poll saw u0 at offset 1, which a new leader then lost: served before a quorum held it.
  poll(0, 0, {{0, "a0"}, {1, "u0"}});
  history_.final_read(0, {{0, "a0"}});
  EXPECT_TRUE(reports("unstable read: poll of partition 0 from 0"));
}

TEST_F(HistoryTest, APollThatSawAMessageAtAnotherOffsetIsAnUnstableRead) {
  send(0, "a0", Outcome::ok);
  send(0, "u0", Outcome::lost);
  send(0, "a1", Outcome::ok);
  poll(0, 1, {{1, "u0"}});
  history_.final_read(0, {{0, "a0"}, {1, "a1"}, {2, "u0"}});  // u0 moved to offset 2.
  EXPECT_TRUE(reports("unstable read: poll of partition 0 from 1"));
}

// The isolation cycle's shape (tests/cluster/replication_faults_test.cc): an isolated leader
// served a send it alone held; the new leader gave its offset to another send.
TEST_F(HistoryTest, APollThatSawASendNeverStoredWhoseOffsetAnotherTookIsAnUnstableRead) {
  send(0, "a0", Outcome::ok);
  send(0, "isolated", Outcome::lost);
  send(0, "a1", Outcome::ok);
  poll(0, 1, {{1, "isolated"}});
  history_.final_read(0, {{0, "a0"}, {1, "a1"}});
  EXPECT_TRUE(reports("unstable read: poll of partition 0 from 1"));
  EXPECT_EQ(history_.summary().lost, 0u);  // No acknowledged send is lost: only the read shows it.
}

TEST_F(HistoryTest, APollWhoseAnswerSkipsOffsetsIsAGap) {
  send(0, "a0", Outcome::ok);
  send(0, "a1", Outcome::ok);
  poll(0, 0, {{1, "a1"}});
  history_.final_read(0, {{0, "a0"}, {1, "a1"}});
  EXPECT_TRUE(reports("gap: poll of partition 0 from 0"));
}

TEST_F(HistoryTest, APollAnsweredPastItsWaitAndTheSlackIsLate) {
  poll(0, 0, {}, 0, 500 + 1000 + 1);
  history_.final_read(0, {});
  EXPECT_TRUE(reports("late poll"));
}

TEST_F(HistoryTest, APollTheClientGaveUpOnPastItsAllowanceIsLateAndBeforeItIsNot) {
  const size_t waited = history_.invoke_poll(2, 2, 0, 0, 500ms, t(0));
  history_.complete_poll(waited, Outcome::timed_out, 12001, {}, t(5500));
  history_.final_read(0, {});
  EXPECT_TRUE(reports("late poll"));

  History early{start_};
  const size_t gave_up = early.invoke_poll(2, 2, 0, 0, 500ms, t(0));
  early.complete_poll(gave_up, Outcome::timed_out, 12001, {}, t(1000));
  early.final_read(0, {});
  EXPECT_EQ(early.check(slack), std::vector<std::string>{});
}

TEST_F(HistoryTest, APollLateOnlyByANodesPauseIsNotLate) {
  history_.pause(3, t(100), t(3100));
  poll(0, 0, {}, 0, 500 + 3000 + 900);
  history_.final_read(0, {});
  EXPECT_EQ(history_.check(slack), std::vector<std::string>{});
  poll(0, 0, {}, 0, 500 + 3000 + 1100);  // Past the pause too.
  EXPECT_TRUE(reports("late poll"));
}

TEST_F(HistoryTest, APollNeverAnsweredOrAnsweredTwiceIsReported) {
  history_.invoke_poll(2, 2, 0, 0, 500ms, t(0));
  history_.final_read(0, {});
  EXPECT_TRUE(reports("unanswered poll"));
  History twice{start_};
  const size_t id = twice.invoke_poll(2, 2, 0, 0, 500ms, t(0));
  twice.complete_poll(id, Outcome::ok, 0, {}, t(10));
  twice.complete_poll(id, Outcome::ok, 0, {}, t(20));
  twice.final_read(0, {});
  const std::vector<std::string> found = twice.check(slack);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("completed 2 times"), std::string::npos) << found[0];
}

TEST_F(HistoryTest, ASendNeverCompletedIsReported) {
  history_.invoke_send(1, 1, 0, "a0", t(0));
  history_.final_read(0, {});
  EXPECT_TRUE(reports("unanswered send"));
}

}  // namespace
}  // namespace hark::test
