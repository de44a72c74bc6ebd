// The notification commands (docs/wire.md §11): each golden frame of the doc decodes to the
// expected request and our encoder reproduces it byte for byte; the golden responses likewise;
// every strict prefix of a request or response fails with invalid_command (3), and each
// validation rule (min_messages 0, unknown lag watch, empty condition name, parameters or
// answers over condition_bytes_max) gets its code. The byte strings here are the doc's.
#include <gtest/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/notify_responses.h"
#include "hark/protocol/request.h"
#include "hark/tests/protocol/test_bytes.h"

namespace hark::protocol {
namespace {

using test::hex;
using test::text_bytes;
using test::to_hex;

constexpr const char* messages_frame =
    "2e000000 10270000 | 01 01 04 07000000 | 01 04 01000000 | 02 01 74 | 01 03000000 | "
    "05 0000000000000000 | 40420f0000000000 | 0a000000";
constexpr const char* lag_frame =
    "2a000000 11270000 | 02 02 01 67 | 01 04 01000000 | 01 04 02000000 | 00 00000000 | "
    "80c3c90100000000 | 01 | e803000000000000";
constexpr const char* condition_frame =
    "32000000 12270000 | 01 01 04 00000000 | 02 01 73 | 02 01 74 | 00 00000000 | "
    "0000000000000000 | 07 7374616c6c6564 | 08000000 0087930300000000";

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

// The payload of a golden frame (without its 8-byte header).
Bytes payload_of(const char* frame_hex) {
  Bytes frame = hex(frame_hex);
  frame.erase(frame.begin(), frame.begin() + 8);
  return frame;
}

Error notify_error(Command command, std::span<const std::byte> payload) {
  const Result<DecodedRequest> decoded = decode_request(command_code(command), payload);
  return decoded.ok() ? Error::ok : decoded.error();
}

// Every strict prefix of the golden payload is a truncation: invalid_command.
void expect_prefixes_fail(Command command, const char* frame_hex) {
  const Bytes payload = payload_of(frame_hex);
  ASSERT_EQ(notify_error(command, payload), Error::ok);
  for (size_t size = 0; size < payload.size(); ++size) {
    EXPECT_EQ(notify_error(command, std::span(payload).first(size)), Error::invalid_command)
        << command_name(command_code(command)) << " cut at " << size;
  }
}

TEST(NotifyCodes, AreOneExtensionRangeWithNames) {
  for (const Command command :
       {Command::wait_for_messages, Command::wait_for_lag, Command::wait_for_condition}) {
    EXPECT_GE(command_code(command), extension_code_first);
    EXPECT_LE(command_code(command), extension_code_last);
    EXPECT_TRUE(command_known(command_code(command)));
  }
  EXPECT_EQ(command_name(10000), "wait_for_messages");
  EXPECT_EQ(command_name(10001), "wait_for_lag");
  EXPECT_EQ(command_name(10002), "wait_for_condition");
}

TEST(NotifyCodes, TheOneRequestTableDecodesThem) {
  // One Request variant, one decoder table: harkd dispatches these as any other code.
  const Bytes payload = payload_of(messages_frame);
  ASSERT_TRUE(decode_request(10000, payload).ok());
  EXPECT_TRUE(
      std::holds_alternative<WaitForMessagesRequest>(decode_request(10000, payload)->request));
  EXPECT_EQ(decode_request(10099, payload).error(), Error::invalid_command);
}

TEST(NotifyGoldenFrames, WaitForMessages) {
  const Bytes frame = hex(messages_frame);
  const auto request = decode_frame<WaitForMessagesRequest>(frame);
  EXPECT_EQ(request.consumer, (Consumer{ConsumerKind::consumer, Identifier::numeric(7)}));
  EXPECT_EQ(request.stream_id, Identifier::numeric(1));
  EXPECT_EQ(request.topic_id, *Identifier::named("t"));
  EXPECT_EQ(request.partition_id, std::optional<uint32_t>(3));
  EXPECT_EQ(request.strategy.kind, PollingKind::next);
  EXPECT_EQ(request.wait_timeout_us, 1'000'000u);
  EXPECT_EQ(request.min_messages, 10u);
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(NotifyGoldenFrames, WaitForLag) {
  const Bytes frame = hex(lag_frame);
  const auto request = decode_frame<WaitForLagRequest>(frame);
  EXPECT_EQ(request.consumer, (Consumer{ConsumerKind::group, *Identifier::named("g")}));
  EXPECT_EQ(request.topic_id, Identifier::numeric(2));
  EXPECT_EQ(request.partition_id, std::nullopt);
  EXPECT_EQ(request.wait_timeout_us, 30'000'000u);
  EXPECT_EQ(request.watch, LagWatch::above);
  EXPECT_EQ(request.threshold, 1000u);
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(NotifyGoldenFrames, WaitForCondition) {
  const Bytes frame = hex(condition_frame);
  const auto request = decode_frame<WaitForConditionRequest>(frame);
  EXPECT_EQ(request.consumer.id, Identifier::numeric(0));
  EXPECT_EQ(request.stream_id, *Identifier::named("s"));
  EXPECT_EQ(request.wait_timeout_us, 0u);
  EXPECT_EQ(request.name, "stalled");
  EXPECT_EQ(to_hex(request.params), "0087930300000000");  // 60 s in µs, u64.
  EXPECT_EQ(encoded_hex(request), to_hex(frame));
}

TEST(NotifyMalformed, EveryTruncationIsInvalidCommand) {
  expect_prefixes_fail(Command::wait_for_messages, messages_frame);
  expect_prefixes_fail(Command::wait_for_lag, lag_frame);
  expect_prefixes_fail(Command::wait_for_condition, condition_frame);
}

TEST(NotifyMalformed, ZeroMinMessagesIsInvalidFormat) {
  Bytes payload = payload_of(messages_frame);
  payload[payload.size() - 4] = std::byte{0};
  EXPECT_EQ(notify_error(Command::wait_for_messages, payload), Error::invalid_format);
  WaitForMessagesRequest request;
  request.min_messages = 0;
  Bytes frame;
  EXPECT_EQ(encode_request(request, frame).error(), Error::invalid_format);
  EXPECT_TRUE(frame.empty());
}

TEST(NotifyMalformed, UnknownLagWatchIsInvalidCommand) {
  for (const uint8_t watch : {0, 3, 255}) {
    Bytes payload = payload_of(lag_frame);
    payload[payload.size() - 9] = std::byte{watch};
    EXPECT_EQ(notify_error(Command::wait_for_lag, payload), Error::invalid_command) << int(watch);
  }
}

TEST(NotifyMalformed, EmptyConditionNameIsInvalidFormat) {
  const Bytes payload = hex(
      "01 01 04 00000000 | 02 01 73 | 02 01 74 | 00 00000000 | 0000000000000000 | 00 | 00000000");
  EXPECT_EQ(notify_error(Command::wait_for_condition, payload), Error::invalid_format);
}

TEST(NotifyMalformed, OversizedParametersAreInvalidFormatBeforeTheBytes) {
  // The length is refused before the (absent) bytes are looked at.
  const Bytes over =
      hex("01 01 04 00000000 | 02 01 73 | 02 01 74 | 00 00000000 | 0000000000000000 | 01 61 | "
          "01100000");  // 4097
  EXPECT_EQ(notify_error(Command::wait_for_condition, over), Error::invalid_format);
  WaitForConditionRequest request{.name = "a"};
  request.params.assign(condition_bytes_max, std::byte{1});
  Bytes frame;
  ASSERT_TRUE(encode_request(request, frame).ok());
  EXPECT_EQ(decode_frame<WaitForConditionRequest>(frame), request);  // The bound itself is fine.
  request.params.push_back(std::byte{1});
  frame.clear();
  EXPECT_EQ(encode_request(request, frame).error(), Error::invalid_format);
}

TEST(NotifyMalformed, TrailingBytesAreAcceptedAndCounted) {
  Bytes payload = payload_of(lag_frame);
  payload.push_back(std::byte{0});
  const Result<DecodedRequest> decoded = decode_request(10001, payload);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->trailing_bytes, 1u);
}

TEST(NotifyGoldenResponses, WaitForMessagesAndItsTimeout) {
  const WaitForMessagesResponse ready{{{.partition_id = 3, .first_offset = 5, .next_offset = 15}}};
  Bytes frame;
  ASSERT_TRUE(encode_response(ready, frame).ok());
  EXPECT_EQ(to_hex(frame),
            to_hex(hex("00000000 14000000 | 03000000 0500000000000000 0f00000000000000")));
  const Bytes payload(frame.begin() + 8, frame.end());
  EXPECT_EQ(decode_payload<WaitForMessagesResponse>(payload)->value, ready);
  frame.clear();
  ASSERT_TRUE(encode_response(WaitForMessagesResponse{}, frame).ok());
  EXPECT_EQ(to_hex(frame), "0000000000000000");  // A timeout: status 0, nothing.
}

constexpr const char* lag_response =
    "0c00000000000000 | 00000000 0a00000000000000 01 0400000000000000 0500000000000000 | "
    "01000000 0700000000000000 00 0000000000000000 0700000000000000";

TEST(NotifyGoldenResponses, WaitForLag) {
  const WaitForLagResponse lag{
      .total_lag = 12,
      .partitions = {{.partition_id = 0, .next_offset = 10, .stored_offset = 4, .lag = 5},
                     {.partition_id = 1, .next_offset = 7, .stored_offset = {}, .lag = 7}}};
  Bytes payload;
  ASSERT_TRUE(encode_payload(lag, payload).ok());
  EXPECT_EQ(to_hex(payload), to_hex(hex(lag_response)));
  EXPECT_EQ(decode_payload<WaitForLagResponse>(payload)->value, lag);
  const auto timeout = decode_optional_payload<WaitForLagResponse>({});
  ASSERT_TRUE(timeout.ok());
  EXPECT_FALSE(timeout->has_value());
}

TEST(NotifyGoldenResponses, WaitForCondition) {
  const WaitForConditionResponse answer{{{.partition_id = 2, .answer = text_bytes("ok")}}};
  Bytes frame;
  ASSERT_TRUE(encode_response(answer, frame).ok());
  EXPECT_EQ(to_hex(frame), to_hex(hex("00000000 0a000000 | 02000000 02000000 6f6b")));
}

TEST(NotifyMalformedResponses, PartialEntriesAndBadFlagsFail) {
  const Bytes lag = hex(lag_response);
  for (size_t size = 1; size < lag.size(); ++size) {
    if (size == 8 || size == 37) continue;  // Whole entries: a shorter, valid answer.
    EXPECT_EQ(decode_payload<WaitForLagResponse>(std::span(lag).first(size)).error(),
              Error::invalid_command)
        << size;
  }
  Bytes flag = lag;
  flag[8 + 12] = std::byte{2};  // has_stored of the first entry.
  EXPECT_EQ(decode_payload<WaitForLagResponse>(flag).error(), Error::invalid_command);
  const Bytes ready = hex("03000000 0500000000000000 0f000000000000");  // One byte short.
  EXPECT_EQ(decode_payload<WaitForMessagesResponse>(ready).error(), Error::invalid_command);
  const Bytes big = hex("02000000 01100000");  // A 4097-byte answer.
  EXPECT_EQ(decode_payload<WaitForConditionResponse>(big).error(), Error::invalid_format);
}

}  // namespace
}  // namespace hark::protocol
