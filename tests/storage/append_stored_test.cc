// Covers PartitionLog::append_stored, the copy of another log's stored messages (a move's copy
// to the new owner, docs/cluster.md §Moves): the bytes a source log reads back are appended
// byte for byte (offsets, timestamps, ids, checksums kept), only at the log's end (a gap, an
// overlap, a damaged or reordered message is refused and changes nothing), an empty log starts
// at the source's first retained offset, the copy commits per durability like a send, and a
// restart recovers it as the log's own segments. Source and copy are two logs on MemoryDisks.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

using namespace std::chrono_literals;
namespace layout = message_layout;

LogOptions small_segments(Durability durability = Durability::memory) {
  LogOptions options;
  options.durability = durability;
  options.segment_bytes_max = 1000;
  options.chunk_bytes = 512;
  return options;
}

std::vector<std::byte> bytes_of(const ReadCollector& read) {
  const std::span<const std::byte> bytes = read.held.bytes();
  return {bytes.begin(), bytes.end()};
}

// Copies everything `source` holds from `from` into `copy`, one read (a fetch) at a time.
void copy_all(LogHarness& source, PartitionLog& copy, Offset from) {
  while (from < source.log().next_offset()) {
    ReadCollector read = source.read(from, 1000, 1 << 20);
    ASSERT_GT(read.count, 0u);
    const Result<AppendResult> appended = copy.append_stored(read.held.bytes(), read.count);
    ASSERT_TRUE(appended.ok()) << error_name(appended.error());
    ASSERT_EQ(appended->first, from);
    from = read.last + 1;
  }
}

// The whole log's bytes from `from`, read until its end.
std::vector<std::byte> everything(LogHarness& log, Offset from) {
  std::vector<std::byte> out;
  while (from < log.log().next_offset()) {
    ReadCollector read = log.read(from, 1000, 1 << 20);
    if (read.count == 0) break;
    const std::vector<std::byte> bytes = bytes_of(read);
    out.insert(out.end(), bytes.begin(), bytes.end());
    from = read.last + 1;
  }
  return out;
}

// A source of `batches` batches of two messages stamped at as many times, ids assigned and sent.
void fill_source(LogHarness& source, int batches = 6) {
  PartitionLog& log = source.reopen();
  for (int i = 0; i < batches; i++) {
    source.clock.advance(1s);
    ASSERT_TRUE(log.append(make_batch({{.payload = std::string(100, 'a') + std::to_string(i)},
                                       {.payload = "bb", .user_headers = "hh", .id_low = 7u + i}}),
                           2)
                    .ok());
  }
}

TEST(AppendStored, TheCopyHoldsTheSourcesBytesAtTheSameOffsets) {
  LogHarness source(small_segments());
  fill_source(source);
  LogHarness copy(small_segments());
  copy.clock.advance(100s);  // The copy's own clock stamps nothing.
  PartitionLog& log = copy.reopen();
  copy_all(source, log, Offset(0));
  EXPECT_EQ(log.next_offset(), source.log().next_offset());
  EXPECT_EQ(log.last_timestamp(), source.log().last_timestamp());
  EXPECT_EQ(everything(copy, Offset(0)), everything(source, Offset(0)));
  const auto found = log.offset_for_timestamp(source.read(Offset(4)).messages[0].timestamp);
  EXPECT_EQ(found.value(), Offset(4));
  // Sends after the copy continue at its end.
  EXPECT_EQ(log.append(make_batch(1, "new"), 1)->first, Offset(12));
}

TEST(AppendStored, AnEmptyLogStartsAtTheSourcesFirstRetainedOffset) {
  LogHarness source(small_segments());
  fill_source(source);
  ASSERT_GT(source.log().delete_segments(1).value(), 0u);
  const Offset first = source.log().first_offset();
  ASSERT_GT(first, Offset(0));
  LogHarness copy(small_segments());
  PartitionLog& log = copy.reopen();
  copy_all(source, log, first);
  EXPECT_EQ(log.first_offset(), first);
  EXPECT_EQ(log.next_offset(), source.log().next_offset());
  EXPECT_EQ(everything(copy, Offset(0)), everything(source, Offset(0)));
}

TEST(AppendStored, AGapAnOverlapOrDamageIsRefusedAndChangesNothing) {
  LogHarness source(small_segments());
  fill_source(source);
  LogHarness copy(small_segments());
  PartitionLog& log = copy.reopen();
  ReadCollector head = source.read(Offset(0), 4);
  ASSERT_EQ(head.count, 4u);
  ASSERT_TRUE(log.append_stored(head.held.bytes(), 4).ok());
  const std::vector<std::byte> before = everything(copy, Offset(0));
  ReadCollector gap = source.read(Offset(5), 1);
  EXPECT_EQ(log.append_stored(gap.held.bytes(), 1).error(), Error::invalid_offset);
  ReadCollector overlap = source.read(Offset(3), 1);
  EXPECT_EQ(log.append_stored(overlap.held.bytes(), 1).error(), Error::invalid_offset);
  ReadCollector next_read = source.read(Offset(4), 2);
  ASSERT_EQ(next_read.count, 2u);
  const std::vector<std::byte> next = bytes_of(next_read);
  std::vector<std::byte> damaged = next;
  damaged[layout::header_bytes] ^= std::byte{1};  // The payload's first byte.
  EXPECT_EQ(log.append_stored(damaged, 2).error(), Error::invalid_message_checksum);
  EXPECT_EQ(log.append_stored(next, 3).error(), Error::invalid_messages_size);
  EXPECT_EQ(log.append_stored(std::span(next).first(next.size() - 1), 2).error(),
            Error::invalid_messages_size);
  EXPECT_EQ(log.append_stored(next, 0).error(), Error::invalid_messages_count);
  // A client's send is no stored batch: its offsets and checksums are not stamped.
  EXPECT_EQ(log.append_stored(make_batch(1, "raw"), 1).error(), Error::invalid_message_checksum);
  EXPECT_EQ(log.next_offset(), Offset(4));
  EXPECT_EQ(everything(copy, Offset(0)), before);
  EXPECT_TRUE(log.append_stored(next, 2).ok());
  EXPECT_EQ(log.next_offset(), Offset(6));
}

TEST(AppendStored, TheCopyCommitsOnlyOnceWrittenUnderWrite) {
  LogHarness source(small_segments());
  fill_source(source);
  LogHarness copy(small_segments(Durability::write));
  PartitionLog& log = copy.reopen();
  ReadCollector head = source.read(Offset(0), 2);
  ASSERT_EQ(head.count, 2u);
  ASSERT_TRUE(log.append_stored(head.held.bytes(), 2).ok());
  EXPECT_EQ(log.next_offset(), Offset(0));  // Not written yet: not readable.
  EXPECT_EQ(copy.read(Offset(0)).count, 0u);
  ASSERT_TRUE(log.flush(false).ok());
  EXPECT_EQ(log.next_offset(), Offset(2));
}

TEST(AppendStored, ARestartRecoversTheCopyAsTheLogsOwnSegments) {
  LogHarness source(small_segments());
  fill_source(source, 16);
  ASSERT_TRUE(source.log().delete_segments(1).ok());
  const Offset first = source.log().first_offset();
  LogHarness copy(small_segments(Durability::write));
  copy_all(source, copy.reopen(), first);
  ASSERT_TRUE(copy.log().flush(true).ok());
  copy.close_log();
  PartitionLog& reopened = copy.reopen();
  EXPECT_GT(reopened.segments_count(), 1u);
  EXPECT_EQ(reopened.first_offset(), first);
  EXPECT_EQ(reopened.next_offset(), source.log().next_offset());
  EXPECT_EQ(reopened.last_timestamp(), source.log().last_timestamp());
  EXPECT_EQ(everything(copy, Offset(0)), everything(source, Offset(0)));
}

// A file's bytes as the disk holds them.
std::vector<std::byte> file_bytes(LogHarness& harness, const std::string& name) {
  auto file = harness.disk.open(harness.options.directory + "/" + name, false);
  EXPECT_TRUE(file.ok()) << name;
  if (!file.ok()) return {};
  std::vector<std::byte> bytes(static_cast<size_t>((*file)->size().value()));
  EXPECT_TRUE((*file)->read_now(bytes, 0).ok());
  return bytes;
}

std::vector<std::string> log_files(LogHarness& harness) {
  std::vector<std::string> names = harness.disk.list(harness.options.directory).value();
  std::erase_if(names, [](const std::string& name) { return !name.ends_with(".log"); });
  std::sort(names.begin(), names.end());
  return names;
}

// Copies as a follower's fetches do (three messages a fetch), naming the source's sealed
// segment each read comes from.
void copy_with_segments(LogHarness& source, PartitionLog& copy, Offset from) {
  while (from < source.log().next_offset()) {
    const std::optional<SegmentBounds> sealed = source.log().sealed_segment_at(from);
    ReadCollector read = source.read(from, 3, 1 << 20);
    ASSERT_GT(read.count, 0u);
    const Result<AppendResult> appended = copy.append_stored(read.held.bytes(), read.count, sealed);
    ASSERT_TRUE(appended.ok()) << error_name(appended.error());
    from = read.last + 1;
  }
}

TEST(AppendStored, ASourcesSealedSegmentsAreCopiedAsTheSameFiles) {
  LogHarness source(small_segments(Durability::write));
  fill_source(source, 16);
  ASSERT_TRUE(source.log().flush(true).ok());
  ASSERT_GT(source.log().segments_count(), 3u);
  ASSERT_FALSE(source.log().sealed_segment_at(source.log().appended_end()).has_value());
  // The copy's own segments would be smaller, and one is started before the copy begins (a
  // follower that holds a head of the log).
  LogOptions options = small_segments(Durability::write);
  options.segment_bytes_max = 300;
  LogHarness copy(options);
  PartitionLog& log = copy.reopen();
  ReadCollector head = source.read(Offset(0), 1);
  ASSERT_TRUE(log.append_stored(head.held.bytes(), 1).ok());
  copy_with_segments(source, log, Offset(1));
  ASSERT_TRUE(log.flush(true).ok());
  EXPECT_EQ(everything(copy, Offset(0)), everything(source, Offset(0)));
  // Every segment the source sealed is the copy's, byte for byte, index included; after them
  // (the source's active segment) the copy rolls at its own size.
  std::vector<std::string> names = log_files(source);
  names.pop_back();
  const std::vector<std::string> copied = log_files(copy);
  ASSERT_GT(copied.size(), names.size() + 1);
  EXPECT_EQ(std::vector(copied.begin(), copied.begin() + std::ssize(names)), names);
  for (const std::string& name : names) {
    EXPECT_EQ(file_bytes(copy, name), file_bytes(source, name)) << name;
    const std::string index = name.substr(0, name.size() - 4) + ".index";
    EXPECT_EQ(file_bytes(copy, index), file_bytes(source, index)) << index;
  }
  // A restart reads the same segments; sends go on at the end.
  copy.close_log();
  PartitionLog& reopened = copy.reopen();
  EXPECT_EQ(reopened.segments_count(), copied.size());
  EXPECT_EQ(everything(copy, Offset(0)), everything(source, Offset(0)));
  EXPECT_TRUE(reopened.append(make_batch(1, "next"), 1).ok());
}

TEST(AppendStored, ABatchOutsideItsSourceSegmentIsRefused) {
  LogHarness source(small_segments());
  fill_source(source, 16);
  const std::optional<SegmentBounds> first = source.log().sealed_segment_at(Offset(0));
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->start, Offset(0));
  const std::optional<SegmentBounds> second = source.log().sealed_segment_at(first->end);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->start, first->end);
  LogHarness copy(small_segments());
  PartitionLog& log = copy.reopen();
  ReadCollector head = source.read(Offset(0), 1);
  EXPECT_EQ(log.append_stored(head.held.bytes(), 1, second).error(), Error::invalid_offset);
  EXPECT_EQ(log.next_offset(), Offset(0));
  EXPECT_TRUE(log.append_stored(head.held.bytes(), 1, first).ok());
}

}  // namespace
}  // namespace hark::storage::test
