// Fuzzes the send_messages payload decoder and validator directly (the input is a payload,
// no frame header): it must return one of 0.8.0's codes or a batch whose message views tile
// the blob exactly, lie inside the input, and survive re-encoding unchanged.
#include <cstddef>
#include <cstdint>
#include <span>

#include "hark/protocol/codec.h"
#include "hark/protocol/hash.h"
#include "hark/protocol/send_messages.h"

namespace {

using namespace hark::protocol;

bool inside(std::span<const std::byte> part, std::span<const std::byte> whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void check_batch(const SendMessagesRequest& request, std::span<const std::byte> input) {
  uint64_t total = 0;
  uint32_t count = 0;
  for (const MessageView message : request.messages) {
    if (!inside(message.bytes(), input)) __builtin_trap();
    if (message.payload().size() != message.payload_length()) __builtin_trap();
    if (message.user_headers().size() != message.user_headers_length()) __builtin_trap();
    if (message.payload_length() > message_payload_size_max) __builtin_trap();
    total += message.bytes().size();
    (void)message_checksum(message.bytes());
    ++count;
  }
  if (count == 0 || count != request.messages.count()) __builtin_trap();
  if (total != request.messages.bytes().size()) __builtin_trap();
  if (request.indexes.size() != uint64_t{count} * 16) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
  const hark::Result<Decoded<SendMessagesRequest>> decoded =
      decode_payload<SendMessagesRequest>(input);
  if (!decoded.ok()) {
    if (decoded.error() == hark::Error::ok) __builtin_trap();
    return 0;
  }
  check_batch(decoded->value, input);
  Bytes payload;
  if (!encode_payload(decoded->value, payload).ok()) __builtin_trap();
  const hark::Result<Decoded<SendMessagesRequest>> again =
      decode_payload<SendMessagesRequest>(payload);
  if (!again.ok() || !(again->value == decoded->value)) __builtin_trap();
  return 0;
}
