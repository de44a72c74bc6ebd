// Covers the frame scanners a server and a client read with: "need N more bytes" at every
// split point, ready frames as views into the buffer, and the rejections with Iggy's codes
// (length < 4, oversize control frames, send frames over the configured cap).
#include "hark/protocol/framing.h"

#include <gtest/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/stream_requests.h"
#include "hark/tests/protocol/test_bytes.h"

namespace hark::protocol {
namespace {

using test::hex;

TEST(FrameScan, ReportsMissingBytesAtEverySplit) {
  Bytes frame;
  ASSERT_TRUE(encode_request(CreateStreamRequest{.name = "orders"}, frame).ok());
  for (size_t size = 0; size < frame.size(); ++size) {
    const FrameScan scan = scan_request(std::span(frame).first(size), FrameLimits{});
    ASSERT_EQ(scan.state, FrameState::need_more) << size;
    const size_t expected_total = size < request_header_size ? request_header_size : frame.size();
    EXPECT_EQ(scan.bytes_missing, expected_total - size) << size;
  }
  const FrameScan scan = scan_request(frame, FrameLimits{});
  ASSERT_EQ(scan.state, FrameState::ready);
  EXPECT_EQ(scan.code, command_code(Command::create_stream));
  EXPECT_EQ(scan.frame_size, frame.size());
  EXPECT_EQ(scan.payload.data(), frame.data() + request_header_size);
  EXPECT_EQ(scan.payload.size(), frame.size() - request_header_size);
}

TEST(FrameScan, ReadyFrameIgnoresTheNextFramesBytes) {
  Bytes two_frames;
  ASSERT_TRUE(encode_request(DeleteStreamRequest{}, two_frames).ok());
  const size_t first_size = two_frames.size();
  ASSERT_TRUE(encode_request(CreateStreamRequest{.name = "x"}, two_frames).ok());
  const FrameScan first = scan_request(two_frames, FrameLimits{});
  ASSERT_EQ(first.state, FrameState::ready);
  EXPECT_EQ(first.frame_size, first_size);
  const FrameScan second = scan_request(std::span(two_frames).subspan(first_size), FrameLimits{});
  ASSERT_EQ(second.state, FrameState::ready);
  EXPECT_EQ(second.code, command_code(Command::create_stream));
}

TEST(FrameScan, LengthBelowFourIsInvalidCommandAndSkipsTheHeader) {
  for (const char* header : {"00000000 01000000", "03000000 ca000000"}) {
    const FrameScan scan = scan_request(hex(header), FrameLimits{});
    ASSERT_EQ(scan.state, FrameState::rejected) << header;
    EXPECT_EQ(scan.error, Error::invalid_command);
    EXPECT_EQ(scan.frame_size, request_header_size);
  }
}

TEST(FrameScan, OversizeControlFrameIsInvalidCommand) {
  // payload = length - 4 = 10 MiB + 1, announced only: nothing of it is needed to decide.
  const FrameScan scan = scan_request(hex("05 00 a0 00 | ca000000"), FrameLimits{});
  ASSERT_EQ(scan.state, FrameState::rejected);
  EXPECT_EQ(scan.error, Error::invalid_command);
  EXPECT_EQ(scan.frame_size, request_header_size + control_payload_max + 1);
  const FrameScan at_limit = scan_request(hex("04 00 a0 00 | ca000000"), FrameLimits{});
  EXPECT_EQ(at_limit.state, FrameState::need_more);
}

TEST(FrameScan, SendFramesHaveTheirOwnConfiguredCap) {
  const FrameLimits limits{.control_max = control_payload_max, .send_max = 100};
  const FrameScan over = scan_request(hex("69000000 65000000"), limits);  // payload 101
  ASSERT_EQ(over.state, FrameState::rejected);
  EXPECT_EQ(over.error, Error::invalid_size_bytes);
  const FrameScan big_control = scan_request(hex("69000000 ca000000"), limits);
  EXPECT_EQ(big_control.state, FrameState::need_more);  // Control cap is 10 MiB here.
  const FrameScan within = scan_request(hex("68000000 65000000"), limits);
  EXPECT_EQ(within.state, FrameState::need_more);
  EXPECT_EQ(within.bytes_missing, 100u);
}

TEST(FrameScan, ResponsesCarryStatusAndPayload) {
  const Bytes ok = hex("00000000 03000000 aabbcc");
  const FrameScan scan = scan_response(ok, 1024);
  ASSERT_EQ(scan.state, FrameState::ready);
  EXPECT_EQ(scan.code, 0u);
  EXPECT_EQ(scan.payload.size(), 3u);
  EXPECT_EQ(scan_response(std::span(ok).first(9), 1024).bytes_missing, 2u);

  const FrameScan error = scan_response(error_response(Error::unauthenticated), 1024);
  ASSERT_EQ(error.state, FrameState::ready);
  EXPECT_EQ(error.code, 40u);
  EXPECT_TRUE(error.payload.empty());

  const FrameScan too_big = scan_response(hex("00000000 01040000"), 1024);
  ASSERT_EQ(too_big.state, FrameState::rejected);
  EXPECT_EQ(too_big.error, Error::invalid_size_bytes);
}

TEST(Reader, FailedReadsLeaveTheCursorInPlace) {
  const Bytes bytes = hex("010203");
  Reader reader(bytes);
  EXPECT_EQ(reader.u32().error(), Error::invalid_command);
  EXPECT_EQ(reader.position(), 0u);
  EXPECT_EQ(*reader.u16(), 0x0201u);
  EXPECT_EQ(reader.bytes(2).error(), Error::invalid_command);
  EXPECT_EQ(*reader.u8(), 3u);
  EXPECT_TRUE(reader.empty());
  EXPECT_EQ(reader.u8().error(), Error::invalid_command);
}

TEST(Writer, FirstFailureIsKeptAndEncodeRestoresTheBuffer) {
  Bytes out = hex("aa");
  EXPECT_EQ(encode_payload(CreateStreamRequest{.name = std::string(256, 'x')}, out).error(),
            Error::invalid_format);
  EXPECT_EQ(encode_request(CreateStreamRequest{.name = ""}, out).error(), Error::invalid_format);
  EXPECT_EQ(out, hex("aa"));
  Writer writer(out);
  writer.fail(Error::invalid_format);
  writer.fail(Error::invalid_command);
  EXPECT_EQ(writer.status().error(), Error::invalid_format);
}

TEST(Identifier, NamedRejectsEmptyAndLongNames) {
  EXPECT_EQ(Identifier::named("").error(), Error::invalid_format);
  EXPECT_EQ(Identifier::named(std::string(256, 'a')).error(), Error::invalid_format);
  ASSERT_TRUE(Identifier::named(std::string(255, 'a')).ok());
  EXPECT_NE(*Identifier::named("1"), Identifier::numeric(1));
  EXPECT_EQ(identifier_text(Identifier::numeric(7)), "7");
  EXPECT_EQ(identifier_text(*Identifier::named("orders")), "'orders'");
}

}  // namespace
}  // namespace hark::protocol
