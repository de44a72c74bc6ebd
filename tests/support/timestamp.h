#pragma once

#include <cstddef>
#include <string_view>

namespace hark::test {

// True if `text` is a log line's timestamp: RFC 3339 in UTC with microseconds,
// "2026-12-01T16:40:26.123456Z" (core/base/log.h).
inline bool is_log_timestamp(std::string_view text) {
  constexpr std::string_view shape = "0000-00-00T00:00:00.000000Z";  // 0: any digit.
  if (text.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); i++) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (shape[i] == '0' ? !digit : text[i] != shape[i]) return false;
  }
  return true;
}

}  // namespace hark::test
