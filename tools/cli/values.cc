#include "hark/tools/cli/values.h"

#include <array>
#include <charconv>
#include <chrono>
#include <limits>

namespace hark::cli {
namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// The leading decimal digits of `text` as a u64, and the rest; nullopt for no digits or
// overflow.
struct Number {
  uint64_t value = 0;
  std::string_view rest;
};
std::optional<Number> leading_number(std::string_view text) {
  Number number;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number.value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  number.rest = text.substr(static_cast<size_t>(end - text.data()));
  return number;
}

// value × factor, or nullopt on overflow.
std::optional<uint64_t> multiply(uint64_t value, uint64_t factor) {
  if (factor != 0 && value > std::numeric_limits<uint64_t>::max() / factor) return std::nullopt;
  return value * factor;
}

struct Unit {
  std::string_view suffix;
  uint64_t factor;
};

constexpr std::array<Unit, 6> duration_units_ns = {{{"us", 1'000},
                                                    {"\xC2\xB5s", 1'000},  // µs
                                                    {"ms", 1'000'000},
                                                    {"s", 1'000'000'000},
                                                    {"m", 60'000'000'000},
                                                    {"h", 3'600'000'000'000}}};

constexpr std::array<Unit, 8> size_units = {{{"B", 1},
                                             {"KB", 1'000},
                                             {"MB", 1'000'000},
                                             {"GB", 1'000'000'000},
                                             {"KiB", uint64_t{1} << 10},
                                             {"MiB", uint64_t{1} << 20},
                                             {"GiB", uint64_t{1} << 30},
                                             {"", 1}}};

struct PermissionName {
  std::string_view name;
  bool protocol::GlobalPermissions::*field;
};
using G = protocol::GlobalPermissions;
constexpr std::array<PermissionName, 10> permission_names = {{
    {"manage_servers", &G::manage_servers},
    {"read_servers", &G::read_servers},
    {"manage_users", &G::manage_users},
    {"read_users", &G::read_users},
    {"manage_streams", &G::manage_streams},
    {"read_streams", &G::read_streams},
    {"manage_topics", &G::manage_topics},
    {"read_topics", &G::read_topics},
    {"poll_messages", &G::poll_messages},
    {"send_messages", &G::send_messages},
}};

}  // namespace

Parsed<Duration> parse_duration(std::string_view text, std::string_view what) {
  const std::string expected = std::string(what) + ": expected a duration such as 500us, 250ms, " +
                               "5s or 2m, got " + quoted(text);
  const std::optional<Number> number = leading_number(text);
  if (!number) return Parsed<Duration>::failure(expected);
  if (number->rest.empty()) {
    if (number->value == 0) return Duration::zero();
    return Parsed<Duration>::failure(std::string(what) + ": a duration needs a unit (500us, " +
                                     "250ms, 5s, 2m), got " + quoted(text));
  }
  for (const Unit& unit : duration_units_ns) {
    if (number->rest != unit.suffix) continue;
    const std::optional<uint64_t> ns = multiply(number->value, unit.factor);
    if (!ns || *ns > uint64_t{INT64_MAX}) {
      return Parsed<Duration>::failure(std::string(what) + ": duration too long: " + quoted(text));
    }
    return Duration(static_cast<int64_t>(*ns));
  }
  return Parsed<Duration>::failure(expected);
}

Parsed<uint64_t> parse_u64(std::string_view text, std::string_view what) {
  const std::optional<Number> number = leading_number(text);
  if (!number || !number->rest.empty()) {
    return Parsed<uint64_t>::failure(std::string(what) + ": expected a whole number, got " +
                                     quoted(text));
  }
  return number->value;
}

Parsed<uint32_t> parse_u32(std::string_view text, std::string_view what) {
  const Parsed<uint64_t> wide = parse_u64(text, what);
  if (!wide.ok()) return failed_as<uint32_t>(wide);
  if (*wide > std::numeric_limits<uint32_t>::max()) {
    return Parsed<uint32_t>::failure(std::string(what) + ": " + quoted(text) +
                                     " is over 4294967295");
  }
  return static_cast<uint32_t>(*wide);
}

Parsed<protocol::Identifier> parse_identifier(std::string_view text, std::string_view what) {
  const std::optional<Number> number = leading_number(text);
  if (number && number->rest.empty()) {
    const Parsed<uint32_t> id = parse_u32(text, what);
    if (!id.ok()) return failed_as<protocol::Identifier>(id);
    return protocol::Identifier::numeric(*id);
  }
  Result<protocol::Identifier> named = protocol::Identifier::named(text);
  if (!named.ok()) {
    return Parsed<protocol::Identifier>::failure(std::string(what) +
                                                 ": a name is 1 to 255 bytes long");
  }
  return *named;
}

Parsed<protocol::PollingStrategy> parse_strategy(std::string_view text) {
  using protocol::PollingKind;
  if (text == "next") return protocol::PollingStrategy{.kind = PollingKind::next};
  if (text == "first") return protocol::PollingStrategy{.kind = PollingKind::first};
  if (text == "last") return protocol::PollingStrategy{.kind = PollingKind::last};
  for (const auto& [prefix, kind] :
       {std::pair{std::string_view("offset:"), PollingKind::offset},
        std::pair{std::string_view("timestamp:"), PollingKind::timestamp}}) {
    if (!text.starts_with(prefix)) continue;
    const Parsed<uint64_t> value = parse_u64(text.substr(prefix.size()), "--from");
    if (!value.ok()) return failed_as<protocol::PollingStrategy>(value);
    return protocol::PollingStrategy{.kind = kind, .value = *value};
  }
  return Parsed<protocol::PollingStrategy>::failure(
      "--from: expected next, first, last, offset:N or timestamp:MICROSECONDS, got " +
      quoted(text));
}

Parsed<Rate> parse_rate(std::string_view text) {
  const std::string expected = "--rate: expected messages per time such as 100/s, 600/m or " +
                               std::string("36000/h, got ") + quoted(text);
  const std::optional<Number> number = leading_number(text);
  if (!number || number->value == 0) return Parsed<Rate>::failure(expected);
  using std::chrono::hours, std::chrono::minutes, std::chrono::seconds;
  if (number->rest == "/s") return Rate{number->value, seconds(1)};
  if (number->rest == "/m") return Rate{number->value, minutes(1)};
  if (number->rest == "/h") return Rate{number->value, hours(1)};
  return Parsed<Rate>::failure(expected);
}

Parsed<uint64_t> parse_size_bytes(std::string_view text, std::string_view what) {
  if (text == "unlimited") return std::numeric_limits<uint64_t>::max();
  const std::string expected = std::string(what) + ": expected a size such as 1048576, 64KiB, " +
                               "10MB, 1GiB or unlimited, got " + quoted(text);
  const std::optional<Number> number = leading_number(text);
  if (!number) return Parsed<uint64_t>::failure(expected);
  for (const Unit& unit : size_units) {
    if (number->rest != unit.suffix) continue;
    const std::optional<uint64_t> bytes = multiply(number->value, unit.factor);
    if (!bytes)
      return Parsed<uint64_t>::failure(std::string(what) + ": too large: " + quoted(text));
    return *bytes;
  }
  return Parsed<uint64_t>::failure(expected);
}

Parsed<uint64_t> parse_expiry_us(std::string_view text, std::string_view what) {
  if (text == "never") return std::numeric_limits<uint64_t>::max();
  const Parsed<Duration> duration = parse_duration(text, what);
  if (!duration.ok()) return failed_as<uint64_t>(duration);
  return static_cast<uint64_t>(std::chrono::duration_cast<Microseconds>(*duration).count());
}

Parsed<uint8_t> parse_user_status(std::string_view text) {
  if (text == "active") return uint8_t{1};
  if (text == "inactive") return uint8_t{2};
  return Parsed<uint8_t>::failure("--status: expected active or inactive, got " + quoted(text));
}

Parsed<protocol::Permissions> parse_permissions(std::string_view text) {
  protocol::Permissions permissions;
  if (text == "none") return permissions;
  if (text == "all") {
    for (const PermissionName& entry : permission_names) permissions.global.*entry.field = true;
    return permissions;
  }
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    bool known = false;
    for (const PermissionName& entry : permission_names) {
      if (entry.name != name) continue;
      permissions.global.*entry.field = true;
      known = true;
    }
    if (!known) {
      return Parsed<protocol::Permissions>::failure(
          "permissions: unknown permission " + quoted(name) +
          " (manage_servers, read_servers, manage_users, read_users, manage_streams, " +
          "read_streams, manage_topics, read_topics, poll_messages, send_messages, all, none)");
    }
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return permissions;
}

Parsed<MessageFormat> parse_message_format(std::string_view text) {
  if (text == "text") return MessageFormat::text;
  if (text == "hex") return MessageFormat::hex;
  if (text == "json") return MessageFormat::json;
  return Parsed<MessageFormat>::failure("--format: expected text, hex or json, got " +
                                        quoted(text));
}

Parsed<std::string> parse_address(std::string_view text, std::string_view what) {
  const std::string expected =
      std::string(what) + ": expected HOST:PORT such as 127.0.0.1:8090, got " + quoted(text);
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return Parsed<std::string>::failure(expected);
  const Parsed<uint64_t> port = parse_u64(text.substr(colon + 1), what);
  if (!port.ok() || *port == 0 || *port > 65535) return Parsed<std::string>::failure(expected);
  return std::string(text);
}

std::string duration_text(Duration duration) {
  const auto ns = static_cast<uint64_t>(std::max<int64_t>(duration.count(), 0));
  if (ns == 0) return "0s";
  for (auto unit = duration_units_ns.rbegin(); unit != duration_units_ns.rend(); ++unit) {
    if (unit->suffix == "\xC2\xB5s") continue;
    if (ns % unit->factor == 0)
      return std::to_string(ns / unit->factor) + std::string(unit->suffix);
  }
  return std::to_string(ns) + "ns";
}

}  // namespace hark::cli
