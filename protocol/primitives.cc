#include "hark/protocol/primitives.h"

namespace hark::protocol {
namespace {

constexpr size_t short_string_size_max = 255;

// The length of the UTF-8 sequence starting at bytes[at], or 0 if it is malformed. Follows
// the Unicode table of well-formed byte sequences (Unicode 15 §3.9, table 3-7).
size_t utf8_sequence_length(std::span<const std::byte> bytes, size_t at) {
  const auto byte = [&](size_t i) { return std::to_integer<uint8_t>(bytes[at + i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t low = 0x80;
  uint8_t high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // Overlong.
    if (lead == 0xED) high = 0x9F;  // Surrogates.
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // Overlong.
    if (lead == 0xF4) high = 0x8F;  // Above U+10FFFF.
  } else {
    return 0;
  }
  if (bytes.size() - at < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

Result<std::string> read_utf8(Reader& reader, size_t length) {
  HARK_TRY_ASSIGN(const std::span<const std::byte> text, reader.bytes(length));
  if (!valid_utf8(text)) return Error::invalid_command;
  return std::string(as_chars(text));
}

}  // namespace

bool valid_utf8(std::span<const std::byte> bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t length = utf8_sequence_length(bytes, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

Result<std::string> read_wire_name(Reader& reader) {
  HARK_TRY_ASSIGN(const uint8_t length, reader.u8());
  if (length == 0) return Error::invalid_format;
  return read_utf8(reader, length);
}

void write_wire_name(Writer& writer, std::string_view name) {
  if (name.empty() || name.size() > short_string_size_max) {
    writer.fail(Error::invalid_format);
    return;
  }
  writer.u8(static_cast<uint8_t>(name.size()));
  writer.chars(name);
}

Result<std::string> read_short_string(Reader& reader) {
  HARK_TRY_ASSIGN(const uint8_t length, reader.u8());
  return read_utf8(reader, length);
}

void write_short_string(Writer& writer, std::string_view text) {
  if (text.size() > short_string_size_max) {
    writer.fail(Error::invalid_format);
    return;
  }
  writer.u8(static_cast<uint8_t>(text.size()));
  writer.chars(text);
}

Result<std::string> read_long_string(Reader& reader) {
  HARK_TRY_ASSIGN(const uint32_t length, reader.u32());
  return read_utf8(reader, length);
}

void write_long_string(Writer& writer, std::string_view text) {
  if (text.size() > UINT32_MAX) {
    writer.fail(Error::invalid_format);
    return;
  }
  writer.u32(static_cast<uint32_t>(text.size()));
  writer.chars(text);
}

Result<Consumer> read_consumer(Reader& reader) {
  HARK_TRY_ASSIGN(const uint8_t kind, reader.u8());
  if (kind != static_cast<uint8_t>(ConsumerKind::consumer) &&
      kind != static_cast<uint8_t>(ConsumerKind::group)) {
    return Error::invalid_command;
  }
  HARK_TRY_ASSIGN(Identifier id, read_identifier(reader));
  return Consumer{static_cast<ConsumerKind>(kind), id};
}

void write_consumer(Writer& writer, const Consumer& consumer) {
  writer.u8(static_cast<uint8_t>(consumer.kind));
  write_identifier(writer, consumer.id);
}

Result<PollingStrategy> read_polling_strategy(Reader& reader) {
  // The kind is checked before the value is read, as in 0.8.0 (both fail with the same code).
  HARK_TRY_ASSIGN(const uint8_t kind, reader.u8());
  if (kind < static_cast<uint8_t>(PollingKind::offset) ||
      kind > static_cast<uint8_t>(PollingKind::next)) {
    return Error::invalid_command;
  }
  HARK_TRY_ASSIGN(const uint64_t value, reader.u64());
  return PollingStrategy{static_cast<PollingKind>(kind), value};
}

void write_polling_strategy(Writer& writer, const PollingStrategy& strategy) {
  writer.u8(static_cast<uint8_t>(strategy.kind));
  writer.u64(strategy.value);
}

Result<std::optional<uint32_t>> read_optional_partition(Reader& reader) {
  HARK_TRY_ASSIGN(const uint8_t flag, reader.u8());
  HARK_TRY_ASSIGN(const uint32_t partition_id, reader.u32());
  if (flag != 1) return std::optional<uint32_t>();
  return std::optional<uint32_t>(partition_id);
}

void write_optional_partition(Writer& writer, std::optional<uint32_t> partition_id) {
  writer.u8(partition_id.has_value() ? 1 : 0);
  writer.u32(partition_id.value_or(0));
}

Result<bool> read_bool(Reader& reader) {
  HARK_TRY_ASSIGN(const uint8_t value, reader.u8());
  return value != 0;
}

}  // namespace hark::protocol
