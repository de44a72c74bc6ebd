// The parsers hark-bench's peer clients and plot rely on: RESP (redis), the NATS protocol and
// the JSON Report writes. Each must say "need more" for every cut of a whole reply, parse the
// whole one, and refuse bytes its protocol forbids, so a benchmark never misreads a reply.
#include <string>

#include <gtest/gtest.h>

#include "hark/bench/peers/nats.h"
#include "hark/bench/peers/redis.h"
#include "hark/bench/suite/json.h"

namespace hark::bench {
namespace {

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

TEST(Resp, AnXreadReplyParsesWholeAndNeedsMoreAtEveryCut) {
  const std::string reply =
      "*1\r\n*2\r\n$6\r\nstream\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\ns\r\n$4\r\na\r\nb\r\n"
      "*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\ns\r\n$2\r\nxy\r\n";
  for (size_t cut = 0; cut < reply.size(); cut++) {
    Resp partial;
    EXPECT_EQ(parse_resp(bytes_of(reply.substr(0, cut)), partial), 0) << cut;
  }
  Resp whole;
  ASSERT_EQ(parse_resp(bytes_of(reply + "+OK\r\n"), whole), static_cast<ptrdiff_t>(reply.size()));
  const auto entries = xread_entries(whole);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].first, "1-0");
  EXPECT_EQ(entries[0].second, "a\r\nb");  // Binary-safe: a bulk string may hold CRLF.
  EXPECT_EQ(entries[1].second, "xy");
}

TEST(Resp, NilErrorsAndIntegersAndGarbage) {
  Resp reply;
  EXPECT_EQ(parse_resp(bytes_of("*-1\r\n"), reply), 5);
  EXPECT_EQ(reply.kind, Resp::Kind::nil);
  EXPECT_TRUE(xread_entries(reply).empty());  // XREAD BLOCK timed out.
  EXPECT_EQ(parse_resp(bytes_of("-ERR no\r\n"), reply), 9);
  EXPECT_EQ(reply.kind, Resp::Kind::error);
  EXPECT_EQ(reply.text, "ERR no");
  EXPECT_EQ(parse_resp(bytes_of(":42\r\n"), reply), 5);
  EXPECT_EQ(reply.integer, 42);
  EXPECT_EQ(parse_resp(bytes_of("?what\r\n"), reply), -1);
}

TEST(Resp, CommandsAreArraysOfBulkStrings) {
  EXPECT_EQ(resp_command({"XADD", "k", "*"}), "*3\r\n$4\r\nXADD\r\n$1\r\nk\r\n$1\r\n*\r\n");
}

TEST(Nats, MsgAndHmsgParseWholeAndNeedMoreAtEveryCut) {
  const std::string msg = "MSG _INBOX.a.pull 1 $JS.ACK.s.c.1.5.5.0.0 5\r\nhello\r\n";
  for (size_t cut = 0; cut < msg.size(); cut++) {
    NatsEvent partial;
    EXPECT_EQ(parse_nats(bytes_of(msg.substr(0, cut)), partial), 0) << cut;
  }
  NatsEvent event;
  ASSERT_EQ(parse_nats(bytes_of(msg + "PING\r\n"), event), static_cast<ptrdiff_t>(msg.size()));
  EXPECT_EQ(event.kind, NatsEvent::Kind::msg);
  EXPECT_EQ(event.subject, "_INBOX.a.pull");
  EXPECT_EQ(event.reply, "$JS.ACK.s.c.1.5.5.0.0");
  EXPECT_EQ(event.payload, "hello");
  EXPECT_EQ(event.status, 0);

  // A pull that expired: status in the header block, no payload.
  const std::string headers = "NATS/1.0 408 Request Timeout\r\n\r\n";
  const std::string hmsg = "HMSG _INBOX.a.pull 1 " + std::to_string(headers.size()) + " " +
                           std::to_string(headers.size()) + "\r\n" + headers + "\r\n";
  ASSERT_EQ(parse_nats(bytes_of(hmsg), event), static_cast<ptrdiff_t>(hmsg.size()));
  EXPECT_EQ(event.status, 408);
  EXPECT_EQ(event.payload, "");
}

TEST(Nats, ControlLinesAndGarbage) {
  NatsEvent event;
  EXPECT_EQ(parse_nats(bytes_of("PING\r\n"), event), 6);
  EXPECT_EQ(event.kind, NatsEvent::Kind::ping);
  EXPECT_EQ(parse_nats(bytes_of("-ERR 'Authorization Violation'\r\n"), event), 32);
  EXPECT_EQ(event.kind, NatsEvent::Kind::err);
  EXPECT_EQ(parse_nats(bytes_of("MSG a 1\r\n"), event), -1);       // No size.
  EXPECT_EQ(parse_nats(bytes_of("HMSG a 1 9 4\r\n"), event), -1);  // Headers over the total.
  EXPECT_EQ(parse_nats(bytes_of("WHAT\r\n"), event), -1);
  EXPECT_EQ(nats_pub("s", "r", "xy"), "PUB s r 2\r\nxy\r\n");
  EXPECT_EQ(nats_pull("S", "c0", "r", 1, 5),
            nats_pub("$JS.API.CONSUMER.MSG.NEXT.S.c0", "r", "{\"batch\":1,\"expires\":5}"));
}

TEST(Json, ReadsWhatReportWrites) {
  const auto value = parse_json(
      "{\"scenario\":\"wake\",\"rows\":[{\"name\":\"a\\\"b\",\"p50_us\":12.5,\"cdf\":[[1,0],"
      "[2e3,1]],\"ok\":true,\"none\":null}],\"notes\":[]}");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ((*value)["scenario"].text, "wake");
  const Json& row = (*value)["rows"].items.at(0);
  EXPECT_EQ(row["name"].text, "a\"b");
  EXPECT_DOUBLE_EQ(row["p50_us"].number_or(-1), 12.5);
  EXPECT_DOUBLE_EQ(row["cdf"].items.at(1).items.at(0).number, 2000);
  EXPECT_EQ(row["ok"].number, 1);
  EXPECT_DOUBLE_EQ(row["none"].number_or(-1), -1);
  EXPECT_DOUBLE_EQ(row["missing"]["deeper"].number_or(-7), -7);
}

TEST(Json, RefusesMalformedInput) {
  for (const char* text : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1} trailing", "nul"}) {
    EXPECT_FALSE(parse_json(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace hark::bench
