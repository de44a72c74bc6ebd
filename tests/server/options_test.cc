// Covers harkd's flag parsing: defaults, both `--flag value` and `--flag=value`, --help, and
// that every bad flag is an error with a message (main() prints it and exits 2), plus the
// mapping to BrokerOptions.
#include "hark/server/options.h"

#include <initializer_list>
#include <vector>

#include <gtest/gtest.h>

#include "hark/server/config.h"

namespace hark::server {
namespace {

ParsedFlags parse(std::initializer_list<const char*> args, uint32_t shards_default = 4) {
  const std::vector<const char*> list(args);
  return parse_flags(list, shards_default);
}

TEST(ParseFlags, DefaultsWithoutFlags) {
  const ParsedFlags parsed = parse({}, 6);
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::run);
  EXPECT_EQ(parsed.options.address, "127.0.0.1:8090");
  EXPECT_EQ(parsed.options.data_directory, "./data");
  EXPECT_EQ(parsed.options.shards_count, 6u);
}

TEST(ParseFlags, ShardsDefaultIsAtLeastOne) { EXPECT_EQ(parse({}, 0).options.shards_count, 1u); }

TEST(ParseFlags, TakesValuesAfterASpaceOrAnEqualsSign) {
  const ParsedFlags parsed = parse({"--address", "127.0.0.1:0", "--data-dir=/tmp/hark", "--shards",
                                    "3", "--connections-max=50", "--log-level", "debug"});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::run) << parsed.error;
  EXPECT_EQ(parsed.options.address, "127.0.0.1:0");
  EXPECT_EQ(parsed.options.data_directory, "/tmp/hark");
  EXPECT_EQ(parsed.options.shards_count, 3u);
  EXPECT_EQ(parsed.options.connections_max, 50u);
  EXPECT_EQ(parsed.options.log_level, log::Level::debug);
}

TEST(ParseFlags, HelpWinsOverEverythingElse) {
  EXPECT_EQ(parse({"--shards", "2", "--help"}).outcome, ParsedFlags::Outcome::help);
  EXPECT_EQ(parse({"-h"}).outcome, ParsedFlags::Outcome::help);
  EXPECT_NE(usage().find("--address"), std::string::npos);
}

TEST(ParseFlags, BadFlagsAreErrorsWithAMessage) {
  for (const std::vector<const char*>& args : std::vector<std::vector<const char*>>{
           {"--nope"},
           {"--shards"},
           {"--shards", "0"},
           {"--shards", "two"},
           {"--shards", "2x"},
           {"--shards", "5000"},
           {"--address", "example.com:80"},
           {"--address", "127.0.0.1"},
           {"--address=127.0.0.1:99999"},
           {"--data-dir="},
           {"--connections-max", "0"},
           {"--log-level", "loud"},
           {"positional"},
       }) {
    const ParsedFlags parsed = parse_flags(args, 4);
    EXPECT_EQ(parsed.outcome, ParsedFlags::Outcome::error) << args.front();
    EXPECT_FALSE(parsed.error.empty()) << args.front();
  }
}

TEST(BrokerOptionsOf, CarriesDataDirectoryAndShards) {
  ServerOptions options;
  options.data_directory = "relative/dir";
  options.shards_count = 5;
  const core::BrokerOptions broker = broker_options(options);
  EXPECT_EQ(broker.data_directory, "relative/dir");
  EXPECT_EQ(broker.shards_count, 5u);
  EXPECT_EQ(broker.hooks, nullptr);
}

}  // namespace
}  // namespace hark::server
