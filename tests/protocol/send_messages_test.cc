// Covers send_messages: the golden send frame of protocol.md §1.12, the client encoder, the
// zero-copy views the decoder returns, and 0.8.0's validation, check by check, in its order and
// with its codes. Malformed batches are made by editing one field of a valid frame.
#include "hark/protocol/send_messages.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/request.h"
#include "hark/tests/protocol/generators.h"
#include "hark/tests/protocol/test_bytes.h"

namespace hark::protocol {
namespace {

using test::hex;
using test::text_bytes;
using test::to_hex;

constexpr size_t frame_header = request_header_size;

struct Batch {
  std::vector<Bytes> payloads;
  std::vector<Bytes> headers;
  std::vector<OutgoingMessage> messages;
};

// `count` messages with payload "m<i>" and no user headers, ids 1..count.
Batch make_batch(size_t count) {
  Batch batch;
  for (size_t i = 0; i < count; ++i) batch.payloads.push_back(text_bytes("m" + std::to_string(i)));
  batch.headers.resize(count);
  for (size_t i = 0; i < count; ++i) {
    batch.messages.push_back({.id = {i + 1, 0},
                              .origin_timestamp = 1000 + i,
                              .payload = batch.payloads[i],
                              .user_headers = batch.headers[i]});
  }
  return batch;
}

Bytes encode_frame(const SendTarget& target, const Batch& batch) {
  Bytes frame;
  EXPECT_TRUE(encode_send_messages(target, batch.messages, frame).ok());
  return frame;
}

const SendTarget default_target{.stream_id = Identifier::numeric(0),
                                .topic_id = Identifier::numeric(0),
                                .partitioning = Partitioning::partition(0)};

Result<SendMessagesRequest> decode_send(std::span<const std::byte> payload) {
  HARK_TRY_ASSIGN(Decoded<SendMessagesRequest> decoded,
                  decode_payload<SendMessagesRequest>(payload));
  return decoded.value;
}

// The payload of a frame (what decode sees).
std::span<std::byte> payload_of(Bytes& frame) { return std::span(frame).subspan(frame_header); }

// In a frame for default_target: payload offsets of the index table and the messages blob.
constexpr size_t metadata_end = 4 + 6 + 6 + 6 + 4;
size_t index_at(size_t i) { return metadata_end + 16 * i; }
size_t blob_at(size_t count) { return metadata_end + 16 * count; }

TEST(SendMessages, GoldenFrameFromNodeSdkDecodesAndReencodes) {
  // Two 5-byte payloads: index end positions 69 (0x45) and 138 (0x8a).
  std::string expected_hex = to_hex(
      hex("c8000000 65000000 | 16000000 | 01 04 00000000 | 01 04 00000000 | 02 04 00000000 | "
          "02000000 | 00000000 45000000 0000000000000000 | 00000000 8a000000 0000000000000000"));
  const Bytes hello = text_bytes("hello");
  const Bytes world = text_bytes("world");
  // Each header: checksum 0, id, offset 0, timestamp 0, origin (ms, as the Node SDK writes it),
  // user headers 0, payload 5, reserved 0.
  expected_hex += to_hex(
      hex("0000000000000000 0100000000000000 0000000000000000 0000000000000000 0000000000000000 "
          "0068e5cf8b010000 00000000 05000000 0000000000000000"));
  expected_hex += to_hex(hello);
  expected_hex += to_hex(
      hex("0000000000000000 0200000000000000 0000000000000000 0000000000000000 0000000000000000 "
          "0068e5cf8b010000 00000000 05000000 0000000000000000"));
  expected_hex += to_hex(world);
  const std::vector<OutgoingMessage> messages = {
      {.id = {1, 0}, .origin_timestamp = 1700000000000, .payload = hello},
      {.id = {2, 0}, .origin_timestamp = 1700000000000, .payload = world}};
  Bytes frame;
  ASSERT_TRUE(encode_send_messages(default_target, messages, frame).ok());
  ASSERT_EQ(to_hex(frame), expected_hex);

  const Result<SendMessagesRequest> request = decode_send(payload_of(frame));
  ASSERT_TRUE(request.ok()) << error_name(request.error());
  EXPECT_EQ(request->stream_id, Identifier::numeric(0));
  EXPECT_EQ(request->partitioning, Partitioning::partition(0));
  ASSERT_EQ(request->messages.count(), 2u);
  std::vector<std::string> payloads;
  for (const MessageView message : request->messages) {
    payloads.emplace_back(as_chars(message.payload()));
    EXPECT_EQ(message.origin_timestamp(), 1700000000000u);
    EXPECT_EQ(message.payload_length(), 5u);
    EXPECT_TRUE(message.user_headers().empty());
  }
  EXPECT_EQ(payloads, (std::vector<std::string>{"hello", "world"}));
  Bytes reencoded;
  ASSERT_TRUE(encode_request(*request, reencoded).ok());
  EXPECT_EQ(to_hex(reencoded), expected_hex);
}

TEST(SendMessages, DecodedViewsPointIntoTheReceivedBytes) {
  const Batch batch = make_batch(3);
  Bytes frame = encode_frame(default_target, batch);
  const Result<SendMessagesRequest> request = decode_send(payload_of(frame));
  ASSERT_TRUE(request.ok());
  const std::byte* begin = frame.data();
  const std::byte* end = frame.data() + frame.size();
  EXPECT_EQ(request->indexes.data(), begin + frame_header + index_at(0));
  EXPECT_EQ(request->messages.bytes().data(), begin + frame_header + blob_at(3));
  size_t seen = 0;
  for (const MessageView message : request->messages) {
    EXPECT_GE(message.payload().data(), begin);
    EXPECT_LE(message.payload().data() + message.payload().size(), end);
    EXPECT_EQ(message.id(), (MessageId{seen + 1, 0}));
    ++seen;
  }
  EXPECT_EQ(seen, 3u);
}

TEST(SendMessages, MessagesKeyAndNamedIdsRoundTrip) {
  const Bytes key = text_bytes("customer-42");
  const SendTarget target{.stream_id = *Identifier::named("orders"),
                          .topic_id = *Identifier::named("eu"),
                          .partitioning = *Partitioning::messages_key(key)};
  Bytes frame = encode_frame(target, make_batch(2));
  const Result<SendMessagesRequest> request = decode_send(payload_of(frame));
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->stream_id.name(), "orders");
  EXPECT_EQ(request->topic_id.name(), "eu");
  EXPECT_EQ(request->partitioning.kind(), PartitioningKind::messages_key);
  EXPECT_EQ(to_hex(request->partitioning.key()), to_hex(key));
}

TEST(SendMessages, EncoderRefusesWhatTheServerWouldRefuseForSize) {
  Bytes out = text_bytes("keep");
  EXPECT_EQ(encode_send_messages(default_target, {}, out).error(), Error::invalid_messages_count);
  const Bytes headers(message_user_headers_size_max + 1);
  const OutgoingMessage too_many_headers{.user_headers = headers};
  EXPECT_EQ(encode_send_messages(default_target, {&too_many_headers, 1}, out).error(),
            Error::too_big_user_headers);
  EXPECT_EQ(to_hex(out), to_hex(text_bytes("keep")));
}

}  // namespace
}  // namespace hark::protocol
