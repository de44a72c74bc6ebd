// Covers frame assembly in RequestBuffer: frames split over many receives, many frames in one
// receive, the pinned frame's bytes staying put while more bytes arrive, the bound on bytes
// sent ahead, growth with the bytes that arrive (never a header's declared size), and frames the
// scanner rejects before they are buffered.
#include "hark/server/request_buffer.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "hark/protocol/command.h"

namespace hark::server {
namespace {

using protocol::FrameState;

protocol::Bytes frame(uint32_t code, const std::string& payload) {
  protocol::Bytes bytes(8 + payload.size());
  const auto length = static_cast<uint32_t>(4 + payload.size());
  std::memcpy(bytes.data(), &length, 4);
  std::memcpy(bytes.data() + 4, &code, 4);
  std::memcpy(bytes.data() + 8, payload.data(), payload.size());
  return bytes;
}

std::string text(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

RequestBuffer make_buffer(size_t ahead_max = 1 << 20) {
  return RequestBuffer(protocol::FrameLimits{}, ahead_max);
}

TEST(RequestBuffer, AssemblesAFrameReceivedOneByteAtATime) {
  RequestBuffer buffer = make_buffer();
  const protocol::Bytes bytes = frame(202, "orders");
  for (size_t i = 0; i + 1 < bytes.size(); i++) {
    buffer.append(std::span(bytes).subspan(i, 1));
    ASSERT_EQ(buffer.next().state, FrameState::need_more);
  }
  buffer.append(std::span(bytes).subspan(bytes.size() - 1));
  const protocol::FrameScan scan = buffer.next();
  ASSERT_EQ(scan.state, FrameState::ready);
  EXPECT_EQ(scan.code, 202u);
  EXPECT_EQ(text(scan.payload), "orders");
  buffer.release();
  EXPECT_EQ(buffer.buffered_bytes(), 0u);
  EXPECT_EQ(buffer.next().state, FrameState::need_more);
}

TEST(RequestBuffer, HandsOutManyFramesOfOneReceiveInOrder) {
  RequestBuffer buffer = make_buffer();
  protocol::Bytes all;
  for (const char* name : {"a", "bb", "ccc"}) {
    const protocol::Bytes one = frame(1, name);
    all.insert(all.end(), one.begin(), one.end());
  }
  const protocol::Bytes partial = frame(201, "tail");
  all.insert(all.end(), partial.begin(), partial.begin() + 5);
  buffer.append(all);
  for (const char* name : {"a", "bb", "ccc"}) {
    const protocol::FrameScan scan = buffer.next();
    ASSERT_EQ(scan.state, FrameState::ready);
    EXPECT_EQ(text(scan.payload), name);
    buffer.release();
  }
  EXPECT_EQ(buffer.next().state, FrameState::need_more);
  buffer.append(std::span(partial).subspan(5));
  const protocol::FrameScan scan = buffer.next();
  ASSERT_EQ(scan.state, FrameState::ready);
  EXPECT_EQ(text(scan.payload), "tail");
}

TEST(RequestBuffer, PinnedFrameBytesStayPutWhileMoreArrive) {
  RequestBuffer buffer = make_buffer();
  buffer.append(frame(101, std::string(100, 'm')));
  const protocol::FrameScan scan = buffer.next();
  ASSERT_EQ(scan.state, FrameState::ready);
  ASSERT_TRUE(buffer.pinned());
  const std::byte* before = scan.payload.data();
  // Far more than any spare capacity: the main buffer would have to move if it took them.
  const protocol::Bytes next = frame(1, std::string(64 * 1024, 'n'));
  for (size_t i = 0; i < next.size(); i += 1000) {
    buffer.append(std::span(next).subspan(i, std::min<size_t>(1000, next.size() - i)));
  }
  EXPECT_EQ(scan.payload.data(), before);
  EXPECT_EQ(text(scan.payload), std::string(100, 'm'));
  buffer.release();
  const protocol::FrameScan second = buffer.next();
  ASSERT_EQ(second.state, FrameState::ready);
  EXPECT_EQ(second.payload.size(), 64u * 1024);
}

TEST(RequestBuffer, IsAheadFullOnceAheadMaxIsBufferedBehindAPinnedFrame) {
  RequestBuffer buffer = make_buffer(/*ahead_max=*/64);
  const protocol::Bytes first = frame(1, "");
  const protocol::Bytes chunk(40);
  protocol::Bytes both = first;
  both.insert(both.end(), chunk.begin(), chunk.end());  // A frame and 40 bytes in one receive.
  buffer.append(both);
  EXPECT_FALSE(buffer.ahead_full()) << "nothing is ahead before a frame is pinned";
  ASSERT_EQ(buffer.next().state, FrameState::ready);
  EXPECT_EQ(buffer.ahead_bytes(), 40u);
  EXPECT_FALSE(buffer.ahead_full());
  buffer.append(chunk);  // Past the bound: kept (the connection stops receiving), not lost.
  EXPECT_EQ(buffer.ahead_bytes(), 80u);
  EXPECT_TRUE(buffer.ahead_full());
  EXPECT_EQ(buffer.buffered_bytes(), 8u + 80u);
  buffer.release();
  EXPECT_EQ(buffer.ahead_bytes(), 0u);
  EXPECT_FALSE(buffer.ahead_full());
}

TEST(RequestBuffer, AHeaderAloneDoesNotReserveItsDeclaredSize) {
  RequestBuffer buffer(protocol::FrameLimits{.control_max = 10 << 20, .send_max = 80 << 20},
                       16 * 1024);
  // A send frame announcing 65 MiB, of which only the header and 100 bytes arrive.
  protocol::Bytes header = frame(static_cast<uint32_t>(protocol::Command::send_messages), "");
  const uint32_t length = 65u << 20;
  std::memcpy(header.data(), &length, 4);
  header.resize(header.size() + 100);
  buffer.append(header);
  EXPECT_EQ(buffer.next().state, FrameState::need_more);
  EXPECT_LT(buffer.capacity_bytes(), 64u * 1024);
}

TEST(RequestBuffer, GrowsGeometricallyWithTheBytesThatArrive) {
  RequestBuffer buffer(protocol::FrameLimits{.control_max = 10 << 20, .send_max = 80 << 20},
                       16 * 1024);
  const uint32_t payload = 4u << 20;
  protocol::Bytes whole = frame(static_cast<uint32_t>(protocol::Command::send_messages), "");
  const uint32_t length = 4 + payload;
  std::memcpy(whole.data(), &length, 4);
  whole.resize(whole.size() + payload);
  size_t grown = 0;
  size_t capacity = 0;
  for (size_t at = 0; at < whole.size(); at += 16 * 1024) {
    buffer.append(std::span(whole).subspan(at, std::min<size_t>(16 * 1024, whole.size() - at)));
    EXPECT_LE(buffer.capacity_bytes(), 2 * buffer.buffered_bytes() + 16 * 1024);
    if (buffer.capacity_bytes() != capacity) grown++;
    capacity = buffer.capacity_bytes();
    if (buffer.buffered_bytes() < whole.size()) {
      ASSERT_EQ(buffer.next().state, FrameState::need_more);
    }
  }
  EXPECT_LT(grown, 20u) << "grown at every receive, not geometrically";
  ASSERT_EQ(buffer.next().state, FrameState::ready);
}

TEST(RequestBuffer, RejectsAnOversizeFrameFromItsHeaderAlone) {
  protocol::FrameLimits limits;
  limits.control_max = 1000;
  limits.send_max = 2000;
  RequestBuffer buffer(limits, 1 << 20);
  protocol::Bytes header = frame(202, "");
  const uint32_t length = 4 + 1001;
  std::memcpy(header.data(), &length, 4);
  buffer.append(header);
  const protocol::FrameScan scan = buffer.next();
  EXPECT_EQ(scan.state, FrameState::rejected);
  EXPECT_EQ(scan.error, Error::invalid_command);
  EXPECT_FALSE(buffer.pinned());

  RequestBuffer sends(limits, 1 << 20);
  protocol::Bytes send = frame(protocol::command_code(protocol::Command::send_messages), "");
  const uint32_t send_length = 4 + 2001;
  std::memcpy(send.data(), &send_length, 4);
  sends.append(send);
  EXPECT_EQ(sends.next().error, Error::invalid_size_bytes);
}

TEST(RequestBuffer, RejectsALengthBelowFour) {
  RequestBuffer buffer = make_buffer();
  protocol::Bytes bytes = frame(1, "");
  const uint32_t length = 3;
  std::memcpy(bytes.data(), &length, 4);
  buffer.append(bytes);
  const protocol::FrameScan scan = buffer.next();
  EXPECT_EQ(scan.state, FrameState::rejected);
  EXPECT_EQ(scan.error, Error::invalid_command);
}

}  // namespace
}  // namespace hark::server
