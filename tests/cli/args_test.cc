// Covers the command line before any command runs (tools/cli/args.h, command_table.h):
// flags anywhere, "--" and "=" forms, switches vs value flags; the global options' precedence
// (flag > HARK_* > IGGY_* > default, and the token rules); and the command table's lookups.
#include "hark/tools/cli/args.h"

#include <gtest/gtest.h>

#include "hark/tools/cli/command_table.h"

namespace hark::cli {
namespace {

Parsed<CommandLine> parse(std::initializer_list<std::string_view> args) {
  const std::vector<std::string_view> list(args);
  return parse_command_line(list, value_flags, switch_flags);
}

TEST(ParseCommandLine, FlagsMayComeAnywhereInBothForms) {
  const Parsed<CommandLine> line =
      parse({"--address", "h:1", "consume", "s", "--wait=5s", "t", "--follow"});
  ASSERT_TRUE(line.ok()) << line.reason();
  EXPECT_EQ(line->positionals, (std::vector<std::string>{"consume", "s", "t"}));
  EXPECT_EQ(*line->value("address"), "h:1");
  EXPECT_EQ(*line->value("wait"), "5s");
  EXPECT_TRUE(line->has("follow"));
  EXPECT_FALSE(line->has("group"));
}

TEST(ParseCommandLine, DoubleDashEndsFlagsSoMessagesMayLookLikeFlags) {
  const Parsed<CommandLine> line = parse({"produce", "s", "t", "--", "--not-a-flag", "-"});
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(line->positionals,
            (std::vector<std::string>{"produce", "s", "t", "--not-a-flag", "-"}));
}

TEST(ParseCommandLine, TheLastOfARepeatedFlagWins) {
  const Parsed<CommandLine> line = parse({"ping", "--count", "1", "--count", "3"});
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(*line->value("count"), "3");
}

TEST(ParseCommandLine, HelpHasAShortForm) {
  EXPECT_TRUE(parse({"stream", "-h"})->help());
  EXPECT_TRUE(parse({"--help"})->help());
}

TEST(ParseCommandLine, MisusedFlagsAreRefused) {
  EXPECT_FALSE(parse({"ping", "--bogus"}).ok());
  EXPECT_FALSE(parse({"ping", "--count"}).ok());          // Missing value.
  EXPECT_FALSE(parse({"consume", "--follow=yes"}).ok());  // A switch with a value.
  EXPECT_EQ(parse({"ping", "--bogus"}).reason(), "unknown flag --bogus");
}

GlobalOptions resolve(std::initializer_list<std::string_view> args, Environment environment) {
  const Parsed<CommandLine> line = parse(args);
  EXPECT_TRUE(line.ok());
  const Parsed<GlobalOptions> options = resolve_global_options(*line, environment);
  EXPECT_TRUE(options.ok()) << options.reason();
  return options.ok() ? *options : GlobalOptions{};
}

TEST(GlobalOptions, DefaultsAreIggysOwn) {
  const GlobalOptions options = resolve({"ping"}, {});
  EXPECT_EQ(options.address, "127.0.0.1:8090");
  EXPECT_EQ(options.username, "iggy");
  EXPECT_EQ(options.password, "iggy");
  EXPECT_FALSE(options.token.has_value());
}

TEST(GlobalOptions, FlagBeatsHarkVariableBeatsIggyVariable) {
  const Environment environment{{{"HARK_ADDRESS", "hark:1"},
                                 {"IGGY_TCP_ADDRESS", "iggy:2"},
                                 {"IGGY_USERNAME", "iggy-user"},
                                 {"HARK_PASSWORD", "hark-password"},
                                 {"IGGY_PASSWORD", "iggy-password"}}};
  const GlobalOptions from_environment = resolve({"ping"}, environment);
  EXPECT_EQ(from_environment.address, "hark:1");
  EXPECT_EQ(from_environment.username, "iggy-user");
  EXPECT_EQ(from_environment.password, "hark-password");
  const GlobalOptions from_flags =
      resolve({"ping", "--address", "flag:3", "--username", "flagged"}, environment);
  EXPECT_EQ(from_flags.address, "flag:3");
  EXPECT_EQ(from_flags.username, "flagged");
  EXPECT_EQ(resolve({"ping"}, {{{"IGGY_TCP_ADDRESS", "iggy:2"}}}).address, "iggy:2");
}

TEST(GlobalOptions, AnEmptyVariableCountsAsUnset) {
  EXPECT_EQ(resolve({"ping"}, {{{"HARK_ADDRESS", ""}, {"IGGY_TCP_ADDRESS", "iggy:2"}}}).address,
            "iggy:2");
}

TEST(GlobalOptions, TokenFromTheEnvironmentYieldsToExplicitCredentials) {
  const Environment environment{{{"HARK_TOKEN", "env-token"}}};
  EXPECT_EQ(resolve({"ping"}, environment).token, "env-token");
  EXPECT_FALSE(resolve({"ping", "--username", "u"}, environment).token.has_value());
  EXPECT_EQ(resolve({"ping", "--username", "u", "--token", "flag-token"}, environment).token,
            "flag-token");
}

TEST(GlobalOptions, AMalformedAddressNamesWhereItCameFrom) {
  const Parsed<CommandLine> line = parse({"ping"});
  const Parsed<GlobalOptions> options =
      resolve_global_options(*line, {{{"IGGY_TCP_ADDRESS", "no-port"}}});
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.reason().find("IGGY_TCP_ADDRESS"), std::string::npos);
}

TEST(CommandTable, FindsCommandsByOneOrTwoWords) {
  const std::vector<std::string> stream_create{"stream", "create", "orders"};
  const CommandSpec* command = find_command(stream_create);
  ASSERT_NE(command, nullptr);
  EXPECT_EQ(command->name, "stream create");
  EXPECT_EQ(command_words(*command), 2u);
  const std::vector<std::string> consume{"consume", "s", "t"};
  ASSERT_NE(find_command(consume), nullptr);
  EXPECT_EQ(find_command(consume)->name, "consume");
  const std::vector<std::string> unknown{"stream", "frobnicate"};
  EXPECT_EQ(find_command(unknown), nullptr);
  EXPECT_TRUE(is_family("topic"));
  EXPECT_FALSE(is_family("consume"));
}

TEST(CommandTable, EachCommandAcceptsOnlyGlobalAndItsOwnFlags) {
  const std::vector<std::string> consume{"consume"};
  const CommandSpec& command = *find_command(consume);
  EXPECT_TRUE(accepts_flag(command, "follow"));
  EXPECT_TRUE(accepts_flag(command, "address"));
  EXPECT_FALSE(accepts_flag(command, "partitions"));
}

TEST(CommandTable, EveryFlagOfEveryCommandIsKnownToTheParser) {
  for (const CommandSpec& command : command_table()) {
    std::string_view flags = command.flags;
    while (!flags.empty()) {
      const size_t space = flags.find(' ');
      const std::string flag(flags.substr(0, space));
      const std::string dashed = "--" + flag;
      const std::vector<std::string_view> args{dashed, "value"};
      EXPECT_TRUE(parse_command_line(args, value_flags, switch_flags).ok()) << flag;
      flags = space == std::string_view::npos ? std::string_view() : flags.substr(space + 1);
    }
    EXPECT_NE(command.run, nullptr) << command.name;
  }
}

TEST(CommandTable, MissingArgumentsAreNamed) {
  const std::vector<std::string> topic_create{"topic", "create"};
  EXPECT_EQ(missing_arguments(*find_command(topic_create), 1), "missing NAME");
  EXPECT_EQ(missing_arguments(*find_command(topic_create), 0), "missing STREAM NAME");
}

TEST(CommandTable, UsageLinesStayUnderOneHundredColumns) {
  for (const CommandSpec& command : command_table()) {
    const std::string text = usage_line(command);
    std::string_view usage = text;
    while (!usage.empty()) {
      const size_t newline = usage.find('\n');
      EXPECT_LE(usage.substr(0, newline).size() + 7, 100u) << command.name;
      usage = newline == std::string_view::npos ? std::string_view() : usage.substr(newline + 1);
    }
  }
}

}  // namespace
}  // namespace hark::cli
