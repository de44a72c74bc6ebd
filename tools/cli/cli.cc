#include "hark/tools/cli/cli.h"

#include <cstdio>
#include <string>

#include "hark/core/base/log.h"
#include "hark/tools/cli/command_table.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/session.h"

namespace hark::cli {
namespace {

void write_text(std::FILE* stream, std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stream);
  std::fflush(stream);
}

int usage_failure(Streams& streams, std::string_view reason, std::string_view usage) {
  write_text(streams.err, "hark: " + std::string(reason) + "\n");
  if (!usage.empty()) write_text(streams.err, "usage: " + std::string(usage) + "\n");
  write_text(streams.err, "Run 'hark help' or add --help for more.\n");
  return static_cast<int>(ExitCode::usage);
}

// `hark help [COMMAND...]`: help for whatever the words name.
int run_help(Streams& streams, std::span<const std::string> words) {
  if (words.empty()) {
    write_text(streams.out, tool_help());
    return 0;
  }
  if (const CommandSpec* command = find_command(words)) {
    write_text(streams.out, command_help(*command));
    return 0;
  }
  if (is_family(words[0])) {
    write_text(streams.out, family_help(words[0]));
    return 0;
  }
  return usage_failure(streams, "no command '" + words[0] + "'", "");
}

// The command named by the line, or a usage failure (or help) if there is none.
int run_unknown(Streams& streams, const CommandLine& line) {
  const std::vector<std::string>& words = line.positionals;
  if (words.empty()) {
    if (line.help()) return run_help(streams, {});
    write_text(streams.err, tool_help());
    return static_cast<int>(ExitCode::usage);
  }
  if (!is_family(words[0])) return usage_failure(streams, "no command '" + words[0] + "'", "");
  if (line.help()) return run_help(streams, std::span(words).first(1));
  const std::string reason = words.size() == 1 ? "'" + words[0] + "' needs a command"
                                               : "no command '" + words[0] + " " + words[1] + "'";
  write_text(streams.err, "hark: " + reason + "\n" + family_help(words[0]));
  return static_cast<int>(ExitCode::usage);
}

// Checks the flags and the number of arguments against the command's spec; "" if they fit.
std::string misfit(const CommandSpec& command, const CommandLine& line) {
  for (const auto& [flag, value] : line.flags) {
    if (!accepts_flag(command, flag)) {
      return "--" + flag + " is not a flag of 'hark " + std::string(command.name) + "'";
    }
  }
  const size_t count = line.positionals.size() - command_words(command);
  if (count < command.args_min) return missing_arguments(command, count);
  if (count > command.args_max) {
    return "unexpected argument '" + line.positionals[command_words(command) + command.args_max] +
           "'";
  }
  return "";
}

}  // namespace

int run_cli(std::span<const std::string_view> args, const Environment& environment,
            Streams& streams, const Stop& stop) {
  const Parsed<CommandLine> line = parse_command_line(args, value_flags, switch_flags);
  if (!line.ok()) return usage_failure(streams, line.reason(), "");
  if (!line->positionals.empty() && line->positionals[0] == "help") {
    return run_help(streams, std::span(line->positionals).subspan(1));
  }
  const CommandSpec* command = find_command(line->positionals);
  if (command == nullptr) return run_unknown(streams, *line);
  if (line->help()) {
    write_text(streams.out, command_help(*command));
    return 0;
  }
  if (const std::string reason = misfit(*command, *line); !reason.empty()) {
    return usage_failure(streams, reason, usage_line(*command));
  }
  const Parsed<GlobalOptions> options = resolve_global_options(*line, environment);
  if (!options.ok()) return usage_failure(streams, options.reason(), usage_line(*command));
  log::set_level(options->verbose ? log::Level::warn : log::Level::error);
  Session session(streams, *options, stop, usage_line(*command));
  const Invocation invocation{.args = std::span(line->positionals).subspan(command_words(*command)),
                              .line = *line};
  return static_cast<int>(command->run(session, invocation));
}

}  // namespace hark::cli
