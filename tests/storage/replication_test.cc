// Covers a replicated PartitionLog (docs/cluster.md §Replication, Built: the core side): the
// commit point is quorum_end() of the members' durable ends — a send is acknowledged, and the
// CommitListener (which wakes parked polls) told, only once a second replica's durable end
// passes it, never at the leader's own write; a follower reads the leader up to its appended end
// (ReadBound::appended), stores the bytes with append_stored, answers at its own durable end and
// commits only up to the leader's commit point it learned; truncation cuts memory and files (a
// restart recovers the truncated log); the commit point never goes back. A rapidcheck property
// drives random interleavings of appends, writes, fetches and reports on three logs, each on its
// own MemoryDisk (nothing sleeps: each write completes when the test drives its disk). The
// mutants HARK_MUTANT_ACK_AT_LOCAL_WRITE and HARK_MUTANT_WAKE_AT_LOCAL_WRITE must fail here.
#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

// What the CommitListener heard: the wake-ups of parked polls.
struct Told final : CommitListener {
  void commit_advanced(Offset next_offset) override { told.push_back(next_offset); }
  std::vector<Offset> told;
};

LogOptions options_for(Durability durability) {
  LogOptions options;
  options.durability = durability;
  options.segment_bytes_max = 1000;
  options.chunk_bytes = 512;
  return options;
}

// A leader and two followers, each on its own disk; the test is the link between them.
struct Replicas {
  explicit Replicas(Durability durability = Durability::write)
      : leader(options_for(durability)),
        followers{LogHarness(options_for(durability)), LogHarness(options_for(durability))} {
    leader.reopen();
    leader.log().set_commit_listener(&listener);
    EXPECT_TRUE(leader.log().lead(3).ok());
    for (LogHarness& follower : followers) follower.reopen().follow();
  }
  ~Replicas() { leader.log().set_commit_listener(nullptr); }

  Offset append(uint32_t count, size_t padding = 0) {
    const Result<AppendResult> appended =
        leader.log().append(make_batch(count, "m", padding), count);
    EXPECT_TRUE(appended.ok());
    return appended->first + count;
  }
  // Follower i's fetch: what the leader appended from the follower's end, stored, not yet
  // written. Returns how many messages it took.
  uint32_t fetch(size_t i) {
    PartitionLog& follower = followers[i].log();
    ReadCollector read;
    leader.log().read(follower.appended_end(), 1000, 1 << 20, read, ReadBound::appended);
    while (read.calls == 0 && leader.disk.pending() > 0) leader.disk.drive();
    EXPECT_EQ(read.error, Error::ok);
    if (read.count == 0) return 0;
    EXPECT_TRUE(follower.append_stored(read.held.bytes(), read.count).ok());
    return read.count;
  }
  // Follower i's next fetch, which tells the leader its durable end and learns the commit point.
  Status report(size_t i) {
    PartitionLog& follower = followers[i].log();
    HARK_TRY(leader.log().report_durable(static_cast<uint32_t>(i + 1), follower.durable_end()));
    follower.learn_commit(leader.log().next_offset());
    return ok_status();
  }

  LogHarness leader;
  std::array<LogHarness, 2> followers;
  Told listener;
};

TEST(QuorumEnd, IsTheMajoritysEndNeverPastTheLeaders) {
  const auto end = [](std::vector<uint64_t> ends) {
    std::vector<Offset> offsets;
    for (const uint64_t value : ends) offsets.emplace_back(value);
    return quorum_end(offsets).value();
  };
  EXPECT_EQ(end({5}), 5u);        // Factor 1: the log's own durable end.
  EXPECT_EQ(end({5, 3, 0}), 3u);  // The leader and one follower hold 3.
  EXPECT_EQ(end({5, 0, 0}), 0u);  // The leader alone is no majority.
  EXPECT_EQ(end({2, 9, 9}), 2u);  // Followers alone never commit past the leader.
  EXPECT_EQ(end({9, 7, 0, 3, 5}), 5u);
  EXPECT_EQ(end({4, 4}), 4u);  // Two members: both.
  EXPECT_EQ(end({4, 1}), 1u);
}

TEST(ReplicatedLog, ASendIsAcknowledgedOnlyOnceASecondReplicaHoldsIt) {
  Replicas replicas;
  PartitionLog& leader = replicas.leader.log();
  const Offset end = replicas.append(3);
  CommitCollector sent;
  leader.when_committed(end, sent);
  replicas.leader.disk.drive_all();
  EXPECT_EQ(leader.durable_end(), end);  // The leader's own write is done ...
  EXPECT_EQ(sent.calls, 0);              // ... which acknowledges nothing.
  EXPECT_EQ(replicas.fetch(0), 3u);
  ASSERT_TRUE(replicas.report(0).ok());  // Not durable on the follower yet: its end is 0.
  EXPECT_EQ(sent.calls, 0);
  replicas.followers[0].disk.drive_all();
  ASSERT_TRUE(replicas.report(0).ok());
  EXPECT_EQ(sent.calls, 1);
  EXPECT_EQ(sent.error, Error::ok);
}

TEST(ReplicatedLog, ConsumersAreToldOnlyOnceASecondReplicaHoldsIt) {
  Replicas replicas;
  PartitionLog& leader = replicas.leader.log();
  const Offset end = replicas.append(3);
  replicas.leader.disk.drive_all();
  EXPECT_EQ(leader.durable_end(), end);         // The leader's own write is done ...
  EXPECT_TRUE(replicas.listener.told.empty());  // ... which wakes nobody
  EXPECT_EQ(leader.next_offset(), Offset(0));   // and serves nothing to consumers.
  EXPECT_EQ(replicas.leader.read(Offset(0)).count, 0u);
  EXPECT_EQ(replicas.fetch(1), 3u);
  replicas.followers[1].disk.drive_all();
  ASSERT_TRUE(replicas.report(1).ok());
  EXPECT_EQ(replicas.listener.told, std::vector<Offset>{end});
  EXPECT_EQ(replicas.leader.read(Offset(0)).count, 3u);
}

TEST(ReplicatedLog, FollowersAloneCommitNothingTheLeaderHasNotWritten) {
  Replicas replicas(Durability::always);
  PartitionLog& leader = replicas.leader.log();
  const Offset end = replicas.append(2);
  CommitCollector sent;
  leader.when_committed(end, sent);
  for (size_t i = 0; i < 2; i++) {
    ASSERT_EQ(replicas.fetch(i), 2u);  // Read before the leader's write: the appended end.
    replicas.followers[i].disk.drive_all();
    ASSERT_TRUE(replicas.report(i).ok());
  }
  EXPECT_EQ(leader.durable_end(), Offset(0));
  EXPECT_EQ(sent.calls, 0);
  EXPECT_EQ(leader.next_offset(), Offset(0));
  replicas.leader.disk.drive_all();
  EXPECT_EQ(sent.calls, 1);
  EXPECT_EQ(leader.next_offset(), end);
}

TEST(ReplicatedLog, AFollowerAnswersAtItsDurableEndAndCommitsAtTheLeaders) {
  Replicas replicas;
  replicas.append(4);
  ASSERT_EQ(replicas.fetch(0), 4u);
  PartitionLog& follower = replicas.followers[0].log();
  CommitCollector stored;
  follower.when_durable(Offset(4), stored);
  EXPECT_EQ(stored.calls, 0);
  replicas.followers[0].disk.drive_all();
  EXPECT_EQ(stored.calls, 1);  // Durable here: the fetcher may report it.
  EXPECT_EQ(follower.durable_end(), Offset(4));
  EXPECT_EQ(follower.next_offset(), Offset(0));  // Not committed: the leader said nothing yet.
  EXPECT_EQ(replicas.followers[0].read(Offset(0)).count, 0u);
  replicas.leader.disk.drive_all();
  ASSERT_TRUE(replicas.report(0).ok());  // The answer to the follower's next fetch carries it.
  EXPECT_EQ(replicas.leader.log().next_offset(), Offset(4));
  EXPECT_EQ(follower.next_offset(), Offset(4));
  EXPECT_EQ(replicas.followers[0].read(Offset(0)).count, 4u);
}

TEST(ReplicatedLog, AReportPastTheAppendedEndOrFromNoMemberIsRefused) {
  Replicas replicas;
  replicas.append(2);
  EXPECT_EQ(replicas.leader.log().report_durable(1, Offset(3)).error(), Error::invalid_offset);
  EXPECT_EQ(replicas.leader.log().report_durable(3, Offset(1)).error(),
            Error::invalid_replication_factor);
  EXPECT_EQ(replicas.leader.log().report_durable(0, Offset(1)).error(),
            Error::invalid_replication_factor);
  EXPECT_EQ(replicas.leader.log().lead(PartitionLog::replicas_max + 1).error(),
            Error::invalid_replication_factor);
}

TEST(ReplicatedLog, TheCommitPointNeverGoesBack) {
  LogHarness harness(options_for(Durability::write));
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(2, "a"), 2).ok());
  harness.disk.drive_all();
  ASSERT_EQ(log.next_offset(), Offset(2));  // Factor 1: committed at its own write.
  ASSERT_TRUE(log.lead(3).ok());            // Followers at 0: the rule says 0, the point holds.
  EXPECT_EQ(log.next_offset(), Offset(2));
  ASSERT_TRUE(log.append(make_batch(1, "b"), 1).ok());
  harness.disk.drive_all();
  EXPECT_EQ(log.next_offset(), Offset(2));
  ASSERT_TRUE(log.report_durable(2, Offset(3)).ok());
  EXPECT_EQ(log.next_offset(), Offset(3));
  ASSERT_TRUE(log.report_durable(2, Offset(1)).ok());  // A late, lower report changes nothing.
  EXPECT_EQ(log.next_offset(), Offset(3));
  ASSERT_TRUE(log.lead(1).ok());
  EXPECT_EQ(log.next_offset(), Offset(3));
}

// The in-sync set (docs/cluster.md §Replication, The data path): the commit waits for every
// in-sync member as well as a majority, so a new leader chosen from the set holds it all.
TEST(ReplicatedLog, TheCommitWaitsForEveryInSyncMemberAndAMajority) {
  LogHarness harness(options_for(Durability::write));
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.lead(3).ok());
  log.set_in_sync(0b111);
  ASSERT_TRUE(log.append(make_batch(4, "a"), 4).ok());
  harness.disk.drive_all();
  ASSERT_TRUE(log.report_durable(1, Offset(4)).ok());
  EXPECT_EQ(log.next_offset(), Offset(0));  // A majority holds it, member 2 (in sync) does not.
  ASSERT_TRUE(log.report_durable(2, Offset(3)).ok());
  EXPECT_EQ(log.next_offset(), Offset(3));
  log.set_in_sync(0b011);  // Member 2 left the set: the majority and member 1 decide.
  EXPECT_EQ(log.next_offset(), Offset(4));
  EXPECT_EQ(log.in_sync(), 0b011u);
  log.set_in_sync(0b1000);  // Bits past the set are dropped; the leader is always in.
  EXPECT_EQ(log.in_sync(), 0b001u);
  ASSERT_TRUE(log.lead(3).ok());  // A new epoch: only the leader is in sync again.
  EXPECT_EQ(log.in_sync(), 0b001u);
}

// Every message of `harness` from 0, read view after view: its offsets and checksums.
std::vector<std::pair<uint64_t, uint64_t>> all_messages(LogHarness& harness) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  Offset from(0);
  while (from < harness.log().next_offset()) {
    const ReadCollector read = harness.read(from);
    if (read.count == 0) break;
    for (const ReadMessage& message : read.messages) {
      out.emplace_back(message.offset, message.checksum);
    }
    from = read.last + 1;
  }
  return out;
}

TEST(ReplicatedLog, TruncateCutsMemoryAndFilesAndARestartRecoversTheCut) {
  Replicas replicas;
  replicas.append(3, 150);
  replicas.leader.disk.drive_all();
  while (replicas.fetch(0) > 0) {
  }
  replicas.followers[0].disk.drive_all();
  ASSERT_TRUE(replicas.report(0).ok());  // Offsets 0-2 committed, and known to the follower.
  for (int i = 0; i < 4; i++) replicas.append(2, 150);  // 8 more, over a segment roll.
  while (replicas.fetch(0) > 0) {
  }
  LogHarness& harness = replicas.followers[0];
  PartitionLog& follower = harness.log();
  ASSERT_EQ(follower.next_offset(), Offset(3));
  ASSERT_EQ(follower.appended_end(), Offset(11));
  EXPECT_EQ(follower.truncate(Offset(2)).error(), Error::invalid_offset);  // Committed.
  EXPECT_EQ(follower.truncate(Offset(12)).error(), Error::invalid_offset);
  const uint32_t segments = follower.segments_count();
  ASSERT_GT(segments, 1u);
  ASSERT_TRUE(follower.truncate(Offset(5)).ok());  // A new leader's epoch ends at 5.
  EXPECT_EQ(follower.appended_end(), Offset(5));
  EXPECT_EQ(follower.durable_end(), Offset(5));
  EXPECT_LT(follower.segments_count(), segments);
  harness.close_log();
  PartitionLog& recovered = harness.reopen();
  EXPECT_EQ(recovered.appended_end(), Offset(5));
  EXPECT_EQ(recovered.next_offset(), Offset(5));
  std::vector<std::pair<uint64_t, uint64_t>> expected;  // The leader's first five, appended.
  for (uint64_t offset = 0; offset < 5; offset++) {
    ReadCollector one;
    replicas.leader.log().read(Offset(offset), 1, 1 << 20, one, ReadBound::appended);
    ASSERT_EQ(one.count, 1u);
    expected.emplace_back(offset, one.messages[0].checksum);
  }
  EXPECT_EQ(all_messages(harness), expected);
  // It goes on from 5 with what the leader holds there.
  recovered.follow();
  while (replicas.fetch(0) > 0) {
  }
  EXPECT_EQ(recovered.appended_end(), Offset(11));
}

TEST(ReplicatedLog, TruncateFailsTheCompletionsItCuts) {
  Replicas replicas;
  replicas.append(4);
  ASSERT_EQ(replicas.fetch(0), 4u);
  PartitionLog& follower = replicas.followers[0].log();
  CommitCollector kept;
  CommitCollector cut;
  follower.when_durable(Offset(2), kept);
  follower.when_durable(Offset(4), cut);
  // truncate() writes and syncs first: what it keeps is durable, what it cuts never will be.
  ASSERT_TRUE(follower.truncate(Offset(2)).ok());
  EXPECT_EQ(kept.calls, 1);
  EXPECT_EQ(kept.error, Error::ok);
  EXPECT_EQ(cut.calls, 1);
}

TEST(ReplicatedLog, BytesAFollowerHoldsAreNeverWrittenOverAfterARollBack) {
  Replicas replicas;
  replicas.append(1);
  replicas.leader.disk.drive_all();
  ASSERT_EQ(replicas.fetch(0), 1u);
  replicas.followers[0].disk.drive_all();
  ASSERT_TRUE(replicas.report(0).ok());
  ASSERT_EQ(replicas.leader.log().next_offset(), Offset(1));  // Its chunk holds a commit.
  replicas.append(2);
  ReadCollector fetched;
  replicas.leader.log().read(Offset(1), 100, 1 << 20, fetched, ReadBound::appended);
  ASSERT_EQ(fetched.count, 2u);
  const std::vector<std::byte> before(fetched.held.bytes().begin(), fetched.held.bytes().end());
  replicas.leader.disk.fail_next_write(ENOSPC);
  replicas.leader.disk.drive_all();  // The write fails: both messages are rolled back.
  ASSERT_EQ(replicas.leader.log().appended_end(), Offset(1));
  replicas.leader.advance(std::chrono::seconds(5));  // The retry writes the first index entry.
  replicas.leader.disk.drive_all();
  ASSERT_TRUE(replicas.leader.log().append(make_batch(3, "zzzz"), 3).ok());
  const std::vector<std::byte> after(fetched.held.bytes().begin(), fetched.held.bytes().end());
  EXPECT_EQ(after, before);
  // The follower's end is past the leader's now: its report is refused, so it truncates.
  EXPECT_EQ(replicas.leader.log().report_durable(1, Offset(5)).error(), Error::invalid_offset);
}

// The property: whatever the interleaving, the commit point is quorum_end() of the durable
// ends the leader was told (its own first), never past its own durable end, never goes back;
// a producer hears of its commit exactly when the commit point passes its batch; every
// follower's commit point stays at or below the leader's and its bytes equal the leader's.
RC_GTEST_PROP(ReplicationModel, CommitIsTheMajoritysDurableEnd, ()) {
  // Before the logs: closing them completes what still waits.
  std::vector<std::pair<Offset, std::unique_ptr<CommitCollector>>> sends;
  Replicas replicas(*rc::gen::element(Durability::memory, Durability::write, Durability::always));
  PartitionLog& leader = replicas.leader.log();
  std::array<Offset, 3> told{};  // What the leader was told of each member (itself: exact).
  Offset last_commit;
  const int steps = *rc::gen::inRange(1, 60);
  for (int s = 0; s < steps; s++) {
    const int op = *rc::gen::inRange(0, 5);
    const size_t i = *rc::gen::inRange<size_t>(0, 2);
    if (op == 0) {
      const Offset end = replicas.append(*rc::gen::inRange<uint32_t>(1, 4));
      sends.emplace_back(end, std::make_unique<CommitCollector>());
      leader.when_committed(end, *sends.back().second);
    } else if (op == 1 && replicas.leader.disk.pending() > 0) {
      replicas.leader.disk.drive();
    } else if (op == 2) {
      replicas.fetch(i);
    } else if (op == 3 && replicas.followers[i].disk.pending() > 0) {
      replicas.followers[i].disk.drive();
    } else if (op == 4) {
      RC_ASSERT(replicas.report(i).ok());
      told[i + 1] = std::max(told[i + 1], replicas.followers[i].log().durable_end());
    }
    told[0] = leader.durable_end();
    std::array<Offset, 3> sorted = told;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const Offset expected = std::max(last_commit, std::min(sorted[1], told[0]));
    RC_ASSERT(leader.next_offset() == expected);
    RC_ASSERT(leader.next_offset() <= leader.durable_end());
    RC_ASSERT(leader.next_offset() >= last_commit);
    last_commit = leader.next_offset();
    for (const auto& [end, sent] : sends) RC_ASSERT(sent->calls == (end <= last_commit ? 1 : 0));
    for (LogHarness& follower : replicas.followers) {
      RC_ASSERT(follower.log().next_offset() <= last_commit);
      RC_ASSERT(follower.log().next_offset() <= follower.log().durable_end());
    }
  }
  const std::vector<std::pair<uint64_t, uint64_t>> theirs = all_messages(replicas.leader);
  for (LogHarness& follower : replicas.followers) {
    const std::vector<std::pair<uint64_t, uint64_t>> mine = all_messages(follower);
    RC_ASSERT(mine.size() <= theirs.size());
    RC_ASSERT(std::equal(mine.begin(), mine.end(), theirs.begin()));
  }
}

}  // namespace
}  // namespace hark::storage::test
