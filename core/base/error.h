#pragma once

#include <cstdint>
#include <string_view>

namespace hark {

// An operating error. Values are Iggy's wire status codes (apache/iggy
// core/common/src/error/iggy_error.rs at server-0.8.0; docs/wire.md), so protocol/ writes them
// to the socket unchanged. Never renumber. Codes at or above internal_first never reach the
// wire: they are hark-internal outcomes mapped to a wire code by whoever answers a client.
enum class Error : uint32_t {
#define HARK_ERROR(name, code, iggy_name, message) name = code,
#include "hark/core/base/error_codes.inc"
#undef HARK_ERROR
};

inline constexpr uint32_t error_internal_first = 1'000'000;

// Iggy's PascalCase name of the code ("StreamIdNotFound"), or "Unknown" for a code hark does
// not know (a newer server's code, read by the client library).
std::string_view error_name(Error error);

// Iggy's human-readable message for the code ("Stream with ID: {} was not found." keeps
// Iggy's placeholders), or "Unknown error".
std::string_view error_message(Error error);

// True if `code` is one of the codes above.
bool error_known(uint32_t code);

constexpr uint32_t error_code(Error error) { return static_cast<uint32_t>(error); }

}  // namespace hark
