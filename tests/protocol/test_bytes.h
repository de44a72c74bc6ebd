#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "hark/protocol/writer.h"

namespace hark::protocol::test {

// Bytes from hex text as the wire notes write frames: "01 04 00000000 | 0a". Spaces and '|'
// are ignored. Requires: an even number of hex digits (test data, not input).
Bytes hex(std::string_view text);

// Lower-case hex without separators, for readable assertion failures.
std::string to_hex(std::span<const std::byte> bytes);

// The bytes of a string (no terminator).
Bytes text_bytes(std::string_view text);

}  // namespace hark::protocol::test
