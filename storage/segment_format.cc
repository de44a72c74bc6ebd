#include "hark/storage/segment_format.h"

#include <cstdio>

#include "hark/core/base/message_layout.h"

namespace hark::storage {

void encode_index_entry(const IndexEntry& entry, std::span<std::byte, index_entry_bytes> bytes) {
  store_u32(bytes, 0, entry.relative_offset);
  store_u32(bytes, 4, entry.position);
  store_u64(bytes, 8, entry.timestamp);
}

IndexEntry decode_index_entry(std::span<const std::byte, index_entry_bytes> bytes) {
  return IndexEntry{.relative_offset = load_u32(bytes, 0),
                    .position = load_u32(bytes, 4),
                    .timestamp = load_u64(bytes, 8)};
}

std::string segment_file_name(Offset start, std::string_view suffix) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(start.value()));
  std::string name(digits);
  name.append(suffix);
  return name;
}

std::optional<Offset> parse_log_file_name(std::string_view name) {
  constexpr size_t digits_count = 20;
  constexpr std::string_view suffix = ".log";
  if (name.size() != digits_count + suffix.size() || !name.ends_with(suffix)) return std::nullopt;
  uint64_t value = 0;
  for (size_t i = 0; i < digits_count; i++) {
    const char digit = name[i];
    if (digit < '0' || digit > '9') return std::nullopt;
    const auto digit_value = static_cast<uint64_t>(digit - '0');
    if (value > (UINT64_MAX - digit_value) / 10) return std::nullopt;
    value = value * 10 + digit_value;
  }
  return Offset(value);
}

}  // namespace hark::storage
