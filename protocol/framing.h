#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "hark/core/base/error.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Frame headers of the classic protocol (docs/wire.md §Framing).
//   request:  [u32 length = 4 + payload bytes][u32 code][payload]
//   response: [u32 status][u32 length = payload bytes][payload]
// The scanners below look at bytes received so far and say what is missing, so a server can
// decode straight out of its receive buffer: the payload they return is a view into it.

inline constexpr size_t request_header_size = 8;
inline constexpr size_t response_header_size = 8;

// Iggy 0.8.0's cap on a non-send payload (MAX_CONTROL_FRAME_PAYLOAD, dispatch.rs).
inline constexpr uint32_t control_payload_max = 10 * 1024 * 1024;
// hark's default cap on a send_messages payload. Iggy 0.8.0 has none (it stages the read);
// hark bounds it so a receive buffer is bounded too. One message may carry up to 64 MB.
inline constexpr uint32_t send_payload_max_default = 64 * 1024 * 1024 + 1024 * 1024;

// Payload caps a scanner enforces, in bytes.
struct FrameLimits {
  uint32_t control_max = control_payload_max;
  uint32_t send_max = send_payload_max_default;
};

enum class FrameState : uint8_t {
  need_more,  // `bytes_missing` more bytes are needed before scanning again.
  ready,      // `code`/`status` and `payload` are valid; consume `frame_size` bytes.
  rejected,   // Answer `error`; see `frame_size` for what to skip.
};

// What a scanner found at the start of a receive buffer.
struct FrameScan {
  FrameState state = FrameState::need_more;
  size_t bytes_missing = 0;
  // Request code (scan_request) or response status (scan_response).
  uint32_t code = 0;
  // A view into the scanned buffer; valid while that buffer is.
  std::span<const std::byte> payload;
  // ready: header + payload. rejected: header + the payload the peer announced. A server that
  // wants to keep the connection answers `error` and then discards this many bytes as they
  // arrive (without storing them); Iggy 0.8.0 discards only the header and loses sync when a
  // payload was announced, so closing the connection is the other sound choice.
  uint64_t frame_size = 0;
  Error error = Error::ok;
};

// Scans a request. Rejects length < 4 (InvalidCommand, 3; this also catches the first bytes of
// a VSR-framed client, whose first u32 is 0), a non-send payload over the control cap
// (InvalidCommand, as 0.8.0) and a send payload over `limits.send_max` (InvalidSizeBytes, 80).
// An unknown code is not rejected here: decode_request() answers it.
FrameScan scan_request(std::span<const std::byte> received, const FrameLimits& limits);

// Scans a response (client side). A payload over `payload_max` is rejected with
// InvalidSizeBytes; the connection cannot be trusted after that.
FrameScan scan_response(std::span<const std::byte> received, uint32_t payload_max);

// Appends a request header. Requires: payload_size <= UINT32_MAX - 4.
void write_request_header(Writer& writer, uint32_t code, size_t payload_size);

// A response header: status 0 with `payload_size`, or an error with length 0 (Iggy never
// sends a payload with an error). Requires: payload_size <= UINT32_MAX.
std::array<std::byte, response_header_size> ok_response_header(size_t payload_size);
std::array<std::byte, response_header_size> error_response(Error error);

}  // namespace hark::protocol
