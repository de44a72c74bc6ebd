// Covers what the CLI prints (tools/cli/output.h): error lines with Iggy's name, code and
// message (placeholders filled from what the command was about), messages in text, hex and
// json, and the table and field layouts. Each case builds its input and compares the text.
#include "hark/tools/cli/output.h"

#include <limits>

#include <gtest/gtest.h>

#include "hark/protocol/message.h"
#include "hark/protocol/reader.h"

namespace hark::cli {
namespace {

TEST(ErrorLine, NameCodeAndMessageWithPlaceholdersFilled) {
  EXPECT_EQ(error_line(Error::stream_id_not_found, {.stream = "7"}),
            "error: StreamIdNotFound (1009): Stream with ID: 7 was not found.");
  EXPECT_EQ(error_line(Error::topic_name_not_found, {.stream = "orders", .topic = "events"}),
            "error: TopicNameNotFound (2011): Topic with name: events for stream with ID: "
            "orders was not found.");
  EXPECT_EQ(error_line(Error::partition_not_found, {.stream = "s", .topic = "t", .partition = "9"}),
            "error: PartitionNotFound (3007): Partition with ID: 9 for topic with ID: t for "
            "stream with ID: s was not found.");
}

TEST(ErrorLine, MessagesWithoutPlaceholdersAreKept) {
  EXPECT_EQ(error_line(Error::feature_unavailable, {}),
            "error: FeatureUnavailable (5): Feature is unavailable");
  EXPECT_EQ(error_line(Error::invalid_credentials, {.user = "iggy"}),
            "error: InvalidCredentials (42): Invalid credentials");
}

TEST(ErrorLine, APlaceholderNobodyCanFillIsAQuestionMark) {
  EXPECT_EQ(error_line(Error::stream_id_not_found, {}),
            "error: StreamIdNotFound (1009): Stream with ID: ? was not found.");
  EXPECT_EQ(error_line(Error::invalid_offset, {.stream = "s"}),
            "error: InvalidOffset (4100): Invalid offset: ?");
}

TEST(ErrorLine, AnUnknownCodeStillShowsItsNumber) {
  EXPECT_EQ(error_line(static_cast<Error>(999'999), {}), "error: Unknown (999999): Unknown error");
}

// One message in a buffer, stamped as a server would.
class OneMessage {
 public:
  OneMessage(std::string_view payload, std::string_view user_headers = {}) {
    protocol::Writer writer(bytes_);
    protocol::write_message(writer, {.id = {.low = 0xabc, .high = 0x1},
                                     .origin_timestamp = 5,
                                     .payload = protocol::as_bytes(payload),
                                     .user_headers = protocol::as_bytes(user_headers)});
    protocol::stamp_message(bytes_, {.offset = 42, .timestamp = 1'700'000'000'000'000});
    batch_ = *protocol::MessageBatchView::parse(bytes_, 1);
  }
  protocol::MessageView view() const { return *batch_.begin(); }

 private:
  protocol::Bytes bytes_;
  protocol::MessageBatchView batch_;
};

TEST(MessageLine, TextIsThePayloadOnOneLine) {
  EXPECT_EQ(message_line(OneMessage("hello").view(), 0, MessageFormat::text), "hello");
  EXPECT_EQ(message_line(OneMessage("a\nb\tc\\d\x01").view(), 0, MessageFormat::text),
            "a\\nb\\tc\\\\d\\x01");
  EXPECT_EQ(message_line(OneMessage("caf\xC3\xA9").view(), 0, MessageFormat::text),
            "caf\xC3\xA9");  // UTF-8 stays as it is.
  EXPECT_EQ(message_line(OneMessage("bad\xC3").view(), 0, MessageFormat::text), "bad\\xc3");
}

TEST(MessageLine, HexIsThePayloadInLowercaseHex) {
  EXPECT_EQ(message_line(OneMessage("hi\xff").view(), 0, MessageFormat::hex), "6869ff");
}

TEST(MessageLine, JsonHasEveryFieldAndEscapesThePayload) {
  EXPECT_EQ(message_line(OneMessage("say \"hi\"\n").view(), 3, MessageFormat::json),
            "{\"partition\":3,\"offset\":42,\"timestamp\":1700000000000000,"
            "\"origin_timestamp\":5,\"id\":\"00000000000000010000000000000abc\","
            "\"payload\":\"say \\\"hi\\\"\\n\"}");
}

TEST(MessageLine, JsonCarriesBinaryPayloadsAndUserHeadersAsHex) {
  const std::string line = message_line(OneMessage("\xff\xfe", "h").view(), 0, MessageFormat::json);
  EXPECT_NE(line.find("\"payload_hex\":\"fffe\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"user_headers_hex\":\"68\""), std::string::npos) << line;
  EXPECT_EQ(line.find("\"payload\":"), std::string::npos) << line;
}

TEST(JsonString, ControlCharactersAreEscaped) {
  EXPECT_EQ(json_string(std::string("a\x01\x7f", 3)), "\"a\\u0001\\u007f\"");
}

TEST(Table, ColumnsAreAlignedAndLinesTrimmed) {
  Table table({"ID", "NAME", "X"});
  table.add({"0", "orders", ""});
  table.add({"10", "a", "y"});
  EXPECT_EQ(table.text(),
            "ID  NAME    X\n"
            "0   orders\n"
            "10  a       y\n");
}

TEST(FieldsText, ValuesAreAligned) {
  EXPECT_EQ(fields_text({{"id", "0"}, {"messages", "12"}}),
            "id:       0\n"
            "messages: 12\n");
}

TEST(Sizes, BinaryUnitsAndTheWireSentinels) {
  EXPECT_EQ(size_text(512), "512 B");
  EXPECT_EQ(size_text(1536), "1.5 KiB");
  EXPECT_EQ(size_text(3 * 1024 * 1024), "3.0 MiB");
  EXPECT_EQ(size_text(0, /*sentinels=*/true), "default");
  EXPECT_EQ(size_text(UINT64_MAX, /*sentinels=*/true), "unlimited");
  EXPECT_EQ(size_text(0), "0 B");
}

TEST(Times, UtcTimestampsAndExpiries) {
  EXPECT_EQ(time_text(1'700'000'000'000'000), "2023-11-14T22:13:20Z");
  EXPECT_EQ(time_text(0), "-");
  EXPECT_EQ(expiry_text(0), "default");
  EXPECT_EQ(expiry_text(UINT64_MAX), "never");
  EXPECT_EQ(expiry_text(90'000'000), "90s");
  EXPECT_EQ(expiry_text(3'600'000'000), "1h");
}

}  // namespace
}  // namespace hark::cli
