#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/base/units.h"
#include "hark/server/options.h"

namespace hark::server {

// harkd's configuration: defaults, a TOML file, environment variables and flags, applied in
// that order (so flags > env > file > defaults). Every setting has one TOML key
// ("section.name"), one flag and one HARK_* variable, plus the IGGY_* name users know where
// Iggy 0.8.0 has the same setting (docs/operations.md lists them all). Control plane.
//
//   harkd --config harkd.toml --shards 4      # the file, then the flag on top
//   HARK_MAX_WAIT=5s harkd --print-config      # the effective config as TOML, exit 0

// The outcome of loading the configuration.
struct ParsedFlags {
  enum class Outcome : uint8_t { run, help, print, error };
  Outcome outcome = Outcome::run;
  ServerOptions options;
  std::string error;                  // For Outcome::error: one line, for stderr.
  std::vector<std::string> warnings;  // Lines for stderr that do not stop harkd.
};

// Loads the configuration from `args` (argv without the program name), `environment`
// ("NAME=value" strings, as environ) and the file named by --config (or HARK_CONFIG).
// `shards_default` (the number of CPUs; at least 1) is the default of server.shards. Errors:
// an unknown flag or file key (named), a bad value (named, with what is expected), an unreadable
// or malformed file. An unknown HARK_*
// variable is a warning. Never exits and never prints: main() decides.
ParsedFlags load_config(std::span<const char* const> args, std::span<const char* const> environment,
                        uint32_t shards_default);

// load_config() without environment.
ParsedFlags parse_flags(std::span<const char* const> args, uint32_t shards_default);

// The effective configuration as TOML, every key present (what --print-config prints).
std::string print_config(const ServerOptions& options);

// The --help text.
std::string usage();

// "500us", "250ms", "5s", "2m", "1h", or "0": a non-negative duration. nullopt otherwise.
std::optional<Duration> parse_duration(std::string_view text);
std::string format_duration(Duration duration);
// storage.durability's value: "memory", "write", "interval" or "always".
std::string_view durability_name(storage::Durability durability);
// Bytes: "1048576", "64KiB", "1 GiB", "10MB" (KB/MB/GB are 1000-based, KiB/MiB/GiB 1024).
std::optional<uint64_t> parse_size(std::string_view text);

}  // namespace hark::server
