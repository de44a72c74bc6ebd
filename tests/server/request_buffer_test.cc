// Covers frame assembly in RequestBuffer: frames split over many receives, many frames in one
// receive, the pinned frame's bytes staying put while more bytes arrive, the bound on bytes
// sent ahead, and frames the scanner rejects before they are buffered.
#include "server/request_buffer.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "protocol/command.h"

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
    ASSERT_TRUE(buffer.append(std::span(bytes).subspan(i, 1)));
    ASSERT_EQ(buffer.next().state, FrameState::need_more);
  }
  ASSERT_TRUE(buffer.append(std::span(bytes).subspan(bytes.size() - 1)));
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
  ASSERT_TRUE(buffer.append(all));
  for (const char* name : {"a", "bb", "ccc"}) {
    const protocol::FrameScan scan = buffer.next();
    ASSERT_EQ(scan.state, FrameState::ready);
    EXPECT_EQ(text(scan.payload), name);
    buffer.release();
  }
  EXPECT_EQ(buffer.next().state, FrameState::need_more);
  ASSERT_TRUE(buffer.append(std::span(partial).subspan(5)));
  const protocol::FrameScan scan = buffer.next();
  ASSERT_EQ(scan.state, FrameState::ready);
  EXPECT_EQ(text(scan.payload), "tail");
}

TEST(RequestBuffer, PinnedFrameBytesStayPutWhileMoreArrive) {
  RequestBuffer buffer = make_buffer();
  ASSERT_TRUE(buffer.append(frame(101, std::string(100, 'm'))));
  const protocol::FrameScan scan = buffer.next();
  ASSERT_EQ(scan.state, FrameState::ready);
  ASSERT_TRUE(buffer.pinned());
  const std::byte* before = scan.payload.data();
  // Far more than any spare capacity: the main buffer would have to move if it took them.
  const protocol::Bytes next = frame(1, std::string(64 * 1024, 'n'));
  for (size_t i = 0; i < next.size(); i += 1000) {
    ASSERT_TRUE(buffer.append(std::span(next).subspan(i, std::min<size_t>(1000, next.size() - i))));
  }
  EXPECT_EQ(scan.payload.data(), before);
  EXPECT_EQ(text(scan.payload), std::string(100, 'm'));
  buffer.release();
  const protocol::FrameScan second = buffer.next();
  ASSERT_EQ(second.state, FrameState::ready);
  EXPECT_EQ(second.payload.size(), 64u * 1024);
}

TEST(RequestBuffer, RefusesMoreThanAheadMaxBehindAPinnedFrame) {
  RequestBuffer buffer = make_buffer(/*ahead_max=*/64);
  ASSERT_TRUE(buffer.append(frame(1, "")));
  ASSERT_EQ(buffer.next().state, FrameState::ready);
  const protocol::Bytes chunk(40);
  EXPECT_TRUE(buffer.append(chunk));
  EXPECT_FALSE(buffer.append(chunk));
  EXPECT_EQ(buffer.buffered_bytes(), 8u + 40u);
}

TEST(RequestBuffer, RejectsAnOversizeFrameFromItsHeaderAlone) {
  protocol::FrameLimits limits;
  limits.control_max = 1000;
  limits.send_max = 2000;
  RequestBuffer buffer(limits, 1 << 20);
  protocol::Bytes header = frame(202, "");
  const uint32_t length = 4 + 1001;
  std::memcpy(header.data(), &length, 4);
  ASSERT_TRUE(buffer.append(header));
  const protocol::FrameScan scan = buffer.next();
  EXPECT_EQ(scan.state, FrameState::rejected);
  EXPECT_EQ(scan.error, Error::invalid_command);
  EXPECT_FALSE(buffer.pinned());

  RequestBuffer sends(limits, 1 << 20);
  protocol::Bytes send = frame(protocol::command_code(protocol::Command::send_messages), "");
  const uint32_t send_length = 4 + 2001;
  std::memcpy(send.data(), &send_length, 4);
  ASSERT_TRUE(sends.append(send));
  EXPECT_EQ(sends.next().error, Error::invalid_size_bytes);
}

TEST(RequestBuffer, RejectsALengthBelowFour) {
  RequestBuffer buffer = make_buffer();
  protocol::Bytes bytes = frame(1, "");
  const uint32_t length = 3;
  std::memcpy(bytes.data(), &length, 4);
  ASSERT_TRUE(buffer.append(bytes));
  const protocol::FrameScan scan = buffer.next();
  EXPECT_EQ(scan.state, FrameState::rejected);
  EXPECT_EQ(scan.error, Error::invalid_command);
}

}  // namespace
}  // namespace hark::server
