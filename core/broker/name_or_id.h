#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "hark/core/base/result.h"

namespace hark::core {

// A stream or topic as a user names it: its numeric id or its name (1..255 bytes). The name
// lives inline, so building one on the data path never allocates.
class NameOrId {
 public:
  static constexpr size_t name_size_max = 255;

  // Numeric id 0.
  NameOrId() = default;

  static NameOrId id(uint32_t value) {
    NameOrId ref;
    ref.number_ = value;
    return ref;
  }
  // Error::invalid_format if `name` is empty or longer than 255 bytes.
  static Result<NameOrId> name(std::string_view name);

  bool is_id() const { return name_length_ == 0; }
  uint32_t number() const { return number_; }
  std::string_view text() const { return {name_.data(), name_length_}; }

 private:
  uint32_t number_ = 0;
  uint8_t name_length_ = 0;
  std::array<char, name_size_max> name_{};
};

}  // namespace hark::core
