// Covers 0.8.0's send validation, check by check: each case edits one field of a valid frame
// and expects the exact Iggy code, and the order cases put two faults in one frame to pin
// which check comes first (send_messages_handler.rs, IggyMessagesBatchMut::validate).
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/send_messages.h"
#include "hark/tests/protocol/test_bytes.h"

namespace hark::protocol {
namespace {

using test::hex;
using test::text_bytes;

// Payload offsets in a frame with numeric stream and topic ids and partition_id partitioning.
constexpr size_t metadata_end = 4 + 6 + 6 + 6 + 4;
constexpr size_t count_at = metadata_end - 4;
size_t index_at(size_t i) { return metadata_end + 16 * i; }
size_t blob_at(size_t count) { return metadata_end + 16 * count; }
// Messages here have 2-byte payloads and no user headers: 66 bytes each.
constexpr size_t message_bytes = 66;
size_t message_at(size_t count, size_t i) { return blob_at(count) + message_bytes * i; }

// The payload (no frame header) of a valid send of `count` messages.
Bytes valid_payload(size_t count) {
  std::vector<Bytes> payloads(count, text_bytes("ab"));
  std::vector<OutgoingMessage> messages;
  for (const Bytes& payload : payloads) messages.push_back({.payload = payload});
  Bytes frame;
  EXPECT_TRUE(
      encode_send_messages({.partitioning = Partitioning::partition(0)}, messages, frame).ok());
  return Bytes(frame.begin() + request_header_size, frame.end());
}

void put_u32(Bytes& bytes, size_t at, uint32_t value) { std::memcpy(&bytes[at], &value, 4); }
void put_u64(Bytes& bytes, size_t at, uint64_t value) { std::memcpy(&bytes[at], &value, 8); }

Error decode_error(const Bytes& payload) {
  const Result<Decoded<SendMessagesRequest>> decoded = decode_payload<SendMessagesRequest>(payload);
  return decoded.ok() ? Error::ok : decoded.error();
}

// Replaces the metadata (everything before messages_count) with `ids_and_partitioning`.
Bytes with_metadata(const Bytes& ids_and_partitioning, uint32_t count, const Bytes& rest) {
  Bytes payload(4);
  put_u32(payload, 0, static_cast<uint32_t>(ids_and_partitioning.size() + 4));
  payload.insert(payload.end(), ids_and_partitioning.begin(), ids_and_partitioning.end());
  payload.resize(payload.size() + 4);
  put_u32(payload, payload.size() - 4, count);
  payload.insert(payload.end(), rest.begin(), rest.end());
  return payload;
}

TEST(SendValidation, ValidPayloadDecodes) { EXPECT_EQ(decode_error(valid_payload(3)), Error::ok); }

TEST(SendValidation, ShortPayloadOrMetadataIsInvalidCommand) {
  EXPECT_EQ(decode_error(hex("")), Error::invalid_command);
  EXPECT_EQ(decode_error(hex("1600")), Error::invalid_command);
  Bytes payload = valid_payload(1);
  put_u32(payload, 0, static_cast<uint32_t>(payload.size()));  // metadata_length > payload
  EXPECT_EQ(decode_error(payload), Error::invalid_command);
}

TEST(SendValidation, MalformedIdentifiersAreInvalidIdentifier) {
  const Bytes rest;  // Never reached.
  const char* cases[] = {
      "03 04 00000000 | 01 04 00000000 | 01 00",    // unknown stream kind
      "01 03 000000 | 01 04 00000000 | 01 00",      // numeric length 3
      "02 00 | 01 04 00000000 | 01 00",             // empty name
      "01 04 00000000 | 01 05 0000000000 | 01 00",  // topic numeric length 5
      "01 04 00000000 | 02 09 6162",                // topic name truncated
      "01",                                         // stream length missing
  };
  for (const char* metadata : cases) {
    EXPECT_EQ(decode_error(with_metadata(hex(metadata), 1, rest)), Error::invalid_identifier)
        << metadata;
  }
}

TEST(SendValidation, NamedIdentifiersNeedNotBeUtf8OnTheSendPath) {
  // 0.8.0's send path uses Identifier::from_raw_bytes, which does not check UTF-8.
  Bytes payload = valid_payload(1);
  const Bytes tail(payload.begin() + static_cast<std::ptrdiff_t>(count_at + 4), payload.end());
  EXPECT_EQ(
      decode_error(with_metadata(hex("02 02 fffe | 01 04 00000000 | 02 04 00000000"), 1, tail)),
      Error::ok);
}

TEST(SendValidation, MalformedPartitioningIsInvalidCommand) {
  const char* cases[] = {
      "01 04 00000000 | 01 04 00000000 | 04 00",         // unknown kind
      "01 04 00000000 | 01 04 00000000 | 01 01 00",      // balanced with a value
      "01 04 00000000 | 01 04 00000000 | 02 03 000000",  // partition id of 3 bytes
      "01 04 00000000 | 01 04 00000000 | 03 05 6162",    // key truncated
      "01 04 00000000 | 01 04 00000000",                 // partitioning missing
  };
  for (const char* metadata : cases) {
    EXPECT_EQ(decode_error(with_metadata(hex(metadata), 1, {})), Error::invalid_command)
        << metadata;
  }
}

TEST(SendValidation, EmptyMessagesKeyIsAccepted) {
  Bytes payload = valid_payload(1);
  const Bytes tail(payload.begin() + static_cast<std::ptrdiff_t>(count_at + 4), payload.end());
  EXPECT_EQ(decode_error(with_metadata(hex("01 04 00000000 | 01 04 00000000 | 03 00"), 1, tail)),
            Error::ok);
}

TEST(SendValidation, BytesAfterTheCountInsideMetadataAreIgnored) {
  Bytes payload = valid_payload(1);
  payload.insert(payload.begin() + metadata_end, {std::byte{7}, std::byte{7}});
  put_u32(payload, 0, static_cast<uint32_t>(metadata_end - 4 + 2));
  EXPECT_EQ(decode_error(payload), Error::ok);
}

TEST(SendValidation, MissingCountOrIndexTableIsInvalidCommand) {
  Bytes payload = with_metadata(hex("01 04 00000000 | 01 04 00000000 | 01 00"), 0, {});
  payload.resize(payload.size() - 4);
  put_u32(payload, 0, static_cast<uint32_t>(payload.size() - 4));
  EXPECT_EQ(decode_error(payload), Error::invalid_command);
  Bytes huge_count = valid_payload(1);
  put_u32(huge_count, count_at, UINT32_MAX);
  EXPECT_EQ(decode_error(huge_count), Error::invalid_command);
}

TEST(SendValidation, EachBatchCheckHasItsCode) {
  struct Case {
    const char* name;
    void (*edit)(Bytes&);
    Error expected;
  };
  const Case cases[] = {
      {"count 0", [](Bytes& p) { p = with_metadata(hex("01040000000001040000000001 00"), 0, {}); },
       Error::invalid_messages_count},
      {"index offset", [](Bytes& p) { put_u32(p, index_at(1), 1); }, Error::non_zero_offset},
      {"index timestamp", [](Bytes& p) { put_u64(p, index_at(2) + 8, 5); },
       Error::non_zero_timestamp},
      {"position past blob", [](Bytes& p) { put_u32(p, index_at(0) + 4, 100000); },
       Error::missing_index},
      {"slice under 64 bytes", [](Bytes& p) { put_u32(p, index_at(0) + 4, 63); },
       Error::missing_index},
      {"payload past slice", [](Bytes& p) { put_u32(p, message_at(3, 0) + 52, 3); },
       Error::missing_index},
      {"offset decreasing", [](Bytes& p) { put_u64(p, message_at(3, 0) + 24, 9); },
       Error::invalid_offset},
      {"last position decreasing", [](Bytes& p) { put_u32(p, index_at(2) + 4, 1); },
       Error::cannot_read_index_position},
      {"sizes short of blob", [](Bytes& p) { p.push_back(std::byte{0}); },
       Error::invalid_messages_size},
  };
  for (const Case& test_case : cases) {
    Bytes payload = valid_payload(3);
    test_case.edit(payload);
    EXPECT_EQ(decode_error(payload), test_case.expected) << test_case.name;
  }
}

TEST(SendValidation, OversizeUserHeadersAndPayloadAreRefused) {
  Bytes payload = valid_payload(1);
  payload.resize(payload.size() + message_user_headers_size_max + 1);
  put_u32(payload, message_at(1, 0) + 48, message_user_headers_size_max + 1);
  EXPECT_EQ(decode_error(payload), Error::too_big_user_headers);

  Bytes big = valid_payload(1);
  big.resize(big.size() + message_payload_size_max);  // The payload grows to 64 MB + 2 bytes.
  put_u32(big, message_at(1, 0) + 52, message_payload_size_max + 2);
  EXPECT_EQ(decode_error(big), Error::too_big_message_payload);
}

TEST(SendValidation, IndexChecksComeBeforeMessageChecksOfTheSameMessage) {
  Bytes payload = valid_payload(3);
  put_u64(payload, index_at(1) + 8, 1);          // index 1: timestamp
  put_u32(payload, message_at(3, 1) + 52, 500);  // message 1: payload past its slice
  EXPECT_EQ(decode_error(payload), Error::non_zero_timestamp);
}

TEST(SendValidation, EarlierMessagesAreCheckedFirst) {
  Bytes payload = valid_payload(3);
  put_u32(payload, message_at(3, 0) + 52, 500);  // message 0: payload past its slice
  put_u32(payload, index_at(2), 1);              // index 2: offset
  EXPECT_EQ(decode_error(payload), Error::missing_index);
}

TEST(SendValidation, LastIndexPositionDoesNotBoundTheLastMessage) {
  // 0.8.0 ends the last message at the blob's end, not at its index position.
  Bytes payload = valid_payload(2);
  put_u32(payload, index_at(1) + 4, static_cast<uint32_t>(message_bytes + 1));
  EXPECT_EQ(decode_error(payload), Error::ok);
}

}  // namespace
}  // namespace hark::protocol
