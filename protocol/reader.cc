#include "hark/protocol/reader.h"

#include <bit>
#include <cstring>

#include "hark/core/base/assert.h"

namespace hark::protocol {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the wire is little-endian and hark only targets little-endian hosts");

// memcpy is the defined way to load an unaligned integer; compilers turn it into one move.
template <typename T>
T load(std::span<const std::byte> bytes, size_t at) {
  HARK_ASSERT(at <= bytes.size());
  HARK_ASSERT(bytes.size() - at >= sizeof(T));
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

}  // namespace

Result<uint8_t> Reader::u8() {
  if (remaining() < 1) return Error::invalid_command;
  return std::to_integer<uint8_t>(bytes_[position_++]);
}

Result<uint16_t> Reader::u16() {
  if (remaining() < sizeof(uint16_t)) return Error::invalid_command;
  const uint16_t value = load<uint16_t>(bytes_, position_);
  position_ += sizeof(uint16_t);
  return value;
}

Result<uint32_t> Reader::u32() {
  if (remaining() < sizeof(uint32_t)) return Error::invalid_command;
  const uint32_t value = load<uint32_t>(bytes_, position_);
  position_ += sizeof(uint32_t);
  return value;
}

Result<uint64_t> Reader::u64() {
  if (remaining() < sizeof(uint64_t)) return Error::invalid_command;
  const uint64_t value = load<uint64_t>(bytes_, position_);
  position_ += sizeof(uint64_t);
  return value;
}

Result<float> Reader::f32() {
  if (remaining() < sizeof(float)) return Error::invalid_command;
  const float value = load<float>(bytes_, position_);
  position_ += sizeof(float);
  return value;
}

Result<std::span<const std::byte>> Reader::bytes(size_t count) {
  if (remaining() < count) return Error::invalid_command;
  const std::span<const std::byte> view = bytes_.subspan(position_, count);
  position_ += count;
  return view;
}

std::span<const std::byte> Reader::rest() {
  const std::span<const std::byte> view = bytes_.subspan(position_);
  position_ = bytes_.size();
  return view;
}

uint16_t load_u16(std::span<const std::byte> bytes, size_t at) { return load<uint16_t>(bytes, at); }
uint32_t load_u32(std::span<const std::byte> bytes, size_t at) { return load<uint32_t>(bytes, at); }
uint64_t load_u64(std::span<const std::byte> bytes, size_t at) { return load<uint64_t>(bytes, at); }

}  // namespace hark::protocol
