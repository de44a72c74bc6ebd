#include "hark/protocol/writer.h"

#include <cstring>

#include "hark/core/base/assert.h"

namespace hark::protocol {
namespace {

// The host is little-endian (static_assert in reader.cc), so a field's memory is its encoding.
template <typename T>
void append(Bytes& out, T value) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

}  // namespace

void Writer::u16(uint16_t value) { append(out_, value); }
void Writer::u32(uint32_t value) { append(out_, value); }
void Writer::u64(uint64_t value) { append(out_, value); }
void Writer::f32(float value) { append(out_, value); }

void Writer::bytes(std::span<const std::byte> data) {
  out_.insert(out_.end(), data.begin(), data.end());
}

void Writer::chars(std::string_view text) {
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  out_.insert(out_.end(), data, data + text.size());
}

void Writer::patch_u32(size_t at, uint32_t value) {
  HARK_ASSERT(at <= out_.size());
  HARK_ASSERT(out_.size() - at >= sizeof(uint32_t));
  std::memcpy(out_.data() + at, &value, sizeof(uint32_t));
}

}  // namespace hark::protocol
