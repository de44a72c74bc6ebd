// Covers recovery at open: a torn tail is truncated, a missing or stale index is rebuilt, a
// torn sealed segment drops the segments after it, damage inside a segment is refused or
// skipped (never served), and the format file guards against unknown layouts. Files are
// damaged directly on the MemoryDisk between a close and a reopen.
#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/storage/partition_log.h"
#include "hark/storage/segment_recovery.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

namespace layout = message_layout;

class Recovery : public ::testing::Test {
 protected:
  // Writes `batches` batches of 4 messages of 100 bytes into segments of 800 bytes, closes.
  void write_log(int batches, LogOptions options = {}) {
    options.segment_bytes_max = 800;
    harness_ = std::make_unique<LogHarness>(options);
    PartitionLog& log = harness_->reopen();
    for (int i = 0; i < batches; i++) {
      ASSERT_TRUE(log.append(make_batch(4, "b" + std::to_string(i) + "-", 32), 4).ok());
    }
    harness_->close_log();
  }
  std::string path(uint64_t start, const char* suffix) {
    return harness_->options.directory + "/" + segment_file_name(Offset(start), suffix);
  }
  std::vector<std::byte>& file(uint64_t start, const char* suffix) {
    return harness_->disk.bytes(path(start, suffix));
  }
  // Every message the log serves, read one at a time from offset 0.
  std::vector<uint64_t> served_offsets() {
    std::vector<uint64_t> offsets;
    Offset next(0);
    while (next < harness_->log().next_offset()) {
      const ReadCollector read = harness_->read(next, 1);
      if (read.error != Error::ok || read.count == 0) break;
      EXPECT_TRUE(read.messages[0].checksum_ok);
      offsets.push_back(read.messages[0].offset);
      next = read.last + 1;
    }
    return offsets;
  }

  std::unique_ptr<LogHarness> harness_;
};

TEST_F(Recovery, TornTailIsTruncatedToTheLastWholeMessage) {
  write_log(3);                 // Segment 0: offsets 0..7; segment 8: offsets 8..11.
  file(8, ".log").resize(250);  // Message 10 is cut in the middle.
  PartitionLog& log = harness_->reopen();
  EXPECT_EQ(log.next_offset(), Offset(10));
  EXPECT_EQ(file(8, ".log").size(), 200u);
  EXPECT_EQ(file(8, ".index").size(), 2u * index_entry_bytes);
  EXPECT_EQ(log.append(make_batch(1, "n"), 1)->first, Offset(10));
}

// Durable writes leave pre-written zeros after the data (docs/storage-format.md §.log): the end
// is found by content. Zeros after a sealed segment are not a segment that ends early, so the
// later ones stay.
TEST_F(Recovery, TheEndIsFoundByContentWithZerosAfterIt) {
  write_log(3);  // Segment 0: offsets 0..7 (sealed); segment 8: offsets 8..11.
  const size_t sealed_bytes = file(0, ".log").size();
  const size_t active_bytes = file(8, ".log").size();
  file(0, ".log").resize(sealed_bytes + 8192);
  file(8, ".log").resize(active_bytes + 70000);
  PartitionLog& log = harness_->reopen();
  EXPECT_EQ(log.next_offset(), Offset(12));
  EXPECT_EQ(served_offsets(), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(file(0, ".log").size(), sealed_bytes);
  EXPECT_EQ(file(8, ".log").size(), active_bytes);
  EXPECT_EQ(log.append(make_batch(1, "n"), 1)->first, Offset(12));
}

TEST_F(Recovery, MissingOrStaleIndexIsRebuilt) {
  write_log(2);
  (void)harness_->disk.remove(path(0, ".index"));
  PartitionLog& log = harness_->reopen();
  EXPECT_EQ(log.next_offset(), Offset(8));
  EXPECT_EQ(file(0, ".index").size(), 8u * index_entry_bytes);
  harness_->close_log();
  file(0, ".index").resize(3 * index_entry_bytes + 5);  // Stale and partial.
  EXPECT_EQ(harness_->reopen().next_offset(), Offset(8));
  EXPECT_EQ(file(0, ".index").size(), 8u * index_entry_bytes);
  EXPECT_EQ(served_offsets().size(), 8u);
}

TEST_F(Recovery, TornSealedSegmentDropsTheSegmentsAfterIt) {
  write_log(4);  // Segments 0 (0..7) and 8 (8..15).
  file(0, ".log").resize(650);
  file(0, ".index").resize(6 * index_entry_bytes);  // Never indexed past the cut.
  PartitionLog& log = harness_->reopen();
  EXPECT_EQ(log.next_offset(), Offset(6));
  EXPECT_EQ(log.segments_count(), 1u);
  EXPECT_FALSE(harness_->disk.exists(path(8, ".log")));
  EXPECT_EQ(served_offsets(), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5}));
}

TEST_F(Recovery, IndexedDamageIsRefusedByDefault) {
  write_log(4);
  file(0, ".log")[350] ^= std::byte{1};  // Message 3's user_headers_length.
  harness_->options.verify_checksums_on_open = true;
  EXPECT_EQ(harness_->open().error(), Error::invalid_message_checksum);
}

TEST_F(Recovery, IndexedDamageIsSkippedAndNeverServedUnderSkip) {
  write_log(4);
  file(0, ".log")[380] ^= std::byte{1};  // Message 3's payload.
  harness_->options.verify_checksums_on_open = true;
  harness_->options.corruption = CorruptionPolicy::skip;
  PartitionLog& log = harness_->reopen();
  EXPECT_EQ(log.next_offset(), Offset(16));
  EXPECT_EQ(log.messages_count(), 15u);
  EXPECT_EQ(served_offsets(),
            (std::vector<uint64_t>{0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
}

TEST_F(Recovery, DamageFoundByAReadIsReportedNotServed) {
  write_log(2);
  file(0, ".log")[150] ^= std::byte{1};  // Message 1; the open scan checks only the tail.
  harness_->reopen();
  EXPECT_EQ(harness_->read(Offset(1), 1).error, Error::invalid_message_checksum);
  const ReadCollector from_zero = harness_->read(Offset(0), 8);
  EXPECT_EQ(from_zero.count, 1u);  // Served up to the damage, not past it.
}

TEST_F(Recovery, UnknownFormatVersionIsRefused) {
  write_log(1);
  const std::string format = harness_->options.directory + "/format";
  const std::string_view future = "hark-partition-log 3\n";
  harness_->disk.write_file(format, std::as_bytes(std::span(future)));
  EXPECT_EQ(harness_->open().error(), Error::invalid_version);
  (void)harness_->disk.remove(format);
  EXPECT_EQ(harness_->open().error(), Error::invalid_version);  // Segments but no version.
}

// Version 1 directories (no pre-written zeros) are read as they are and marked version 2, so a
// build that reads only version 1 refuses them from then on rather than misread the zeros.
TEST_F(Recovery, FormatVersionOneIsReadAndMarkedVersionTwo) {
  write_log(3);
  const std::string format = harness_->options.directory + "/format";
  const std::string_view v1 = "hark-partition-log 1\n";
  harness_->disk.write_file(format, std::as_bytes(std::span(v1)));
  PartitionLog& log = harness_->reopen();
  EXPECT_EQ(log.next_offset(), Offset(12));
  EXPECT_EQ(served_offsets().size(), 12u);
  const std::vector<std::byte>& marked = harness_->disk.bytes(format);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(marked.data()), marked.size()),
            "hark-partition-log 2\n");
}

TEST(SegmentScan, RandomBytesNeverYieldAMessage) {
  std::vector<std::byte> garbage(4096);
  for (size_t i = 0; i < garbage.size(); i++) garbage[i] = static_cast<std::byte>(i * 131 + 7);
  const Result<RecoveredSegment> recovered =
      scan_segment(SegmentScan{.start = Offset(0), .log_bytes = garbage.size(), .tail = garbage});
  ASSERT_TRUE(recovered.ok());
  EXPECT_TRUE(recovered->entries.empty());
  EXPECT_TRUE(recovered->torn);
  EXPECT_EQ(recovered->valid_bytes, 0u);
}

TEST(SegmentScan, DecodeIndexKeepsTheLongestValidPrefix) {
  std::vector<std::byte> bytes(4 * index_entry_bytes);
  const IndexEntry entries[] = {{0, 0, 1}, {1, 100, 2}, {1, 200, 3}, {3, 300, 4}};
  for (size_t i = 0; i < 4; i++) {
    encode_index_entry(entries[i], std::span(bytes).subspan(i * 16).first<index_entry_bytes>());
  }
  EXPECT_EQ(decode_index(bytes, 1000).size(), 2u);  // Entry 2 repeats an offset.
  EXPECT_EQ(decode_index(bytes, 150).size(), 2u);   // Entry 2 is past the end anyway.
  EXPECT_EQ(decode_index(bytes, 50).size(), 1u);
}

}  // namespace
}  // namespace hark::storage::test
