#include "hark/protocol/framing.h"

#include <cstring>

#include "hark/core/base/assert.h"
#include "hark/protocol/command.h"
#include "hark/protocol/reader.h"

namespace hark::protocol {
namespace {

constexpr uint32_t code_size = 4;

FrameScan need(size_t have, uint64_t total) {
  FrameScan scan;
  scan.state = FrameState::need_more;
  scan.bytes_missing = static_cast<size_t>(total - have);
  return scan;
}

FrameScan reject(Error error, uint32_t code, uint64_t frame_size) {
  FrameScan scan;
  scan.state = FrameState::rejected;
  scan.code = code;
  scan.error = error;
  scan.frame_size = frame_size;
  return scan;
}

std::array<std::byte, response_header_size> header_of(uint32_t first, uint32_t second) {
  std::array<std::byte, response_header_size> header{};
  std::memcpy(header.data(), &first, sizeof first);
  std::memcpy(header.data() + 4, &second, sizeof second);
  return header;
}

}  // namespace

FrameScan scan_request(std::span<const std::byte> received, const FrameLimits& limits) {
  if (received.size() < request_header_size) return need(received.size(), request_header_size);
  const uint32_t length = load_u32(received, 0);
  const uint32_t code = load_u32(received, 4);
  if (length < code_size) return reject(Error::invalid_command, code, request_header_size);
  const uint32_t payload_size = length - code_size;
  const uint64_t frame_size = uint64_t{request_header_size} + payload_size;
  if (code == command_code(Command::send_messages)) {
    if (payload_size > limits.send_max) {
      return reject(Error::invalid_size_bytes, code, frame_size);
    }
  } else if (payload_size > limits.control_max) {
    return reject(Error::invalid_command, code, frame_size);
  }
  if (received.size() < frame_size) return need(received.size(), frame_size);
  FrameScan scan;
  scan.state = FrameState::ready;
  scan.code = code;
  scan.payload = received.subspan(request_header_size, payload_size);
  scan.frame_size = frame_size;
  return scan;
}

FrameScan scan_response(std::span<const std::byte> received, uint32_t payload_max) {
  if (received.size() < response_header_size) return need(received.size(), response_header_size);
  const uint32_t status = load_u32(received, 0);
  const uint32_t payload_size = load_u32(received, 4);
  const uint64_t frame_size = uint64_t{response_header_size} + payload_size;
  if (payload_size > payload_max) return reject(Error::invalid_size_bytes, status, frame_size);
  if (received.size() < frame_size) return need(received.size(), frame_size);
  FrameScan scan;
  scan.state = FrameState::ready;
  scan.code = status;
  scan.payload = received.subspan(response_header_size, payload_size);
  scan.frame_size = frame_size;
  return scan;
}

void write_request_header(Writer& writer, uint32_t code, size_t payload_size) {
  HARK_ASSERT(payload_size <= UINT32_MAX - code_size);
  writer.u32(static_cast<uint32_t>(payload_size) + code_size);
  writer.u32(code);
}

std::array<std::byte, response_header_size> ok_response_header(size_t payload_size) {
  HARK_ASSERT(payload_size <= UINT32_MAX);
  return header_of(0, static_cast<uint32_t>(payload_size));
}

std::array<std::byte, response_header_size> error_response(Error error) {
  HARK_ASSERT(error != Error::ok);
  return header_of(error_code(error), 0);
}

}  // namespace hark::protocol
