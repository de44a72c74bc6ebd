#include "hark/protocol/identifier.h"

#include <algorithm>
#include <string>

#include "hark/protocol/primitives.h"

namespace hark::protocol {
namespace {

constexpr uint8_t numeric_length = 4;

}  // namespace

Identifier Identifier::numeric(uint32_t value) {
  Identifier id;
  id.number_ = value;
  return id;
}

Result<Identifier> Identifier::named(std::string_view name) {
  if (name.empty() || name.size() > name_size_max) return Error::invalid_format;
  Identifier id;
  id.kind_ = Kind::string;
  id.name_length_ = static_cast<uint8_t>(name.size());
  std::copy(name.begin(), name.end(), id.name_.begin());
  return id;
}

bool Identifier::operator==(const Identifier& other) const {
  if (kind_ != other.kind_) return false;
  return is_numeric() ? number_ == other.number_ : name() == other.name();
}

Result<Identifier> read_identifier(Reader& reader) {
  // Iggy reads kind, length and the value bytes before it looks at the kind, so a truncated
  // value is InvalidCommand whatever the kind says.
  HARK_TRY_ASSIGN(const uint8_t kind, reader.u8());
  HARK_TRY_ASSIGN(const uint8_t length, reader.u8());
  HARK_TRY_ASSIGN(const std::span<const std::byte> value, reader.bytes(length));
  if (kind == static_cast<uint8_t>(Identifier::Kind::numeric)) {
    if (length != numeric_length) return Error::invalid_format;
    return Identifier::numeric(load_u32(value, 0));
  }
  if (kind == static_cast<uint8_t>(Identifier::Kind::string)) {
    if (length == 0) return Error::invalid_format;
    if (!valid_utf8(value)) return Error::invalid_command;
    return Identifier::named(as_chars(value));
  }
  return Error::invalid_command;
}

void write_identifier(Writer& writer, const Identifier& id) {
  writer.u8(static_cast<uint8_t>(id.kind()));
  if (id.is_numeric()) {
    writer.u8(numeric_length);
    writer.u32(id.number());
    return;
  }
  writer.u8(static_cast<uint8_t>(id.name().size()));
  writer.chars(id.name());
}

std::string identifier_text(const Identifier& id) {
  if (id.is_numeric()) return std::to_string(id.number());
  std::string text = "'";
  text.append(id.name());
  text.push_back('\'');
  return text;
}

}  // namespace hark::protocol
