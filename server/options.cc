#include "server/options.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

#include "io/socket.h"

namespace hark::server {
namespace {

constexpr uint32_t shards_max = 1024;
constexpr uint32_t connections_limit = 1'000'000;

std::optional<uint32_t> parse_count(std::string_view text, uint32_t max) {
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value == 0 || value > max) return std::nullopt;
  return value;
}

ParsedFlags failed(std::string error) {
  ParsedFlags parsed;
  parsed.outcome = ParsedFlags::Outcome::error;
  parsed.error = std::move(error);
  return parsed;
}

// Applies one flag with its value to `options`; returns an error line, or empty when fine.
std::string apply_flag(std::string_view name, std::string_view value, ServerOptions& options) {
  if (name == "--address") {
    if (!io::parse_address(value).ok()) {
      return "invalid --address '" + std::string(value) +
             "': expected HOST:PORT with a numeric IPv4 host, [IPv6] or localhost";
    }
    options.address = std::string(value);
  } else if (name == "--data-dir") {
    if (value.empty()) return "--data-dir must not be empty";
    options.data_directory = std::string(value);
  } else if (name == "--shards") {
    const std::optional<uint32_t> shards = parse_count(value, shards_max);
    if (!shards) return "invalid --shards '" + std::string(value) + "': expected 1..1024";
    options.shards_count = *shards;
  } else if (name == "--connections-max") {
    const std::optional<uint32_t> connections = parse_count(value, connections_limit);
    if (!connections) {
      return "invalid --connections-max '" + std::string(value) + "': expected 1..1000000";
    }
    options.connections_max = *connections;
  } else if (name == "--log-level") {
    const std::optional<log::Level> level = log::parse_level(value);
    if (!level) {
      return "invalid --log-level '" + std::string(value) +
             "': expected debug, info, warn, error or off";
    }
    options.log_level = *level;
  } else {
    return "unknown flag '" + std::string(name) + "'";
  }
  return {};
}

}  // namespace

ParsedFlags parse_flags(std::span<const char* const> args, uint32_t shards_default) {
  ParsedFlags parsed;
  parsed.options.shards_count = std::max<uint32_t>(1, std::min(shards_default, shards_max));
  for (size_t i = 0; i < args.size(); i++) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      parsed.outcome = ParsedFlags::Outcome::help;
      return parsed;
    }
    if (!arg.starts_with("--")) return failed("unexpected argument '" + std::string(arg) + "'");
    std::string_view name = arg;
    std::string_view value;
    if (const size_t equals = arg.find('='); equals != std::string_view::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return failed("flag '" + std::string(arg) + "' needs a value");
    }
    std::string error = apply_flag(name, value, parsed.options);
    if (!error.empty()) return failed(std::move(error));
  }
  return parsed;
}

std::string usage() {
  return "usage: harkd [flags]\n"
         "\n"
         "hark's server: Apache Iggy 0.8.0's classic TCP protocol, with deferred-response\n"
         "polling (wait_timeout_us). Prints 'harkd listening on HOST:PORT' when ready;\n"
         "SIGTERM or SIGINT stops it (parked polls are answered empty first).\n"
         "\n"
         "  --address HOST:PORT    listen here on every shard (default 127.0.0.1:8090;\n"
         "                         port 0 picks one free port for all shards)\n"
         "  --data-dir DIR         where partitions live (default ./data)\n"
         "  --shards N             shard threads, 1..1024 (default: the number of CPUs)\n"
         "  --connections-max N    open connections over all shards (default 10000)\n"
         "  --log-level LEVEL      debug, info, warn, error or off (default info)\n"
         "  --help                 print this and exit\n";
}

core::BrokerOptions broker_options(const ServerOptions& options) {
  core::BrokerOptions broker;
  broker.data_directory = options.data_directory;
  broker.shards_count = options.shards_count;
  return broker;
}

}  // namespace hark::server
