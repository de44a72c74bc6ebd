#pragma once

#include <cstdint>
#include <string>

namespace hark::storage::test {

// The payload the crash child writes at `offset` and the crash test expects there: it names
// its offset and varies in length and content, so a message moved, cut or mixed up is seen.
inline std::string crash_payload(uint64_t offset) {
  const size_t filler = static_cast<size_t>(offset * 7919 % 300);
  return "offset-" + std::to_string(offset) + ":" +
         std::string(filler, static_cast<char>('a' + offset % 26));
}

}  // namespace hark::storage::test
