#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "hark/tools/cli/commands.h"

namespace hark::cli {

// One command of the CLI: its words, its arguments and flags, its help, its function.
struct CommandSpec {
  std::string_view name;       // "stream create"
  std::string_view arguments;  // "STREAM NAME [--partitions N]", for the usage line
  std::string_view summary;    // One line.
  std::string_view flags;      // Its own flags, space-separated, without "--".
  std::string_view details;    // The help's body: what each flag does; may be empty.
  uint32_t args_min = 0;
  uint32_t args_max = 0;
  CommandFunction run = nullptr;
};

// Every flag any command takes, split by kind, for parse_command_line(). Each command then
// accepts only global_flags and its own CommandSpec::flags.
inline constexpr std::string_view value_flags =
    "address username password token count partitions message-expiry max-size name status "
    "permissions expiry partition key rate batch consumer group from wait format offset min "
    "timeout above below tls-ca tls-server-name";
inline constexpr std::string_view switch_flags = "verbose help follow no-auto-commit tls";

std::span<const CommandSpec> command_table();

// The command named by the first one or two positionals, or nullptr.
const CommandSpec* find_command(std::span<const std::string> positionals);
// Words in a command's name (1 for "ping", 2 for "stream create").
size_t command_words(const CommandSpec& command);
// True if `word` starts the name of at least one command with two words ("stream").
bool is_family(std::string_view word);
// True if `flag` is global or one of the command's own.
bool accepts_flag(const CommandSpec& command, std::string_view flag);

// "hark stream create NAME", wrapped to stay under 100 columns after "usage: ".
std::string usage_line(const CommandSpec& command);
// "missing STREAM NAME": the required arguments after the first `given`.
std::string missing_arguments(const CommandSpec& command, size_t given);
// `hark --help`: every command, the global flags, environment and exit status.
std::string tool_help();
// `hark stream --help`: the commands of one family.
std::string family_help(std::string_view family);
// `hark stream create --help`.
std::string command_help(const CommandSpec& command);

}  // namespace hark::cli
