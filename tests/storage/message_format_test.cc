// Covers batch validation (each Iggy code), stamping (offsets, ids only when 0, checksum over
// [8, end)), stored-message checks and segment file names.
#include "hark/storage/message_format.h"

#include <gtest/gtest.h>

#include "hark/storage/segment_format.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

namespace layout = message_layout;

TEST(MessageFormat, ValidBatchReportsItsSize) {
  const auto batch = make_batch({{.payload = "abc", .user_headers = "hh"}, {.payload = ""}});
  EXPECT_EQ(*validate_batch(batch, 2), batch.size());
}

TEST(MessageFormat, StampingSetsServerFieldsAndKeepsProducerOnes) {
  auto batch = make_batch(
      {{.payload = "x", .id_low = 0, .origin_timestamp = 5}, {.payload = "y", .id_low = 9}});
  IdGenerator ids;
  std::vector<std::pair<uint64_t, size_t>> indexed;
  stamp_batch(batch, 2, Offset(40), 1234, ids,
              [&](Offset offset, size_t at) { indexed.emplace_back(offset.value(), at); });
  EXPECT_EQ(indexed, (std::vector<std::pair<uint64_t, size_t>>{{40, 0}, {41, 65}}));
  const std::span<const std::byte> first(batch.data(), 65);
  EXPECT_EQ(load_u64(first, layout::offset), 40u);
  EXPECT_EQ(load_u64(first, layout::timestamp), 1234u);
  EXPECT_EQ(load_u64(first, layout::origin_timestamp), 5u);
  const uint64_t high = load_u64(first, layout::id + 8);
  EXPECT_EQ((high >> 12) & 0xF, 4u);  // UUID version 4.
  EXPECT_EQ(load_u64(std::span<const std::byte>(batch).subspan(65), layout::id), 9u);
  EXPECT_EQ(check_stored_message(batch, 0, Offset(40)).check, MessageCheck::ok);
  EXPECT_EQ(check_stored_message(batch, 65, Offset(41)).offset, Offset(41));
  EXPECT_EQ(check_stored_message(batch, 65, Offset(42)).check, MessageCheck::corrupt);
  batch[70] ^= std::byte{0x20};
  EXPECT_EQ(check_stored_message(batch, 65, Offset(41)).check, MessageCheck::corrupt);
  EXPECT_EQ(check_stored_message(std::span(batch).first(100), 65, Offset(41)).check,
            MessageCheck::incomplete);
}

TEST(MessageFormat, IdsDiffer) {
  IdGenerator ids;
  std::array<std::byte, 16> a{}, b{};
  ids.next(a);
  ids.next(b);
  EXPECT_NE(a, b);
}

TEST(SegmentFormat, FileNamesRoundTrip) {
  EXPECT_EQ(segment_file_name(Offset(1234), ".log"), "00000000000000001234.log");
  EXPECT_EQ(parse_log_file_name("00000000000000001234.log"), Offset(1234));
  EXPECT_FALSE(parse_log_file_name("00000000000000001234.index").has_value());
  EXPECT_FALSE(parse_log_file_name("0000000000000000123x.log").has_value());
  EXPECT_FALSE(parse_log_file_name("99999999999999999999.log").has_value());  // Overflows.
}

}  // namespace
}  // namespace hark::storage::test
