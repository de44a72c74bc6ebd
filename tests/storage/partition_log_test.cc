// Covers PartitionLog on the in-memory disk: stamping, validation, reads by offset and
// timestamp, rolls, background writes and syncs, eviction to disk, reopen, retention, purge,
// delete-segments and locking. Time is a ManualClock; timers run when the test advances it.
// These mechanics run under durability `memory` (commit at append), so a test need not drive
// the disk before it reads; when a commit happens per policy is covered by write_test.cc,
// always_test.cc and the model test.
#include "hark/storage/partition_log.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

using namespace std::chrono_literals;
namespace layout = message_layout;

std::vector<std::string> payloads(const ReadCollector& read) {
  std::vector<std::string> out;
  for (const ReadMessage& message : read.messages) out.push_back(message.payload);
  return out;
}

LogOptions at_append() {
  LogOptions options;
  options.durability = Durability::memory;
  return options;
}

LogOptions small_segments() {
  LogOptions options = at_append();
  options.segment_bytes_max = 1000;
  options.chunk_bytes = 512;
  return options;
}

TEST(PartitionLog, AppendStampsOffsetsTimestampIdsAndChecksums) {
  LogHarness harness(at_append());
  PartitionLog& log = harness.reopen();
  const auto batch = make_batch({{.payload = "a"}, {.payload = "bb", .id_low = 7}});
  const Result<AppendResult> appended = log.append(batch, 2);
  ASSERT_TRUE(appended.ok());
  EXPECT_EQ(appended->first, Offset(0));
  EXPECT_EQ(appended->count, 2u);
  EXPECT_EQ(appended->bytes, batch.size());
  EXPECT_EQ(appended->timestamp, harness.clock.realtime_now());
  EXPECT_EQ(log.next_offset(), Offset(2));

  ReadCollector read = harness.read(Offset(0));
  ASSERT_EQ(read.messages.size(), 2u);
  const std::span<const std::byte> bytes = read.held.bytes();
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(read.messages[i].offset, i);
    EXPECT_EQ(read.messages[i].timestamp, appended->timestamp);
    EXPECT_TRUE(read.messages[i].checksum_ok);
  }
  EXPECT_NE(load_u64(bytes, layout::id) | load_u64(bytes, layout::id + 8), 0u);  // Assigned.
  EXPECT_EQ(load_u64(bytes.subspan(65), layout::id), 7u);                        // Kept.
}

TEST(PartitionLog, RejectedBatchesChangeNothing) {
  LogHarness harness(at_append());
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(1, "x"), 1).ok());
  auto reserved = make_batch(1, "r");
  store_u64(reserved, layout::reserved, 1);
  auto big_headers = make_batch(1, "h");
  store_u32(big_headers, layout::user_headers_length, 100'001);
  auto big_payload = make_batch(1, "p");
  store_u32(big_payload, layout::payload_length, 64'000'001);
  const auto two = make_batch(2, "t");
  EXPECT_EQ(log.append(two, 0).error(), Error::invalid_messages_count);
  EXPECT_EQ(log.append(reserved, 1).error(), Error::invalid_reserved_field);
  EXPECT_EQ(log.append(big_headers, 1).error(), Error::too_big_user_headers);
  EXPECT_EQ(log.append(big_payload, 1).error(), Error::too_big_message_payload);
  EXPECT_EQ(log.append(two, 3).error(), Error::too_small_message);
  EXPECT_EQ(log.append(two, 1).error(), Error::invalid_messages_size);
  EXPECT_EQ(log.append(std::span(two).first(two.size() - 1), 2).error(),
            Error::invalid_messages_size);
  EXPECT_EQ(log.next_offset(), Offset(1));
  EXPECT_EQ(log.messages_count(), 1u);
  EXPECT_EQ(harness.read(Offset(0)).messages.size(), 1u);
}

TEST(PartitionLog, TimestampsNeverDecreaseWhenTheClockStepsBack) {
  LogHarness harness(at_append());
  PartitionLog& log = harness.reopen();
  const UnixMicros first = log.append(make_batch(1, "a"), 1)->timestamp;
  harness.clock.set_realtime(first - 5'000'000);
  EXPECT_EQ(log.append(make_batch(1, "b"), 1)->timestamp, first);
  harness.clock.set_realtime(first + 10);
  EXPECT_EQ(log.append(make_batch(1, "c"), 1)->timestamp, first + 10);
}

TEST(PartitionLog, ReadsFromMemoryAnswerBeforeReturning) {
  LogHarness harness(at_append());
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(5, "m"), 5).ok());
  ReadCollector collector;
  log.read(Offset(1), 3, 1 << 20, collector);
  EXPECT_EQ(collector.calls, 1);
  EXPECT_EQ(payloads(collector), (std::vector<std::string>{"m1", "m2", "m3"}));
  EXPECT_EQ(collector.first, Offset(1));
  EXPECT_EQ(collector.last, Offset(3));
}

TEST(PartitionLog, ReadAtOrPastTheEndIsEmptyAndNothingBeyondIsVisible) {
  LogHarness harness(at_append());
  PartitionLog& log = harness.reopen();
  EXPECT_EQ(harness.read(Offset(0)).count, 0u);
  ASSERT_TRUE(log.append(make_batch(2, "e"), 2).ok());
  EXPECT_EQ(harness.read(Offset(2)).count, 0u);
  EXPECT_EQ(harness.read(Offset(99)).count, 0u);
  EXPECT_EQ(harness.read(Offset(0), 0).count, 0u);
  EXPECT_EQ(harness.read(Offset(0)).count, 2u);
}

TEST(PartitionLog, ReadHonoursCountAndByteCapButReturnsAtLeastOne) {
  LogHarness harness(at_append());
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(4, "c", 34), 4).ok());  // 100 bytes each.
  EXPECT_EQ(harness.read(Offset(0), 2).count, 2u);
  EXPECT_EQ(harness.read(Offset(0), 10, 250).count, 2u);
  EXPECT_EQ(harness.read(Offset(0), 10, 10).count, 1u);
}

TEST(PartitionLog, SegmentsRollAtTheSizeLimit) {
  LogHarness harness(small_segments());
  PartitionLog& log = harness.reopen();
  for (int i = 0; i < 5; i++) ASSERT_TRUE(log.append(make_batch(4, "r", 34), 4).ok());
  // 400 bytes per batch, 1000 per segment: two batches per segment.
  EXPECT_EQ(log.segments_count(), 3u);
  EXPECT_EQ(log.size_bytes(), 2000u);
  EXPECT_TRUE(harness.disk.exists(harness.options.directory + "/00000000000000000008.log"));
  EXPECT_TRUE(harness.disk.exists(harness.options.directory + "/00000000000000000016.index"));
  const ReadCollector read = harness.read(Offset(6), 100);
  EXPECT_EQ(read.first, Offset(6));
  EXPECT_EQ(read.count, 2u);  // A view stops at the segment's end.
  EXPECT_EQ(harness.read(Offset(8)).first, Offset(8));
}

TEST(PartitionLog, OffsetForTimestampFindsTheFirstAtOrAfter) {
  LogHarness harness(small_segments());
  PartitionLog& log = harness.reopen();
  std::vector<UnixMicros> stamps;
  for (int i = 0; i < 6; i++) {
    stamps.push_back(log.append(make_batch(2, "t", 300), 2)->timestamp);
    harness.clock.advance(1s);
  }
  EXPECT_EQ(*log.offset_for_timestamp(0), Offset(0));
  EXPECT_EQ(*log.offset_for_timestamp(stamps[3]), Offset(6));
  EXPECT_EQ(*log.offset_for_timestamp(stamps[3] + 1), Offset(8));
  EXPECT_EQ(*log.offset_for_timestamp(stamps[5] + 1), log.next_offset());
}

TEST(PartitionLog, BackgroundWritesStartAtTheByteThresholdOrAfterTheInterval) {
  LogOptions options = at_append();
  options.flush_bytes = 1000;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(1, "s", 100), 1).ok());
  EXPECT_EQ(harness.disk.pending(), 0u);          // Below the threshold: waits for the timer.
  harness.advance(options.flush_interval + 1ms);  // Timers round up to a wheel tick.
  EXPECT_GT(harness.disk.drive_all(), 0u);
  EXPECT_EQ(log.unwritten_bytes(), 0u);
  ASSERT_TRUE(log.append(make_batch(10, "s", 100), 10).ok());
  EXPECT_GT(harness.disk.pending(), 0u);  // Over the threshold: at once.
  harness.disk.drive_all();
  EXPECT_EQ(log.unwritten_bytes(), 0u);
  // The index entries follow on the interval too (a cache recovery rebuilds).
  harness.advance(options.flush_interval + 1ms);
  harness.disk.drive_all();
  EXPECT_EQ(harness.disk.bytes(harness.options.directory + "/00000000000000000000.index").size(),
            11u * 16);
}

// Outside `always` a producer waits for its data write only: the index entries that describe
// it are written after flush_interval, at a seal, or on a flush, never one write per send.
TEST(PartitionLog, IndexEntriesWaitForTheIntervalTheSealOrAFlushOutsideAlways) {
  LogOptions options;
  options.durability = Durability::write;
  options.segment_bytes_max = 4096;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  const std::string index = harness.options.directory + "/00000000000000000000.index";
  for (int send = 0; send < 3; send++) {
    ASSERT_TRUE(log.append(make_batch(1, "s", 100), 1).ok());
    EXPECT_EQ(harness.disk.drive_all(), 1u) << send;  // The data write alone.
  }
  EXPECT_EQ(log.next_offset(), Offset(3));  // Committed without their index entries.
  EXPECT_EQ(harness.disk.bytes(index).size(), 0u);
  harness.advance(options.flush_interval + 1ms);
  EXPECT_EQ(harness.disk.drive_all(), 1u);  // One write for the three entries.
  EXPECT_EQ(harness.disk.bytes(index).size(), 3u * 16);

  ASSERT_TRUE(log.append(make_batch(1, "s", 100), 1).ok());
  harness.disk.drive_all();
  EXPECT_EQ(harness.disk.bytes(index).size(), 3u * 16);
  ASSERT_TRUE(log.flush(false).ok());
  EXPECT_EQ(harness.disk.bytes(index).size(), 4u * 16);  // A flush writes them at once.

  // A seal writes the sealed segment's entries before anything of the next segment.
  std::vector<std::string> logs;
  for (int send = 0; send < 100 && logs.size() < 2; send++) {
    ASSERT_TRUE(log.append(make_batch(1, "s", 100), 1).ok());
    harness.disk.drive_all();
    logs.clear();
    const auto listed = harness.disk.list(harness.options.directory);
    ASSERT_TRUE(listed.ok());
    for (const std::string& path : *listed) {
      const std::string name = path.substr(path.rfind('/') + 1);
      if (name.ends_with(".log")) logs.push_back(name);
    }
  }
  ASSERT_EQ(logs.size(), 2u);
  std::sort(logs.begin(), logs.end());
  const uint64_t second_start = std::stoull(logs[1].substr(0, 20));
  EXPECT_EQ(harness.disk.bytes(index).size(), second_start * 16);
}

// Under `always` too the commit is the data write alone: its index entries follow on the
// interval, and recovery finds the messages they do not reach from the .log.
TEST(PartitionLog, IndexEntriesWaitForTheIntervalUnderAlwaysToo) {
  LogOptions options;
  options.durability = Durability::always;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  const std::string index = harness.options.directory + "/00000000000000000000.index";
  ASSERT_TRUE(log.append(make_batch(2, "s", 100), 2).ok());
  harness.disk.drive_all();
  EXPECT_EQ(log.next_offset(), Offset(2));
  EXPECT_EQ(harness.disk.bytes(index).size(), 0u);  // Committed without its index entries.
  harness.advance(options.flush_interval + 1ms);
  EXPECT_EQ(harness.disk.drive_all(), 1u);  // One write for both entries.
  EXPECT_EQ(harness.disk.bytes(index).size(), 2u * 16);

  ASSERT_TRUE(log.append(make_batch(3, "t", 100), 3).ok());
  harness.disk.drive_all();
  EXPECT_EQ(log.next_offset(), Offset(5));
  harness.disk.crash([](uint64_t) { return 0; });  // What was not durable is lost.
  harness.close_log();
  harness.disk.restart();
  EXPECT_EQ(harness.reopen().next_offset(), Offset(5));  // Past the index, found in the .log.
}

TEST(PartitionLog, IntervalDurabilitySyncsOnItsTimer) {
  LogOptions options;
  options.durability = Durability::interval;
  options.sync_interval = 1s;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  ASSERT_TRUE(log.append(make_batch(3, "d"), 3).ok());
  harness.advance(options.flush_interval + 1ms);  // Timers round up to a wheel tick.
  harness.disk.drive_all();
  harness.disk.crash([](uint64_t) { return 0; });  // Lose everything not synced.
  harness.close_log();
  harness.disk.restart();
  EXPECT_EQ(harness.reopen().next_offset(), Offset(0));  // Written but never synced.

  ASSERT_TRUE(harness.log().append(make_batch(3, "d"), 3).ok());
  harness.advance(1s + 1ms);
  harness.disk.drive_all();
  harness.disk.crash([](uint64_t) { return 0; });
  harness.close_log();
  harness.disk.restart();
  EXPECT_EQ(harness.reopen().next_offset(), Offset(3));  // The sync timer made it durable.
}

TEST(PartitionLog, ReopenRecoversEveryMessageAndReadsItFromDisk) {
  LogHarness harness(small_segments());
  PartitionLog& log = harness.reopen();
  for (int i = 0; i < 5; i++)
    ASSERT_TRUE(log.append(make_batch(3, "p" + std::to_string(i)), 3).ok());
  harness.clock.advance(1s);
  harness.close_log();
  PartitionLog& reopened = harness.reopen();
  EXPECT_EQ(reopened.next_offset(), Offset(15));
  EXPECT_EQ(reopened.messages_count(), 15u);
  ReadCollector collector;
  reopened.read(Offset(4), 2, 1 << 20, collector);
  EXPECT_EQ(collector.calls, 0);  // On disk: answered from a completion.
  harness.disk.drive_all();
  EXPECT_EQ(payloads(collector), (std::vector<std::string>{"p11", "p12"}));
  // Appends continue after the recovered data, with timestamps that never go back.
  harness.clock.set_realtime(1);
  const Result<AppendResult> appended = reopened.append(make_batch(1, "new"), 1);
  EXPECT_EQ(appended->first, Offset(15));
  EXPECT_GT(appended->timestamp, 1u);
}

TEST(PartitionLog, WrittenChunksAreDroppedFromMemoryAndReadFromDisk) {
  LogOptions options;
  options.chunk_bytes = 1024;
  options.memory_bytes_max = 2048;
  options.flush_bytes = 1;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE(log.append(make_batch(1, "c" + std::to_string(i), 200), 1).ok());
    harness.disk.drive_all();
  }
  EXPECT_LE(log.memory_bytes(), 2048u);
  const ReadCollector read = harness.read(Offset(0), 1);
  ASSERT_EQ(read.messages.size(), 1u);
  EXPECT_EQ(read.messages[0].payload.substr(0, 2), "c0");
  EXPECT_TRUE(read.messages[0].checksum_ok);
  EXPECT_EQ(harness.read(Offset(19)).messages.size(), 1u);
}

TEST(PartitionLog, ViewsOutliveRetentionAndPurge) {
  LogHarness harness(small_segments());
  PartitionLog& log = harness.reopen();
  for (int i = 0; i < 4; i++) ASSERT_TRUE(log.append(make_batch(4, "v", 34), 4).ok());
  ReadCollector held = harness.read(Offset(0), 2);
  ASSERT_EQ(*log.delete_segments(10), 1u);  // Only the sealed one; the active stays.
  EXPECT_EQ(log.first_offset(), Offset(8));
  EXPECT_EQ(harness.read(Offset(0)).first, Offset(8));  // Below the first: from the first.
  ASSERT_TRUE(log.purge().ok());
  EXPECT_EQ(parse_messages(held.held.bytes()).size(), 2u);  // Still readable.
  EXPECT_EQ(parse_messages(held.held.bytes())[1].payload.substr(0, 2), "v1");
}

TEST(PartitionLog, RetentionDeletesOldAndExcessSealedSegmentsOnly) {
  LogOptions options = small_segments();
  options.retention_bytes = 2000;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  for (int i = 0; i < 8; i++) ASSERT_TRUE(log.append(make_batch(4, "k", 34), 4).ok());
  EXPECT_LE(log.size_bytes(), 2400u);  // Checked at each roll; the active segment counts.
  EXPECT_GT(log.first_offset(), Offset(0));

  LogOptions by_age = small_segments();
  by_age.retention_age = 10s;
  LogHarness aged(by_age);
  PartitionLog& old_log = aged.reopen();
  for (int i = 0; i < 4; i++) ASSERT_TRUE(old_log.append(make_batch(4, "a", 34), 4).ok());
  EXPECT_EQ(*old_log.apply_retention(), 0u);
  aged.clock.advance(11s);
  EXPECT_EQ(*old_log.apply_retention(), 1u);
  EXPECT_EQ(old_log.segments_count(), 1u);
  EXPECT_EQ(old_log.first_offset(), Offset(8));
}

TEST(PartitionLog, PurgeRestartsAtOffsetZeroAndBumpsTheEpoch) {
  LogHarness harness(small_segments());
  PartitionLog& log = harness.reopen();
  for (int i = 0; i < 3; i++) ASSERT_TRUE(log.append(make_batch(4, "q", 34), 4).ok());
  const uint64_t epoch = log.epoch();
  ASSERT_TRUE(log.purge().ok());
  EXPECT_EQ(log.epoch(), epoch + 1);
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(log.next_offset(), Offset(0));
  EXPECT_EQ(log.segments_count(), 1u);
  EXPECT_EQ(log.append(make_batch(1, "z"), 1)->first, Offset(0));
  harness.close_log();
  harness.reopen();
  EXPECT_EQ(payloads(harness.read(Offset(0))), std::vector<std::string>{"z0"});
}

TEST(PartitionLog, ASecondOpenOfTheDirectoryFails) {
  LogHarness harness(at_append());
  harness.reopen();
  EXPECT_EQ(harness.open().error(), Error::cannot_open_database);
}

}  // namespace
}  // namespace hark::storage::test
