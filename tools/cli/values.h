#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hark/core/base/units.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/permissions.h"
#include "hark/protocol/primitives.h"
#include "hark/tools/cli/parsed.h"

namespace hark::cli {

// Parsers for the values the CLI's arguments carry. Pure functions; each failure says what
// was expected, in words for the usage message. `what` names the argument ("--count").

// "500us", "250ms", "5s", "2m", "1h" ("µs" too); a bare "0" is zero. A bare number other than
// 0 is refused: its unit would be a guess.
Parsed<Duration> parse_duration(std::string_view text, std::string_view what);

Parsed<uint64_t> parse_u64(std::string_view text, std::string_view what);
Parsed<uint32_t> parse_u32(std::string_view text, std::string_view what);

// Digits → a numeric id (it must fit a u32); anything else → a name (1..255 bytes).
Parsed<protocol::Identifier> parse_identifier(std::string_view text, std::string_view what);

// "next", "first", "last", "offset:N", "timestamp:µs" (µs since the Unix epoch).
Parsed<protocol::PollingStrategy> parse_strategy(std::string_view text);

// A pace: "N/s", "N/m" or "N/h", N ≥ 1. Spaces between messages: per / messages.
struct Rate {
  uint64_t messages = 0;
  Duration per = Duration::zero();
};
Parsed<Rate> parse_rate(std::string_view text);

// Bytes: "1048576", "64KB", "10MB", "1GB" (powers of 1000), "64KiB", "10MiB", "1GiB",
// "unlimited" (UINT64_MAX, the wire's sentinel).
Parsed<uint64_t> parse_size_bytes(std::string_view text, std::string_view what);

// A message expiry in µs for the wire: a duration, or "never" (UINT64_MAX).
Parsed<uint64_t> parse_expiry_us(std::string_view text, std::string_view what);

// "active" → 1, "inactive" → 2 (the wire's user status).
Parsed<uint8_t> parse_user_status(std::string_view text);

// Global permissions, comma-separated: manage_servers, read_servers, manage_users,
// read_users, manage_streams, read_streams, manage_topics, read_topics, poll_messages,
// send_messages; or "all"; or "none".
Parsed<protocol::Permissions> parse_permissions(std::string_view text);

enum class MessageFormat { text, hex, json };
Parsed<MessageFormat> parse_message_format(std::string_view text);

// "HOST:PORT" or "[v6]:PORT" with a port in 1..65535 (the host is resolved at connect).
Parsed<std::string> parse_address(std::string_view text, std::string_view what);

// "5s", "250ms", "1500us", "2m": the largest unit that shows the value exactly.
std::string duration_text(Duration duration);

}  // namespace hark::cli
