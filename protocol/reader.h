#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "hark/core/base/result.h"

namespace hark::protocol {

// A bounds-checked little-endian cursor over untrusted bytes (a request payload, a response).
//
// Every read either returns the value and advances, or returns Error::invalid_command (3) and
// leaves the cursor where it was: running out of bytes is what Iggy 0.8.0 calls UnexpectedEof,
// which its dispatcher answers with InvalidCommand. The Reader never allocates and never reads
// outside its span; spans it returns alias the input, whose owner must keep it alive.
// Plain value type; not thread-safe (one decoder owns it).
class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  Result<uint8_t> u8();
  Result<uint16_t> u16();
  Result<uint32_t> u32();
  Result<uint64_t> u64();
  Result<float> f32();

  // The next `count` bytes as a view into the input.
  Result<std::span<const std::byte>> bytes(size_t count);

  // Everything not read yet, as a view; the cursor moves to the end.
  std::span<const std::byte> rest();

  size_t position() const { return position_; }
  size_t remaining() const { return bytes_.size() - position_; }
  bool empty() const { return position_ == bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  size_t position_ = 0;
};

// Little-endian loads from a span the caller has already bounds-checked (message headers that
// a validator has sized). Requires: bytes.size() >= at + sizeof the value.
uint16_t load_u16(std::span<const std::byte> bytes, size_t at);
uint32_t load_u32(std::span<const std::byte> bytes, size_t at);
uint64_t load_u64(std::span<const std::byte> bytes, size_t at);

// A byte view as characters, without copying.
inline std::string_view as_chars(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Characters as a byte view, without copying.
inline std::span<const std::byte> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

}  // namespace hark::protocol
