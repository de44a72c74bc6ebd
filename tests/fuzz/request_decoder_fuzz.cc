// Fuzzes what a server does with bytes from a socket: scan frames out of a receive buffer,
// dispatch each by its code (classic or notification table), decode. Every input must end in a
// request or an Iggy error code, never a crash, an assertion or an unbounded allocation; and every
// request that decodes must re-encode, and decode again to the same value (the codec is its own
// oracle).
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "hark/protocol/framing.h"
#include "hark/protocol/hash.h"
#include "hark/protocol/request.h"

namespace {

using namespace hark::protocol;

bool expected_error(hark::Error error) {
  switch (error) {
    case hark::Error::invalid_command:
    case hark::Error::invalid_format:
    case hark::Error::invalid_identifier:
    case hark::Error::invalid_messages_count:
    case hark::Error::non_zero_offset:
    case hark::Error::non_zero_timestamp:
    case hark::Error::missing_index:
    case hark::Error::too_big_message_payload:
    case hark::Error::too_big_user_headers:
    case hark::Error::invalid_offset:
    case hark::Error::cannot_read_index_position:
    case hark::Error::invalid_messages_size: return true;
    default: return false;
  }
}

// Touches every view of a send, as a server appending it would.
void walk_messages(const Request& request) {
  const auto* send = std::get_if<SendMessagesRequest>(&request);
  if (send == nullptr) return;
  uint64_t checksums = 0;
  uint32_t count = 0;
  for (const MessageView message : send->messages) {
    checksums += message_checksum(message.bytes());
    checksums += message.payload().size() + message.user_headers().size();
    ++count;
  }
  if (count != send->messages.count()) __builtin_trap();
  (void)checksums;
}

// Decodes (the classic commands and hark's notifications, docs/wire.md §11, share one table),
// then re-encodes and decodes again.
void check_request(uint32_t code, std::span<const std::byte> payload) {
  using DecodedT = DecodedRequest;
  const auto decode = &decode_request;
  const hark::Result<DecodedT> decoded = decode(code, payload);
  if (!decoded.ok()) {
    if (!expected_error(decoded.error())) __builtin_trap();
    return;
  }
  if (request_code(decoded->request) != code) __builtin_trap();
  walk_messages(decoded->request);
  Bytes frame;
  if (!encode_request_frame(decoded->request, frame).ok()) __builtin_trap();
  const FrameScan scan =
      scan_request(frame, FrameLimits{.control_max = UINT32_MAX - 4, .send_max = UINT32_MAX - 4});
  if (scan.state != FrameState::ready || scan.frame_size != frame.size()) __builtin_trap();
  const hark::Result<DecodedT> again = decode(scan.code, scan.payload);
  if (!again.ok() || again->trailing_bytes != 0) __builtin_trap();
  if (!(again->request == decoded->request)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> received(reinterpret_cast<const std::byte*>(data), size);
  while (!received.empty()) {
    const FrameScan scan = scan_request(received, FrameLimits{});
    if (scan.state == FrameState::need_more) break;
    if (scan.state == FrameState::rejected) {
      if (scan.frame_size >= received.size()) break;
      received = received.subspan(static_cast<size_t>(scan.frame_size));
      continue;
    }
    check_request(scan.code, scan.payload);
    received = received.subspan(static_cast<size_t>(scan.frame_size));
  }
  return 0;
}
