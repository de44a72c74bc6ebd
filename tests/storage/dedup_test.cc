// Covers a PartitionLog's message-id deduplication window (LogOptions::dedup_window,
// storage/dedup_window.h; docs/cluster.md §The data path, Deduplication): a sent message whose
// id is among the last N appended, or earlier in its batch, is dropped and the rest appended;
// id 0 (a server UUID) never is; the oldest id leaves at N; a send of duplicates only is
// acknowledged once its originals commit, and fails as they do when a truncation cuts them; the
// ids a failed write rolls back leave it; the window comes back from the log after a reopen (from
// disk, bounded by N) and after a truncation (the cut ids gone); a follower's stored copies enter
// it; 0 turns it off.
#include <errno.h>

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

LogOptions with_window(uint32_t window, Durability durability = Durability::memory) {
  LogOptions options;
  options.durability = durability;
  options.dedup_window = window;
  options.segment_bytes_max = 1000;  // Several segments for a few messages.
  options.chunk_bytes = 512;
  return options;
}

// One message per id, its payload "p<id>" (id 0: the server picks one), user headers of
// `padding` bytes.
std::vector<std::byte> batch_of(const std::vector<uint64_t>& ids, size_t padding = 0) {
  std::vector<MessageSpec> specs;
  for (uint64_t id : ids) {
    specs.push_back({.payload = "p" + std::to_string(id),
                     .user_headers = std::string(padding, '.'),
                     .id_low = id});
  }
  return make_batch(specs);
}

AppendResult send(PartitionLog& log, const std::vector<uint64_t>& ids, size_t padding = 0) {
  const Result<AppendResult> appended =
      log.append(batch_of(ids, padding), static_cast<uint32_t>(ids.size()));
  EXPECT_TRUE(appended.ok());
  return appended.ok() ? *appended : AppendResult{};
}

std::vector<std::string> payloads(LogHarness& harness) {
  std::vector<std::string> out;
  for (const ReadMessage& message : harness.read(Offset(0)).messages) {
    out.push_back(message.payload);
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(DedupWindow, ADuplicateIsDroppedAndTheRestAppended) {
  LogHarness harness(with_window(8));
  PartitionLog& log = harness.reopen();
  send(log, {1, 2});
  const AppendResult retry = send(log, {2, 3});
  EXPECT_EQ(retry.first, Offset(2));
  EXPECT_EQ(retry.count, 1u);
  EXPECT_EQ(retry.duplicates, 1u);
  EXPECT_EQ(retry.acknowledge_end, Offset(3));  // Its own end: past the original's (1).
  EXPECT_EQ(payloads(harness), (Strings{"p1", "p2", "p3"}));
  EXPECT_EQ(log.dedup_window().find(MessageId{.low = 3}), Offset(2));
}

TEST(DedupWindow, ADuplicateWithinOneBatchIsDroppedAndIdZeroNeverIs) {
  LogHarness harness(with_window(8));
  PartitionLog& log = harness.reopen();
  const AppendResult appended = send(log, {5, 0, 5, 0, 6, 6});
  EXPECT_EQ(appended.count, 4u);
  EXPECT_EQ(appended.duplicates, 2u);
  EXPECT_EQ(payloads(harness), (Strings{"p5", "p0", "p0", "p6"}));
  // The server's UUIDs are in the window too (it is the log's last ids), one per message.
  EXPECT_EQ(log.dedup_window().size(), 4u);
}

TEST(DedupWindow, TheOldestIdLeavesAtN) {
  LogHarness harness(with_window(3));
  PartitionLog& log = harness.reopen();
  send(log, {1, 2, 3, 4});  // 1 leaves when 4 comes.
  EXPECT_EQ(log.dedup_window().size(), 3u);
  EXPECT_EQ(log.dedup_window().find(MessageId{.low = 1}), std::nullopt);
  EXPECT_EQ(send(log, {4}).count, 0u);
  EXPECT_EQ(send(log, {1}).count, 1u);  // Out of the window: appended again; 2 leaves.
  EXPECT_EQ(send(log, {2}).count, 1u);
  EXPECT_EQ(payloads(harness), (Strings{"p1", "p2", "p3", "p4", "p1", "p2"}));
}

TEST(DedupWindow, ZeroIsOff) {
  LogHarness harness(with_window(0));
  PartitionLog& log = harness.reopen();
  send(log, {7, 7});
  EXPECT_EQ(send(log, {7}).count, 1u);
  EXPECT_EQ(payloads(harness), (Strings{"p7", "p7", "p7"}));
  EXPECT_EQ(log.dedup_window().size(), 0u);
}

TEST(DedupWindow, ASendOfDuplicatesOnlyWaitsForItsOriginalsCommit) {
  LogHarness harness(with_window(8, Durability::write));
  PartitionLog& log = harness.reopen();
  const AppendResult original = send(log, {1, 2});  // Its write has not completed yet.
  const AppendResult retry = send(log, {2, 1});
  EXPECT_EQ(retry.count, 0u);
  EXPECT_EQ(retry.duplicates, 2u);
  EXPECT_EQ(retry.acknowledge_end, Offset(2));
  EXPECT_EQ(log.appended_end(), Offset(2));  // Nothing appended.
  CommitCollector first;
  CommitCollector second;
  log.when_committed(original.acknowledge_end, first);
  log.when_committed(retry.acknowledge_end, second);
  EXPECT_EQ(second.calls, 0);  // Not before its originals are committed.
  harness.disk.drive_all();
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(second.calls, 1);
  EXPECT_EQ(second.error, Error::ok);
  EXPECT_EQ(log.next_offset(), Offset(2));
}

TEST(DedupWindow, ARejectedBatchClaimsNoId) {
  LogOptions options = with_window(8, Durability::write);
  options.unwritten_bytes_max = 200;  // Two of these messages wait at most.
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  send(log, {1});
  EXPECT_EQ(log.append(batch_of({2, 3, 4}), 3).error(), Error::cannot_append_message);
  harness.disk.drive_all();
  EXPECT_EQ(send(log, {2, 3}).count, 2u);  // Refused before: not duplicates now.
}

TEST(DedupWindow, AFailedWriteTakesTheIdsItRollsBackOut) {
  LogHarness harness(with_window(8, Durability::write));
  PartitionLog& log = harness.reopen();
  send(log, {1});
  harness.disk.drive_all();
  harness.disk.fail_next_write(ENOSPC);
  CommitCollector lost;
  log.when_committed(send(log, {2, 3}).acknowledge_end, lost);
  harness.disk.drive();
  ASSERT_EQ(lost.error, Error::cannot_save_messages_to_segment);  // Rolled back, never stored.
  EXPECT_EQ(log.dedup_window().size(), 1u);
  harness.advance(harness.options.flush_interval + std::chrono::milliseconds(1));
  harness.disk.drive_all();
  EXPECT_EQ(send(log, {1, 2, 3}).count, 2u);  // The producer's retry stores them.
}

TEST(DedupWindow, ComesBackFromTheLogAfterAReopenBoundedByN) {
  LogHarness harness(with_window(4));
  PartitionLog& log = harness.reopen();
  for (uint64_t id = 1; id <= 10; id++) send(log, {id}, 200);  // 4 a segment.
  ASSERT_TRUE(log.flush(true).ok());
  ASSERT_GT(log.segments_count(), 1u);
  harness.close_log();
  PartitionLog& reopened = harness.reopen();  // No chunk in memory: the ids come from disk.
  EXPECT_EQ(reopened.dedup_window().size(), 4u);
  EXPECT_EQ(reopened.dedup_window().find(MessageId{.low = 7}), Offset(6));
  EXPECT_EQ(send(reopened, {7, 8, 9, 10}).count, 0u);
  EXPECT_EQ(send(reopened, {6}).count, 1u);
}

TEST(DedupWindow, ATruncationTakesTheCutIdsOutAndBringsBackTheOlder) {
  LogHarness harness(with_window(3, Durability::write));
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.lead(3).ok());  // Nothing commits without followers: the tail may be cut.
  send(log, {1, 2, 3, 4, 5});
  CommitCollector waiting;
  const AppendResult retry = send(log, {5});  // Waits for offset 4, which the cut takes.
  ASSERT_EQ(retry.count, 0u);
  log.when_committed(retry.acknowledge_end, waiting);
  ASSERT_TRUE(log.truncate(Offset(3)).ok());  // A new leader's epoch ends at 3.
  EXPECT_EQ(waiting.calls, 1);
  EXPECT_EQ(waiting.error, Error::shard_communication_error);  // Retryable: sent again there.
  EXPECT_EQ(log.dedup_window().size(), 3u);
  EXPECT_EQ(log.dedup_window().find(MessageId{.low = 5}), std::nullopt);
  EXPECT_EQ(log.dedup_window().find(MessageId{.low = 1}), Offset(0));  // Evicted, back again.
  EXPECT_EQ(send(log, {1, 4, 5}).count, 2u);
}

TEST(DedupWindow, AFollowersStoredCopiesEnterItsWindow) {
  LogHarness leader(with_window(8));
  LogHarness follower(with_window(8));
  leader.reopen();
  follower.reopen().follow();
  send(leader.log(), {1, 2, 0});
  const ReadCollector copy = leader.read(Offset(0));
  ASSERT_EQ(copy.count, 3u);
  ASSERT_TRUE(follower.log().append_stored(copy.held.bytes(), copy.count).ok());
  // Failover: the follower leads, and a producer retries its send there.
  ASSERT_TRUE(follower.log().lead(1).ok());
  const AppendResult retry = send(follower.log(), {1, 2, 3});
  EXPECT_EQ(retry.count, 1u);
  EXPECT_EQ(retry.duplicates, 2u);
  EXPECT_EQ(payloads(follower), (Strings{"p1", "p2", "p0", "p3"}));
}

}  // namespace
}  // namespace hark::storage::test
