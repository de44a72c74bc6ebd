#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hark/core/base/result.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// The small shared encodings of docs/wire.md §Common encodings: names, strings, consumers,
// polling strategies and optional partition ids. Pure functions over Reader and Writer. Read
// functions return the Iggy 0.8.0 error for malformed input: invalid_command (3) for
// truncation, unknown discriminants and bad UTF-8; invalid_format (4) for validation failures.

// True if `bytes` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF),
// the same rule as Rust's str::from_utf8, which Iggy applies to every string it decodes.
bool valid_utf8(std::span<const std::byte> bytes);

// WireName: [len u8 (1..=255)][UTF-8]. Length 0 → invalid_format, checked before the bytes.
Result<std::string> read_wire_name(Reader& reader);
// Fails the writer with invalid_format if `name` is empty or over 255 bytes.
void write_wire_name(Writer& writer, std::string_view name);

// [len u8][UTF-8], length 0 allowed (passwords).
Result<std::string> read_short_string(Reader& reader);
// Fails the writer with invalid_format if `text` is over 255 bytes.
void write_short_string(Writer& writer, std::string_view text);

// [len u32][UTF-8] (stats strings, client addresses, cluster names, login version/context).
// The length is only ever compared with the bytes left, never used to allocate up front.
Result<std::string> read_long_string(Reader& reader);
void write_long_string(Writer& writer, std::string_view text);

enum class ConsumerKind : uint8_t { consumer = 1, group = 2 };

// Who polls or stores an offset: [kind u8][Identifier].
struct Consumer {
  ConsumerKind kind = ConsumerKind::consumer;
  Identifier id;

  bool operator==(const Consumer&) const = default;
};

Result<Consumer> read_consumer(Reader& reader);
void write_consumer(Writer& writer, const Consumer& consumer);

enum class PollingKind : uint8_t { offset = 1, timestamp = 2, first = 3, last = 4, next = 5 };

// [kind u8][value u64]: 9 bytes. The value is ignored for first, last and next.
struct PollingStrategy {
  PollingKind kind = PollingKind::offset;
  uint64_t value = 0;

  bool operator==(const PollingStrategy&) const = default;
};

Result<PollingStrategy> read_polling_strategy(Reader& reader);
void write_polling_strategy(Writer& writer, const PollingStrategy& strategy);

// [flag u8][u32]: 5 bytes; only flag 1 means "present" (any other flag is None, as in 0.8.0).
Result<std::optional<uint32_t>> read_optional_partition(Reader& reader);
void write_optional_partition(Writer& writer, std::optional<uint32_t> partition_id);

// [u8] read as a bool the Iggy way: any non-zero byte is true.
Result<bool> read_bool(Reader& reader);
inline void write_bool(Writer& writer, bool value) { writer.u8(value ? 1 : 0); }

}  // namespace hark::protocol
