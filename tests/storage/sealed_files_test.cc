// Covers the open files of a PartitionLog (the open-file budget of core::files_per_partition):
// sealed segments close their .log and .index once written and synced, so a log with many
// segments holds the active segment's two files; a read of a closed segment's evicted bytes
// reopens its .log (one at a time) and serves the right messages; reopening a log with many
// segments leaves the sealed ones closed; and under `always`, a failed commit that removes the
// active segment makes the sealed one before it active again with its files.
#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

LogOptions many_small_segments() {
  LogOptions options;
  options.segment_bytes_max = 1000;
  options.chunk_bytes = 1024;
  options.memory_bytes_max = 2048;  // Older segments are read back from the disk.
  options.flush_bytes = 1;
  return options;
}

// Appends `count` messages of ~300 bytes (three per segment), writing them out as it goes.
void append_many(LogHarness& harness, uint32_t count) {
  for (uint32_t i = 0; i < count; i++) {
    ASSERT_TRUE(harness.log().append(make_batch(1, "m" + std::to_string(i), 300), 1).ok());
    harness.disk.drive_all();
  }
}

TEST(SealedFiles, SealedSegmentsCloseTheirFilesOnceSettled) {
  LogHarness harness(many_small_segments());
  harness.reopen();
  append_many(harness, 30);
  ASSERT_GE(harness.log().segments_count(), 10u);
  // The active segment's .log and .index; every sealed one is settled and closed.
  EXPECT_EQ(harness.disk.open_files(), 2u);
}

TEST(SealedFiles, ReadsOfClosedSegmentsReopenOneFileAtATime) {
  LogHarness harness(many_small_segments());
  harness.reopen();
  append_many(harness, 30);
  for (uint64_t i = 0; i < 30; i++) {
    const ReadCollector read = harness.read(Offset(i), 1);
    ASSERT_EQ(read.messages.size(), 1u) << i;
    EXPECT_EQ(read.messages[0].offset, i);
    EXPECT_EQ(read.messages[0].payload.substr(0, 1 + std::to_string(i).size()),
              "m" + std::to_string(i));
    EXPECT_TRUE(read.messages[0].checksum_ok);
    EXPECT_LE(harness.disk.open_files(), 3u) << "the active segment's two, one to read";
  }
}

TEST(SealedFiles, AReopenedLogLeavesItsSealedSegmentsClosed) {
  LogHarness harness(many_small_segments());
  harness.reopen();
  append_many(harness, 30);
  harness.close_log();
  EXPECT_EQ(harness.disk.open_files(), 0u);
  PartitionLog& log = harness.reopen();
  EXPECT_GE(log.segments_count(), 10u);
  EXPECT_EQ(harness.disk.open_files(), 2u);
  EXPECT_EQ(harness.read(Offset(0), 1).messages.size(), 1u);
}

TEST(SealedFiles, AFailedCommitMakesTheSealedSegmentActiveWithItsFiles) {
  LogOptions options = many_small_segments();
  options.durability = Durability::always;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  append_many(harness, 3);  // Fills the first segment.
  harness.disk.fail_writes(EIO);
  ASSERT_TRUE(log.append(make_batch(1, "lost", 300), 1).ok());  // Rolls, then fails.
  harness.disk.drive_all();
  EXPECT_EQ(log.next_offset(), Offset(3));
  harness.disk.fail_writes(0);
  harness.advance(std::chrono::seconds(1));  // The retry finds nothing left to write.
  harness.disk.drive_all();
  ASSERT_TRUE(log.append(make_batch(1, "kept", 300), 1).ok());
  harness.disk.drive_all();
  EXPECT_EQ(log.next_offset(), Offset(4));
  EXPECT_EQ(harness.read(Offset(3), 1).messages.at(0).payload.substr(0, 4), "kept");
  EXPECT_LE(harness.disk.open_files(), 4u);
}

}  // namespace
}  // namespace hark::storage::test
