// The golden frames of the wire fact sheet (protocol.md §1.12, captured from the Node SDK
// 0.8.0: login, create stream, create topic, send 2 messages, poll, delete stream) and the
// examples in Iggy's own sources: each decodes to the expected request, and our encoder
// reproduces it byte for byte. Also pins response layouts whose quirks a round trip cannot
// catch (offsets of the stats fields, the get_user "no permissions" encoding).
#include <gtest/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/request.h"
#include "hark/protocol/stream_responses.h"
#include "hark/protocol/system_responses.h"
#include "hark/protocol/user_responses.h"
#include "hark/tests/protocol/test_bytes.h"

namespace hark::protocol {
namespace {

using test::hex;
using test::text_bytes;
using test::to_hex;

// Scans `frame` as a server would and decodes the one request in it.
template <typename T>
T decode_frame(const Bytes& frame) {
  const FrameScan scan = scan_request(frame, FrameLimits{});
  EXPECT_EQ(scan.state, FrameState::ready);
  EXPECT_EQ(scan.frame_size, frame.size());
  EXPECT_EQ(scan.code, command_code(T::code));
  Result<DecodedRequest> decoded = decode_request(scan.code, scan.payload);
  EXPECT_TRUE(decoded.ok()) << error_name(decoded.error());
  if (!decoded.ok()) return T{};
  EXPECT_EQ(decoded->trailing_bytes, 0u);
  EXPECT_TRUE(std::holds_alternative<T>(decoded->request));
  return std::get<T>(std::move(decoded->request));
}

template <typename T>
std::string encoded_hex(const T& request) {
  Bytes frame;
  EXPECT_TRUE(encode_request(request, frame).ok());
  return to_hex(frame);
}

TEST(GoldenFrames, LoginUserFromNodeSdk) {
  const Bytes frame = hex("16000000 26000000 | 04 69676779 04 69676779 00000000 00000000");
  const auto request = decode_frame<LoginUserRequest>(frame);
  EXPECT_EQ(request.username, "iggy");
  EXPECT_EQ(request.password, "iggy");
  EXPECT_EQ(request.version, "");
  EXPECT_EQ(request.context, "");
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(GoldenFrames, LoginUserWithVersionFromRustSdk) {
  // The Rust SDK 0.10.0 sends version "0.10.0" and an empty context.
  const LoginUserRequest request{.username = "u", .password = "p", .version = "0.10.0"};
  EXPECT_EQ(encoded_hex(request),
            to_hex(hex("16000000 26000000 | 0175 0170 06000000 302e31302e30 00000000")));
}

TEST(GoldenFrames, CreateStreamFromNodeSdk) {
  Bytes frame = hex("10000000 ca000000 | 0b");
  const Bytes name = text_bytes("demo-stream");
  frame.insert(frame.end(), name.begin(), name.end());
  const auto request = decode_frame<CreateStreamRequest>(frame);
  EXPECT_EQ(request.name, "demo-stream");
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(GoldenFrames, CreateTopicFromNodeSdk) {
  Bytes frame =
      hex("2b000000 2e010000 | 01 04 00000000 | 01000000 | 01 | 0000000000000000 | "
          "0000000000000000 | 01 | 0a");
  const Bytes name = text_bytes("demo-topic");
  frame.insert(frame.end(), name.begin(), name.end());
  const auto request = decode_frame<CreateTopicRequest>(frame);
  EXPECT_EQ(request.stream_id, Identifier::numeric(0));
  EXPECT_EQ(request.partitions_count, 1u);
  EXPECT_EQ(request.compression_algorithm, 1u);
  EXPECT_EQ(request.message_expiry, 0u);
  EXPECT_EQ(request.max_topic_size, 0u);
  EXPECT_EQ(request.replication_factor, 1u);
  EXPECT_EQ(request.name, "demo-topic");
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(GoldenFrames, PollFromNodeSdk) {
  const Bytes frame =
      hex("2a000000 64000000 | 01 01 04 00000000 | 01 04 00000000 | 01 04 00000000 | 01 00000000 | "
          "01 0000000000000000 | 0a000000 | 01");
  const auto request = decode_frame<PollMessagesRequest>(frame);
  EXPECT_EQ(request.consumer.kind, ConsumerKind::consumer);
  EXPECT_EQ(request.consumer.id, Identifier::numeric(0));
  EXPECT_EQ(request.stream_id, Identifier::numeric(0));
  EXPECT_EQ(request.topic_id, Identifier::numeric(0));
  EXPECT_EQ(request.partition_id, std::optional<uint32_t>(0));
  EXPECT_EQ(request.strategy, (PollingStrategy{PollingKind::offset, 0}));
  EXPECT_EQ(request.count, 10u);
  EXPECT_TRUE(request.auto_commit);
  EXPECT_EQ(request.wait_timeout_us, std::nullopt);  // A classic poll: no field on the wire.
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(GoldenFrames, PollNextFromIggyWireNotes) {
  const Bytes frame =
      hex("2a000000 64000000 | 01 01 04 01000000 | 01 04 01000000 | 01 04 01000000 | 01 00000000 | "
          "05 0000000000000000 | 0a000000 | 01");
  const auto request = decode_frame<PollMessagesRequest>(frame);
  EXPECT_EQ(request.consumer.id, Identifier::numeric(1));
  EXPECT_EQ(request.strategy.kind, PollingKind::next);
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(GoldenFrames, PollWithWaitTimeoutAppendsTheExtensionField) {
  PollMessagesRequest request;
  request.count = 1;
  request.wait_timeout_us = 1'500'000;
  Bytes frame;
  ASSERT_TRUE(encode_request(request, frame).ok());
  // 38-byte classic payload + 8 bytes: length 4 + 46 = 50.
  EXPECT_EQ(to_hex(std::span(frame).first(8)), to_hex(hex("32000000 64000000")));
  EXPECT_EQ(to_hex(std::span(frame).last(8)), to_hex(hex("60e3160000000000")));
  EXPECT_EQ(decode_frame<PollMessagesRequest>(frame), request);
}

TEST(GoldenFrames, DeleteStreamFromNodeSdk) {
  const Bytes frame = hex("0a000000 cb000000 | 01 04 00000000");
  const auto request = decode_frame<DeleteStreamRequest>(frame);
  EXPECT_EQ(request.stream_id, Identifier::numeric(0));
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(GoldenFrames, NamedIdentifierLayout) {
  const GetStreamRequest request{.stream_id = *Identifier::named("demo")};
  EXPECT_EQ(encoded_hex(request), to_hex(hex("0a000000 c8000000 | 02 04 64656d6f")));
}

TEST(GoldenResponses, ErrorResponseHasStatusAndZeroLength) {
  EXPECT_EQ(to_hex(error_response(Error::stream_id_not_found)), "f103000000000000");
  EXPECT_EQ(to_hex(ok_response_header(0)), "0000000000000000");
}

TEST(GoldenResponses, CreateStreamResponseLayout) {
  const StreamResponse stream{.id = 0, .created_at = 0x0102030405060708, .name = "demo"};
  Bytes frame;
  ASSERT_TRUE(encode_response(stream, frame).ok());
  EXPECT_EQ(to_hex(frame), to_hex(hex("00000000 25000000 | 00000000 0807060504030201 00000000 "
                                      "0000000000000000 0000000000000000 04 64656d6f")));
}

TEST(GoldenResponses, UserWithoutPermissionsEndsInFourZeroBytes) {
  const UserDetailsResponse user{
      .user = {.id = 0, .created_at = 1, .status = 1, .username = "iggy"}};
  Bytes payload;
  ASSERT_TRUE(encode_payload(user, payload).ok());
  EXPECT_EQ(to_hex(payload), to_hex(hex("00000000 0100000000000000 01 04 69676779 | 00000000")));
}

TEST(GoldenResponses, UserWithPermissionsHasFlagLengthAndBlob) {
  UserDetailsResponse user{.user = {.id = 3, .created_at = 0, .status = 2, .username = "bob"}};
  user.permissions = Permissions{};
  user.permissions->global.read_streams = true;
  Bytes payload;
  ASSERT_TRUE(encode_payload(user, payload).ok());
  EXPECT_EQ(to_hex(payload), to_hex(hex("03000000 0000000000000000 02 03 626f62 | 01 0b000000 | "
                                        "00 00 00 00 00 01 00 00 00 00 | 00")));
}

TEST(GoldenResponses, StatsStringsStartAtByte108) {
  StatsResponse stats;
  stats.consumer_groups_count = 0xAABBCCDD;
  stats.hostname = "h";
  Bytes payload;
  ASSERT_TRUE(encode_payload(stats, payload).ok());
  EXPECT_EQ(load_u32(payload, 104), 0xAABBCCDDu);
  EXPECT_EQ(load_u32(payload, 108), 1u);  // hostname length
  EXPECT_EQ(std::to_integer<char>(payload[112]), 'h');
  // 108 + 5 strings (4 + 1 + 4 × 4) + semver 4 + metrics count 4 + threads 4 + disks 16.
  EXPECT_EQ(payload.size(), 108u + 21u + 4u + 4u + 4u + 16u);
}

TEST(GoldenResponses, PollResponsePrefixIsFrameHeaderThenPollHeader) {
  const PollResponseHeader header{.partition_id = 2, .current_offset = 9, .messages_count = 3};
  EXPECT_EQ(to_hex(poll_response_prefix(header, 300)),
            to_hex(hex("00000000 3c010000 | 02000000 0900000000000000 03000000")));
}

}  // namespace
}  // namespace hark::protocol
