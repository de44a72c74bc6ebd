#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "hark/core/base/result.h"

namespace hark::protocol {

// A growable byte buffer. Control-plane encoders append to one; a server reuses one per
// connection (clear() keeps the capacity), so steady-state encoding does not allocate.
using Bytes = std::vector<std::byte>;

// Appends little-endian fields to a caller-owned Bytes.
//
// Encoders are infallible to call: a value the wire cannot carry (a name over 255 bytes, an
// empty name) makes the encoder call fail(), which the Writer remembers ("sticky" error) and
// reports through status(). The caller checks status() once after the whole message, so every
// encoder stays a straight list of fields. The first error wins. The output must not be sent
// when status() is not ok. Not thread-safe; `out` must outlive the Writer.
class Writer {
 public:
  explicit Writer(Bytes& out) : out_(out) {}

  void u8(uint8_t value) { out_.push_back(static_cast<std::byte>(value)); }
  void u16(uint16_t value);
  void u32(uint32_t value);
  void u64(uint64_t value);
  void f32(float value);
  void bytes(std::span<const std::byte> data);
  void chars(std::string_view text);

  // Overwrites a u32 written earlier at absolute index `at` of the buffer (length fields that
  // are known only after their content). Requires: at + 4 <= size().
  void patch_u32(size_t at, uint32_t value);

  // Bytes in the whole buffer (not just those this Writer appended).
  size_t size() const { return out_.size(); }

  void fail(Error error) {
    if (error_ == Error::ok) error_ = error;
  }
  Status status() const { return error_ == Error::ok ? Status() : Status(error_); }

 private:
  Bytes& out_;
  Error error_ = Error::ok;
};

}  // namespace hark::protocol
