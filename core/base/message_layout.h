#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace hark {

// Iggy's classic message format, shared by the wire (protocol/) and the disk (storage/): a
// 64-byte header, then the payload, then the user headers. Little-endian, no padding.
// docs/wire.md and docs/storage-format.md give the same table.
//
//   off size field
//     0    8 checksum             XXH3-64 (seed 0) over bytes [8, end), stamped by the server
//     8   16 id                   u128; 0 asks the server for a random UUID
//    24    8 offset               absolute offset in the partition, stamped by the server
//    32    8 timestamp            server append time, µs since the epoch
//    40    8 origin_timestamp     producer's clock, as sent
//    48    4 user_headers_length
//    52    4 payload_length
//    56    8 reserved             must be 0
namespace message_layout {

inline constexpr size_t checksum = 0;
inline constexpr size_t id = 8;
inline constexpr size_t offset = 24;
inline constexpr size_t timestamp = 32;
inline constexpr size_t origin_timestamp = 40;
inline constexpr size_t user_headers_length = 48;
inline constexpr size_t payload_length = 52;
inline constexpr size_t reserved = 56;
inline constexpr size_t header_bytes = 64;

// The checksum covers everything after itself.
inline constexpr size_t checksummed_from = 8;

static_assert(reserved + 8 == header_bytes);

}  // namespace message_layout

// Little-endian field access over a message (or any byte buffer). Requires: in bounds.
inline uint64_t load_u64(std::span<const std::byte> bytes, size_t at) {
  uint64_t value = 0;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

inline uint32_t load_u32(std::span<const std::byte> bytes, size_t at) {
  uint32_t value = 0;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

inline void store_u64(std::span<std::byte> bytes, size_t at, uint64_t value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

inline void store_u32(std::span<std::byte> bytes, size_t at, uint32_t value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "hark's formats are little-endian");

}  // namespace hark
