#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hark/tools/cli/parsed.h"
#include "hark/tools/client/tls.h"

namespace hark::cli {

// A command line split into positionals and flags, before any command gives them meaning.
//
// Flags are "--name value", "--name=value" or, for switches, "--name"; they may appear
// anywhere, before or after the command. "--" ends the flags (what follows is positional, so
// a message may start with "--"); "-h" is "--help"; a lone "-" is positional. A repeated flag
// keeps its last value.
struct CommandLine {
  std::vector<std::string> positionals;
  std::map<std::string, std::string, std::less<>> flags;  // Name without "--" → value.

  bool has(std::string_view name) const { return flags.find(name) != flags.end(); }
  // The flag's value, or nullopt if it was not given.
  std::optional<std::string_view> value(std::string_view name) const;
  bool help() const { return has("help"); }
};

// The flags every command accepts (the connection and the login).
inline constexpr std::string_view global_flags =
    "address username password token verbose help tls tls-ca tls-server-name";

// Splits `args` (argv without the program name). `value_flags` and `switch_flags` are
// space-separated names without "--": the flags that take a value and those that do not.
// Fails on an unknown flag, a value flag at the end with no value, or a switch given a value.
Parsed<CommandLine> parse_command_line(std::span<const std::string_view> args,
                                       std::string_view value_flags, std::string_view switch_flags);

// The variables the CLI reads, looked up once by main (tests build their own).
struct Environment {
  std::map<std::string, std::string, std::less<>> values;

  // The variable's value, or nullopt when it is unset or empty.
  std::optional<std::string_view> get(std::string_view name) const;
};

// The names Environment is filled from.
inline constexpr std::string_view environment_names[] = {
    "HARK_ADDRESS",  "IGGY_TCP_ADDRESS", "HARK_USERNAME", "IGGY_USERNAME",
    "HARK_PASSWORD", "IGGY_PASSWORD",    "HARK_TOKEN",    "HARK_TLS_CA"};

// Where to connect and how to log in. Each field: flag > HARK_* > IGGY_* > default.
// A token logs in with login_with_personal_access_token instead of the password. An explicit
// --username or --password flag beats HARK_TOKEN from the environment; --token beats both.
struct GlobalOptions {
  std::string address = "127.0.0.1:8090";
  std::string username = "iggy";
  std::string password = "iggy";
  std::optional<std::string> token;
  bool verbose = false;
  // --tls, or --tls-ca / HARK_TLS_CA / --tls-server-name (each implies --tls).
  client::TlsOptions tls;
};

// Fails only on a malformed address.
Parsed<GlobalOptions> resolve_global_options(const CommandLine& line,
                                             const Environment& environment);

}  // namespace hark::cli
