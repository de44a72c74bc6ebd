#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "hark/core/base/result.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// A stream, topic, group, user or consumer id as the wire carries it: a u32 or a name.
// Wire: [kind u8: 1 numeric, 2 string][length u8][value] (docs/wire.md §Identifier).
//
// The name lives inline (at most 255 bytes), so an Identifier never allocates: decoding a poll
// or a send on the data path costs no heap traffic. Always valid by construction: numeric ids
// are any u32 (0 included, ids are 0-based), names are 1..255 bytes.
class Identifier {
 public:
  enum class Kind : uint8_t { numeric = 1, string = 2 };

  static constexpr size_t name_size_max = 255;

  // Numeric id 0.
  Identifier() = default;

  static Identifier numeric(uint32_t value);
  // Error::invalid_format if `name` is empty or longer than 255 bytes. Bytes are kept as given
  // (the send path accepts any bytes; the generic decoder checks UTF-8 before calling this).
  static Result<Identifier> named(std::string_view name);

  Kind kind() const { return kind_; }
  bool is_numeric() const { return kind_ == Kind::numeric; }
  // 0 for a named id.
  uint32_t number() const { return number_; }
  // Empty for a numeric id.
  std::string_view name() const { return {name_.data(), name_length_}; }

  // Bytes on the wire: 2 + 4 or 2 + name length.
  size_t encoded_size() const { return 2 + (is_numeric() ? 4 : name_length_); }

  bool operator==(const Identifier& other) const;

 private:
  Kind kind_ = Kind::numeric;
  uint8_t name_length_ = 0;
  uint32_t number_ = 0;
  std::array<char, name_size_max> name_{};
};

// Decodes an Identifier with the rules of Iggy's generic decoder (every command but send):
// truncated (even before the kind is checked) → invalid_command (3); unknown kind → 3;
// numeric with length ≠ 4 → invalid_format (4); string with length 0 → 4; bad UTF-8 → 3.
Result<Identifier> read_identifier(Reader& reader);

void write_identifier(Writer& writer, const Identifier& id);

// "42" or "'orders'", for logs and the CLI.
std::string identifier_text(const Identifier& id);

}  // namespace hark::protocol
