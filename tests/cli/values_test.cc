// Covers the CLI's value parsers (tools/cli/values.h): durations with units only, ids vs
// names, polling strategies, rates, sizes, expiries, permissions, formats and addresses. Each
// case feeds a string and checks the value, or that the failure names the argument.
#include "hark/tools/cli/values.h"

#include <chrono>
#include <limits>

#include <gtest/gtest.h>

namespace hark::cli {
namespace {

using namespace std::chrono_literals;

TEST(ParseDuration, EveryUnitIsUnderstood) {
  EXPECT_EQ(*parse_duration("500us", "--wait"), 500us);
  EXPECT_EQ(*parse_duration("500\xC2\xB5s", "--wait"), 500us);
  EXPECT_EQ(*parse_duration("250ms", "--wait"), 250ms);
  EXPECT_EQ(*parse_duration("5s", "--wait"), 5s);
  EXPECT_EQ(*parse_duration("2m", "--wait"), 2min);
  EXPECT_EQ(*parse_duration("1h", "--wait"), 1h);
  EXPECT_EQ(*parse_duration("0", "--wait"), Duration::zero());
  EXPECT_EQ(*parse_duration("0s", "--wait"), Duration::zero());
}

TEST(ParseDuration, ABareNumberIsRefusedBecauseItsUnitWouldBeAGuess) {
  const Parsed<Duration> bare = parse_duration("5", "--wait");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.reason().find("--wait"), std::string::npos);
  EXPECT_NE(bare.reason().find("needs a unit"), std::string::npos);
}

TEST(ParseDuration, MalformedAndOverflowingDurationsAreRefused) {
  for (const char* text : {"", "s", "5x", "-1s", "1.5s", "5 s", "5sec", "99999999999999999h"}) {
    EXPECT_FALSE(parse_duration(text, "--wait").ok()) << text;
  }
}

TEST(DurationText, ShowsTheLargestExactUnit) {
  EXPECT_EQ(duration_text(5s), "5s");
  EXPECT_EQ(duration_text(1500ms), "1500ms");
  EXPECT_EQ(duration_text(2min), "2m");
  EXPECT_EQ(duration_text(36h), "36h");
  EXPECT_EQ(duration_text(7us), "7us");
  EXPECT_EQ(duration_text(Duration::zero()), "0s");
}

TEST(ParseNumber, BoundsAreChecked) {
  EXPECT_EQ(*parse_u32("4294967295", "--count"), 4294967295u);
  EXPECT_FALSE(parse_u32("4294967296", "--count").ok());
  EXPECT_EQ(*parse_u64("18446744073709551615", "--count"), UINT64_MAX);
  EXPECT_FALSE(parse_u64("18446744073709551616", "--count").ok());
  EXPECT_FALSE(parse_u64("12abc", "--count").ok());
  EXPECT_FALSE(parse_u64("-3", "--count").ok());
}

TEST(ParseIdentifier, DigitsAreAnIdAndAnythingElseIsAName) {
  const Parsed<protocol::Identifier> id = parse_identifier("7", "STREAM");
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(id->is_numeric());
  EXPECT_EQ(id->number(), 7u);
  const Parsed<protocol::Identifier> name = parse_identifier("orders-7", "STREAM");
  ASSERT_TRUE(name.ok());
  EXPECT_FALSE(name->is_numeric());
  EXPECT_EQ(name->name(), "orders-7");
  EXPECT_FALSE(parse_identifier("4294967296", "STREAM").ok());
  EXPECT_FALSE(parse_identifier(std::string(256, 'n'), "STREAM").ok());
  EXPECT_FALSE(parse_identifier("", "STREAM").ok());
}

TEST(ParseStrategy, EveryFormIsUnderstood) {
  using protocol::PollingKind;
  EXPECT_EQ(parse_strategy("next")->kind, PollingKind::next);
  EXPECT_EQ(parse_strategy("first")->kind, PollingKind::first);
  EXPECT_EQ(parse_strategy("last")->kind, PollingKind::last);
  const Parsed<protocol::PollingStrategy> offset = parse_strategy("offset:42");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset->kind, PollingKind::offset);
  EXPECT_EQ(offset->value, 42u);
  const Parsed<protocol::PollingStrategy> timestamp = parse_strategy("timestamp:1700000000000000");
  ASSERT_TRUE(timestamp.ok());
  EXPECT_EQ(timestamp->kind, PollingKind::timestamp);
  EXPECT_EQ(timestamp->value, 1'700'000'000'000'000u);
  for (const char* text : {"offset:", "offset:x", "offset", "newest", "timestamp:-1", ""}) {
    EXPECT_FALSE(parse_strategy(text).ok()) << text;
  }
}

TEST(ParseRate, MessagesPerSecondMinuteOrHour) {
  const Parsed<Rate> per_second = parse_rate("100/s");
  ASSERT_TRUE(per_second.ok());
  EXPECT_EQ(per_second->messages, 100u);
  EXPECT_EQ(per_second->per, 1s);
  EXPECT_EQ(parse_rate("600/m")->per, 1min);
  EXPECT_EQ(parse_rate("5/h")->per, 1h);
  for (const char* text : {"100", "0/s", "/s", "100/d", "100/ms", "x/s"}) {
    EXPECT_FALSE(parse_rate(text).ok()) << text;
  }
}

TEST(ParseSizeBytes, DecimalAndBinaryUnitsAndUnlimited) {
  EXPECT_EQ(*parse_size_bytes("1048576", "--max-size"), 1048576u);
  EXPECT_EQ(*parse_size_bytes("10MB", "--max-size"), 10'000'000u);
  EXPECT_EQ(*parse_size_bytes("64KiB", "--max-size"), 65536u);
  EXPECT_EQ(*parse_size_bytes("1GiB", "--max-size"), 1073741824u);
  EXPECT_EQ(*parse_size_bytes("unlimited", "--max-size"), UINT64_MAX);
  EXPECT_FALSE(parse_size_bytes("10mb", "--max-size").ok());
  EXPECT_FALSE(parse_size_bytes("99999999999GiB", "--max-size").ok());
}

TEST(ParseExpiry, DurationsInMicrosecondsAndNever) {
  EXPECT_EQ(*parse_expiry_us("90s", "--message-expiry"), 90'000'000u);
  EXPECT_EQ(*parse_expiry_us("250ms", "--message-expiry"), 250'000u);
  EXPECT_EQ(*parse_expiry_us("never", "--message-expiry"), UINT64_MAX);
  EXPECT_FALSE(parse_expiry_us("90", "--message-expiry").ok());
}

TEST(ParsePermissions, NamesAllAndNone) {
  const Parsed<protocol::Permissions> some = parse_permissions("read_streams,poll_messages");
  ASSERT_TRUE(some.ok());
  EXPECT_TRUE(some->global.read_streams);
  EXPECT_TRUE(some->global.poll_messages);
  EXPECT_FALSE(some->global.manage_servers);
  EXPECT_TRUE(parse_permissions("all")->global.manage_servers);
  EXPECT_TRUE(parse_permissions("all")->global.send_messages);
  EXPECT_EQ(*parse_permissions("none"), protocol::Permissions{});
  EXPECT_FALSE(parse_permissions("read_streams,fly").ok());
}

TEST(ParseSmallEnums, FormatsAndUserStatuses) {
  EXPECT_EQ(*parse_message_format("json"), MessageFormat::json);
  EXPECT_EQ(*parse_message_format("hex"), MessageFormat::hex);
  EXPECT_EQ(*parse_message_format("text"), MessageFormat::text);
  EXPECT_FALSE(parse_message_format("yaml").ok());
  EXPECT_EQ(*parse_user_status("active"), 1);
  EXPECT_EQ(*parse_user_status("inactive"), 2);
  EXPECT_FALSE(parse_user_status("asleep").ok());
}

TEST(ParseAddress, NeedsAHostAndAPortInRange) {
  EXPECT_EQ(*parse_address("127.0.0.1:8090", "--address"), "127.0.0.1:8090");
  EXPECT_EQ(*parse_address("[::1]:8090", "--address"), "[::1]:8090");
  EXPECT_EQ(*parse_address("localhost:1", "--address"), "localhost:1");
  for (const char* text : {"127.0.0.1", ":8090", "host:", "host:0", "host:65536", "host:http"}) {
    EXPECT_FALSE(parse_address(text, "--address").ok()) << text;
  }
}

}  // namespace
}  // namespace hark::cli
