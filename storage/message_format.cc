#include "hark/storage/message_format.h"

#include <xxhash.h>

#include <sys/random.h>

#include "hark/core/base/assert.h"

namespace hark::storage {

namespace layout = message_layout;

uint64_t message_bytes(std::span<const std::byte> bytes, size_t at) {
  HARK_ASSERT(at + layout::header_bytes <= bytes.size());
  const std::span<const std::byte> header = bytes.subspan(at, layout::header_bytes);
  return layout::header_bytes + uint64_t{load_u32(header, layout::payload_length)} +
         uint64_t{load_u32(header, layout::user_headers_length)};
}

Result<uint64_t> validate_batch(std::span<const std::byte> messages, uint32_t count) {
  if (count == 0) return Error::invalid_messages_count;
  if (messages.size() > batch_bytes_max) return Error::invalid_messages_size;
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (messages.size() - at < layout::header_bytes) return Error::too_small_message;
    const std::span<const std::byte> header = messages.subspan(at, layout::header_bytes);
    if (load_u64(header, layout::reserved) != 0) return Error::invalid_reserved_field;
    if (load_u32(header, layout::payload_length) > payload_bytes_max) {
      return Error::too_big_message_payload;
    }
    if (load_u32(header, layout::user_headers_length) > user_headers_bytes_max) {
      return Error::too_big_user_headers;
    }
    const uint64_t size = message_bytes(messages, at);
    if (size > messages.size() - at) return Error::invalid_messages_size;
    at += static_cast<size_t>(size);
  }
  if (at != messages.size()) return Error::invalid_messages_size;
  return uint64_t{at};
}

uint64_t message_checksum(std::span<const std::byte> message) {
  HARK_ASSERT(message.size() >= layout::header_bytes);
  return XXH3_64bits(message.data() + layout::checksummed_from,
                     message.size() - layout::checksummed_from);
}

IdGenerator::IdGenerator() {
  // Control plane: one syscall per log. A failure leaves the address-derived fallback seed,
  // still distinct per log; ids need uniqueness, not secrecy.
  uint64_t seed = reinterpret_cast<uintptr_t>(this) ^ 0x6a09e667f3bcc909ULL;
  if (::getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) {
    seed ^= 0xbb67ae8584caa73bULL;
  }
  state_ = seed;
}

uint64_t IdGenerator::next_word() {
  // splitmix64: passes BigCrush, one word of state, a handful of instructions.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void IdGenerator::next(std::span<std::byte, 16> id) {
  const uint64_t low = next_word();
  uint64_t high = next_word();
  // RFC 4122 version 4 and variant bits, placed as in the u128's big-endian UUID rendering:
  // version nibble in bits 76..79, variant in bits 62..63 of the u128.
  high = (high & ~(0xFULL << 12)) | (0x4ULL << 12);
  const uint64_t variant_low = (low & ~(0x3ULL << 62)) | (0x2ULL << 62);
  store_u64(id, 0, variant_low);
  store_u64(id, 8, high);
}

CheckedMessage check_stored_message(std::span<const std::byte> bytes, size_t at,
                                    Offset offset_min) {
  CheckedMessage result;
  if (at > bytes.size() || bytes.size() - at < layout::header_bytes) return result;
  const std::span<const std::byte> header = bytes.subspan(at, layout::header_bytes);
  const uint64_t size = message_bytes(bytes, at);
  if (size > bytes.size() - at) return result;
  result.bytes = size;
  result.check = MessageCheck::corrupt;
  if (load_u32(header, layout::payload_length) > payload_bytes_max) return result;
  if (load_u32(header, layout::user_headers_length) > user_headers_bytes_max) return result;
  if (load_u64(header, layout::reserved) != 0) return result;
  const std::span<const std::byte> message = bytes.subspan(at, static_cast<size_t>(size));
  if (load_u64(header, layout::checksum) != message_checksum(message)) return result;
  const Offset offset(load_u64(header, layout::offset));
  if (offset < offset_min) return result;
  result.offset = offset;
  result.check = MessageCheck::ok;
  return result;
}

Result<StoredBatch> validate_stored_batch(std::span<const std::byte> messages, uint32_t count,
                                          UnixMicros timestamp_min) {
  if (count == 0) return Error::invalid_messages_count;
  if (messages.size() > batch_bytes_max) return Error::invalid_messages_size;
  StoredBatch batch{.timestamp = timestamp_min};
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    const CheckedMessage checked = check_stored_message(messages, at, Offset(0));
    if (checked.check == MessageCheck::incomplete) return Error::invalid_messages_size;
    if (checked.check == MessageCheck::corrupt) return Error::invalid_message_checksum;
    if (i == 0) batch.first = checked.offset;
    if (checked.offset != batch.first + i) return Error::invalid_offset;
    const UnixMicros timestamp = load_u64(messages.subspan(at), layout::timestamp);
    if (timestamp < batch.timestamp) return Error::timestamp_out_of_range;
    batch.timestamp = timestamp;
    at += static_cast<size_t>(checked.bytes);
  }
  if (at != messages.size()) return Error::invalid_messages_size;
  batch.bytes = at;
  return batch;
}

}  // namespace hark::storage
