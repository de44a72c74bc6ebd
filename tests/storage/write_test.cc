// Covers the default durability, `write`, on the in-memory disk (issue #8): a batch commits —
// becomes readable, advances next_offset() and answers its producer — only when the write of
// its bytes completed; the write starts at once, and appends arriving while one is in flight
// share the next (group commit, counted at the disk seam); a failed write fails the producers
// it covers and rolls their batches back; a process death (written bytes kept) keeps every ack.
// `memory`, the explicit opt-in, still acknowledges at append.
#include <errno.h>

#include <vector>

#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

void append_waiting(PartitionLog& log, uint32_t count, const std::string& prefix,
                    CommitCollector& done) {
  const Result<AppendResult> appended = log.append(make_batch(count, prefix), count);
  ASSERT_TRUE(appended.ok());
  log.when_committed(appended->first + count, done);
}

TEST(DurabilityWrite, IsTheDefault) { EXPECT_EQ(LogOptions{}.durability, Durability::write); }

TEST(DurabilityWrite, BatchCommitsOnlyAfterItsWrite) {
  LogHarness harness;
  PartitionLog& log = harness.reopen();
  CommitCollector done;
  append_waiting(log, 3, "a", done);
  EXPECT_EQ(harness.disk.pending(), 1u);  // The write started at once, no flush threshold.
  EXPECT_EQ(log.next_offset(), Offset(0));
  EXPECT_EQ(harness.read(Offset(0)).count, 0u);  // Never served before the write.
  EXPECT_EQ(done.calls, 0);
  harness.disk.drive();  // The write: the commit.
  EXPECT_EQ(done.calls, 1);
  EXPECT_EQ(done.error, Error::ok);
  EXPECT_EQ(log.next_offset(), Offset(3));
  EXPECT_EQ(harness.read(Offset(0)).count, 3u);
  EXPECT_EQ(harness.disk.datasyncs_count(), 0u);  // No fdatasync is waited for.
}

TEST(DurabilityWrite, AppendsDuringAWriteShareTheNextOne) {
  LogHarness harness;
  PartitionLog& log = harness.reopen();
  constexpr int producers = 16;
  std::vector<CommitCollector> done(producers);
  append_waiting(log, 1, "first", done[0]);
  for (int i = 1; i < producers; i++) append_waiting(log, 1, "p" + std::to_string(i), done[i]);
  EXPECT_EQ(harness.disk.writes_count(), 1u);  // One in flight; the rest wait for it.
  harness.disk.drive();
  EXPECT_EQ(done[0].calls, 1);
  EXPECT_EQ(done[1].calls, 0);
  EXPECT_EQ(harness.disk.writes_count(), 2u);  // All 15 in one write.
  harness.disk.drive();
  for (const CommitCollector& d : done) EXPECT_EQ(d.calls, 1);
  EXPECT_EQ(log.next_offset(), Offset(producers));
  harness.disk.drive_all();  // The index.
  EXPECT_LT(harness.disk.writes_count(), static_cast<uint64_t>(producers) / 4);
}

TEST(DurabilityWrite, FailedWriteFailsItsProducersAndRollsBack) {
  LogHarness harness;
  PartitionLog& log = harness.reopen();
  CommitCollector kept;
  append_waiting(log, 2, "kept", kept);
  harness.disk.drive_all();
  ASSERT_EQ(kept.calls, 1);
  harness.disk.fail_next_write(ENOSPC);
  CommitCollector lost;
  append_waiting(log, 3, "lost", lost);
  harness.disk.drive();
  EXPECT_EQ(lost.calls, 1);
  EXPECT_EQ(lost.error, Error::cannot_save_messages_to_segment);
  EXPECT_EQ(log.next_offset(), Offset(2));
  EXPECT_EQ(harness.read(Offset(0)).count, 2u);  // Acknowledged data stays.
  harness.advance(harness.options.flush_interval + std::chrono::milliseconds(1));
  harness.disk.drive_all();
  CommitCollector again;
  append_waiting(log, 1, "again", again);
  EXPECT_EQ(log.next_offset(), Offset(2));  // The rolled-back offsets are reused.
  harness.disk.drive_all();
  EXPECT_EQ(again.calls, 1);
  EXPECT_EQ(again.error, Error::ok);
  EXPECT_EQ(log.next_offset(), Offset(3));
}

TEST(DurabilityWrite, ProcessDeathKeepsEveryAcknowledgedBatch) {
  LogHarness harness;
  PartitionLog& log = harness.reopen();
  std::vector<CommitCollector> done(40);
  uint64_t acked = 0;
  for (size_t i = 0; i < done.size(); i++) {
    append_waiting(log, 2, "d" + std::to_string(i), done[i]);
    if (i % 3 == 0) harness.disk.drive();
  }
  for (size_t i = 0; i < done.size(); i++) {
    if (done[i].calls == 1 && done[i].error == Error::ok) acked = 2 * (i + 1);
  }
  ASSERT_GT(acked, 0u);
  ASSERT_LT(acked, 80u);  // Some were still unwritten: the kill loses only those.
  harness.disk.crash([](uint64_t bound) { return bound; });  // The page cache keeps writes.
  harness.close_log();
  harness.disk.restart();
  EXPECT_GE(harness.reopen().next_offset(), Offset(acked));
}

TEST(DurabilityMemory, AcknowledgesAtAppendBeforeAnyWrite) {
  LogOptions options;
  options.durability = Durability::memory;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  CommitCollector done;
  append_waiting(log, 2, "m", done);
  EXPECT_EQ(done.calls, 1);
  EXPECT_EQ(harness.disk.pending(), 0u);  // Below flush_bytes: nothing written yet.
  harness.disk.crash([](uint64_t bound) { return bound; });
  harness.close_log();
  harness.disk.restart();
  EXPECT_EQ(harness.reopen().next_offset(), Offset(0));  // What `memory` is documented to lose.
}

}  // namespace
}  // namespace hark::storage::test
