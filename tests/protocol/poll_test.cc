// Covers poll_messages: the optional trailing wait_timeout_us (absent → 0, partial → 4, extra
// bytes → trailing), and the poll response: the zero-copy prefix a server sends before stored
// messages, and the client decoder's message views (a round-trip property over random
// messages, plus cut and padded responses).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/hash.h"
#include "hark/protocol/message_requests.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/request.h"
#include "hark/tests/protocol/generators.h"
#include "hark/tests/protocol/test_bytes.h"

namespace hark::protocol {
namespace {

using test::hex;
using test::text_bytes;
using test::to_hex;

const char* const classic_poll =
    "01 01 04 00000000 | 01 04 00000000 | 01 04 00000000 | 01 00000000 | "
    "01 0000000000000000 | 0a000000 | 01";

Result<DecodedRequest> decode_poll(const Bytes& payload) {
  return decode_request(command_code(Command::poll_messages), payload);
}

TEST(PollWaitTimeout, AbsentFieldIsAClassicPoll) {
  const Result<DecodedRequest> decoded = decode_poll(hex(classic_poll));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(std::get<PollMessagesRequest>(decoded->request).wait_timeout_us, std::nullopt);
  EXPECT_EQ(decoded->trailing_bytes, 0u);
}

TEST(PollWaitTimeout, PartialFieldIsInvalidFormat) {
  for (size_t extra = 1; extra < 8; ++extra) {
    Bytes payload = hex(classic_poll);
    payload.resize(payload.size() + extra, std::byte{1});
    EXPECT_EQ(decode_poll(payload).error(), Error::invalid_format) << extra << " bytes";
  }
}

TEST(PollWaitTimeout, FullFieldIsReadAndLaterBytesAreTrailing) {
  Bytes payload = hex(classic_poll);
  const Bytes wait = hex("40420f0000000000");  // 1 s
  payload.insert(payload.end(), wait.begin(), wait.end());
  const Result<DecodedRequest> exact = decode_poll(payload);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(std::get<PollMessagesRequest>(exact->request).wait_timeout_us, 1'000'000u);
  EXPECT_EQ(exact->trailing_bytes, 0u);

  payload.push_back(std::byte{0xee});
  payload.push_back(std::byte{0xee});
  const Result<DecodedRequest> extra = decode_poll(payload);
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(std::get<PollMessagesRequest>(extra->request).wait_timeout_us, 1'000'000u);
  EXPECT_EQ(extra->trailing_bytes, 2u);
}

TEST(PollWaitTimeout, NoWaitIsNotSentSoClassicServersSeeClassicFrames) {
  PollMessagesRequest request;
  Bytes payload;
  ASSERT_TRUE(encode_payload(request, payload).ok());
  EXPECT_EQ(payload.size(), 38u);
}

TEST(PollWaitTimeout, AnExplicitZeroIsSentAndToldFromAClassicPoll) {
  // A server with a default wait for classic polls (docs/long-polling.md) must tell "answer at
  // once" from "this client cannot say".
  PollMessagesRequest request;
  request.wait_timeout_us = 0;
  Bytes payload;
  ASSERT_TRUE(encode_payload(request, payload).ok());
  EXPECT_EQ(payload.size(), 46u);
  const Result<DecodedRequest> decoded = decode_poll(payload);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(std::get<PollMessagesRequest>(decoded->request).wait_timeout_us,
            std::optional<uint64_t>(0));
}

struct MessageSpec {
  Bytes payload;
  Bytes user_headers;
  uint64_t offset = 0;
};

// Builds stored messages (server-stamped) for a poll response.
Bytes stored_messages(const std::vector<MessageSpec>& specs) {
  Bytes blob;
  Writer writer(blob);
  for (const MessageSpec& spec : specs) {
    const size_t at = blob.size();
    write_message(writer, {.id = {spec.offset + 1, 0},
                           .origin_timestamp = 5,
                           .payload = spec.payload,
                           .user_headers = spec.user_headers});
    stamp_message(std::span(blob).subspan(at), {.offset = spec.offset, .timestamp = 77});
  }
  EXPECT_TRUE(writer.status().ok());
  return blob;
}

RC_GTEST_PROP(PollResponse, DecodesToTheMessagesThatWereEncoded, ()) {
  const auto specs = *rc::gen::container<std::vector<MessageSpec>>(
      rc::gen::build<MessageSpec>(rc::gen::set(&MessageSpec::payload, test::gen_bytes(300)),
                                  rc::gen::set(&MessageSpec::user_headers, test::gen_bytes(40)),
                                  rc::gen::set(&MessageSpec::offset)));
  const Bytes blob = stored_messages(specs);
  const uint32_t count = static_cast<uint32_t>(specs.size());
  const auto messages = MessageBatchView::parse(blob, count);
  RC_ASSERT(messages.ok());
  const PollMessagesResponse response{.header = {.partition_id = *rc::gen::arbitrary<uint32_t>(),
                                                 .current_offset = *rc::gen::arbitrary<uint64_t>(),
                                                 .messages_count = count},
                                      .messages = *messages};
  Bytes payload;
  RC_ASSERT(encode_payload(response, payload).ok());
  // The server's zero-copy prefix frames the same payload.
  const auto prefix = poll_response_prefix(response.header, blob.size());
  RC_ASSERT(to_hex(std::span(prefix).subspan(8)) == to_hex(std::span(payload).first(16)));
  RC_ASSERT(load_u32(prefix, 4) == payload.size());

  const Result<Decoded<PollMessagesResponse>> decoded =
      decode_payload<PollMessagesResponse>(payload);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(decoded->value == response);
  size_t i = 0;
  for (const MessageView message : decoded->value.messages) {
    RC_ASSERT(to_hex(message.payload()) == to_hex(specs[i].payload));
    RC_ASSERT(to_hex(message.user_headers()) == to_hex(specs[i].user_headers));
    RC_ASSERT(message.offset() == specs[i].offset);
    RC_ASSERT(message.timestamp() == 77u);
    RC_ASSERT(message.checksum() == message_checksum(message.bytes()));
    ++i;
  }
  RC_ASSERT(i == specs.size());
}

TEST(PollResponse, EmptyResultIsJustTheHeader) {
  const Bytes payload = hex("03000000 0500000000000000 00000000");
  const Result<Decoded<PollMessagesResponse>> decoded =
      decode_payload<PollMessagesResponse>(payload);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->value.header.partition_id, 3u);
  EXPECT_EQ(decoded->value.header.current_offset, 5u);
  EXPECT_EQ(decoded->value.messages.begin(), decoded->value.messages.end());
}

TEST(PollResponse, CutOrPaddedMessagesAreRejected) {
  const Bytes blob = stored_messages({{text_bytes("abc"), {}, 0}, {text_bytes("de"), {}, 1}});
  Bytes payload = hex("00000000 0100000000000000 02000000");
  payload.insert(payload.end(), blob.begin(), blob.end());
  EXPECT_TRUE(decode_payload<PollMessagesResponse>(payload).ok());
  const Bytes cut(payload.begin(), payload.end() - 1);
  EXPECT_EQ(decode_payload<PollMessagesResponse>(cut).error(), Error::invalid_command);
  Bytes padded = payload;
  padded.push_back(std::byte{0});
  EXPECT_EQ(decode_payload<PollMessagesResponse>(padded).error(), Error::invalid_format);
  Bytes huge_count = payload;
  huge_count[12] = std::byte{0xff};  // messages_count 255: the messages are not there.
  EXPECT_EQ(decode_payload<PollMessagesResponse>(huge_count).error(), Error::invalid_command);
}

}  // namespace
}  // namespace hark::protocol
