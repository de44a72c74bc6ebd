// Covers failure handling through the MemoryDisk's fault seam: a failing write or fdatasync
// surfaces as a rejected append, acknowledged data stays readable, the failure is retried on
// the flush interval and cleared when the disk works again; a failed sync rewrites the bytes
// it covered; short writes still write everything.
#include <errno.h>

#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

using namespace std::chrono_literals;

// Under `memory`, whose writes are retried while the data stays readable; the policies that
// wait for the write fail their producers instead (write_test.cc, always_test.cc).
LogOptions eager() {
  LogOptions options;
  options.durability = Durability::memory;
  options.flush_bytes = 1;  // Every append starts a write.
  return options;
}

TEST(PartitionLogFaults, FailedWriteRejectsAppendsKeepsDataReadableAndRetries) {
  LogHarness harness(eager());
  PartitionLog& log = harness.reopen();
  harness.disk.fail_writes(ENOSPC);
  ASSERT_TRUE(log.append(make_batch(3, "ack"), 3).ok());
  harness.disk.drive_all();
  EXPECT_EQ(log.write_failure(), Error::cannot_save_messages_to_segment);
  EXPECT_EQ(log.append(make_batch(1, "no"), 1).error(), Error::cannot_save_messages_to_segment);
  EXPECT_EQ(log.next_offset(), Offset(3));
  EXPECT_EQ(harness.read(Offset(0)).count, 3u);  // Acknowledged data stays readable.
  EXPECT_EQ(log.flush(false).error(), Error::cannot_save_messages_to_segment);

  harness.advance(harness.options.flush_interval + 1ms);  // Retry, still failing.
  harness.disk.drive_all();
  EXPECT_EQ(log.write_failure(), Error::cannot_save_messages_to_segment);

  harness.disk.fail_writes(0);
  harness.advance(harness.options.flush_interval + 1ms);  // Retry succeeds.
  harness.disk.drive_all();
  EXPECT_EQ(log.write_failure(), Error::ok);
  EXPECT_EQ(log.unwritten_bytes(), 0u);
  ASSERT_TRUE(log.append(make_batch(1, "yes"), 1).ok());
  harness.close_log();
  EXPECT_EQ(harness.reopen().next_offset(), Offset(4));
}

TEST(PartitionLogFaults, FailedSyncIsReportedAndTheBytesAreWrittenAgain) {
  LogOptions options = eager();
  options.durability = Durability::interval;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(2, "s"), 2).ok());
  harness.disk.drive_all();
  harness.disk.fail_syncs(EIO);
  EXPECT_EQ(log.flush(true).error(), Error::cannot_sync_file);
  EXPECT_GT(log.unwritten_bytes(), 0u);  // Rewound: the pages may be lost.
  EXPECT_EQ(log.append(make_batch(1, "no"), 1).error(), Error::cannot_sync_file);
  harness.disk.fail_syncs(0);
  ASSERT_TRUE(log.flush(true).ok());
  EXPECT_EQ(log.write_failure(), Error::ok);
  harness.disk.crash([](uint64_t) { return 0; });  // Only synced bytes survive.
  harness.close_log();
  harness.disk.restart();
  EXPECT_EQ(harness.reopen().next_offset(), Offset(2));
}

TEST(PartitionLogFaults, ShortWritesStillWriteEverything) {
  LogHarness harness(eager());
  PartitionLog& log = harness.reopen();
  harness.disk.short_writes(true);
  for (int i = 0; i < 5; i++) ASSERT_TRUE(log.append(make_batch(7, "w", 100), 7).ok());
  ASSERT_TRUE(log.flush(false).ok());
  harness.disk.short_writes(false);
  harness.close_log();
  PartitionLog& reopened = harness.reopen();
  EXPECT_EQ(reopened.next_offset(), Offset(35));
  EXPECT_EQ(harness.read(Offset(0)).count, 35u);
}

TEST(PartitionLogFaults, PurgeClearsAFailureWithNothingLeftToWrite) {
  LogHarness harness(eager());
  PartitionLog& log = harness.reopen();
  harness.disk.fail_writes(EIO);
  ASSERT_TRUE(log.append(make_batch(1, "x"), 1).ok());
  harness.disk.drive_all();
  ASSERT_NE(log.write_failure(), Error::ok);
  harness.disk.fail_writes(0);
  ASSERT_TRUE(log.purge().ok());
  EXPECT_EQ(log.write_failure(), Error::ok);
  EXPECT_EQ(log.append(make_batch(1, "y"), 1)->first, Offset(0));
}

struct FlushRecorder final : FlushCompletion {
  void flushed(Status status) override {
    calls++;
    result = status;
  }
  int calls = 0;
  Status result;
};

TEST(PartitionLogFaults, AsyncFlushAnswersOnceSyncedAndSurvivesPowerLoss) {
  LogHarness harness;  // The default policy: the write starts at once, the flush adds the sync.
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(2, "f"), 2).ok());
  FlushRecorder flush;
  log.flush(true, flush);
  EXPECT_EQ(flush.calls, 0);  // The write and the sync are still in flight.
  ASSERT_TRUE(log.append(make_batch(1, "later"), 1).ok());  // Not part of this flush.
  for (int i = 0; i < 100 && flush.calls == 0; i++) harness.disk.drive();
  ASSERT_EQ(flush.calls, 1);
  EXPECT_TRUE(flush.result.ok());
  harness.disk.crash([](uint64_t) { return 0; });  // Only synced bytes survive.
  harness.close_log();
  harness.disk.restart();
  EXPECT_GE(harness.reopen().next_offset(), Offset(2));

  FlushRecorder done_already;
  harness.log().flush(false, done_already);  // Nothing appended since open.
  EXPECT_EQ(done_already.calls, 1);
}

TEST(PartitionLogFaults, AsyncFlushReportsTheFailureThatStopsIt) {
  LogHarness harness;
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(1, "x"), 1).ok());
  harness.disk.fail_syncs(EIO);
  FlushRecorder flush;
  log.flush(true, flush);
  for (int i = 0; i < 100 && flush.calls == 0; i++) harness.disk.drive();
  ASSERT_EQ(flush.calls, 1);
  EXPECT_EQ(flush.result.error(), Error::cannot_sync_file);
  harness.disk.fail_syncs(0);
  ASSERT_TRUE(log.flush(true).ok());  // Retried and written after all.
}

}  // namespace
}  // namespace hark::storage::test
