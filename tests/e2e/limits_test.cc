// Covers harkd's limits as a client sees them (SEMANTICS.md §Limits): each is a clear error or
// a closed connection, never a hang. A control frame over Iggy's 10 MiB cap and a frame whose
// length cannot hold a command code are InvalidCommand (3), after which harkd closes that
// connection (server/README.md: the bytes after such a frame cannot be trusted); a connection
// over --connections-max is closed at once while the others keep working. Not reachable from
// here: the parked-poll pools (16384 per shard by default, no flag) and max_wait (30 s).
#include <string>

#include <gtest/gtest.h>

#include "core/base/message_layout.h"
#include "protocol/command.h"
#include "protocol/framing.h"
#include "tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

class HarkdLimits : public HarkdTest {};

// A request header announcing `length` (the frame's length field: 4 + payload bytes).
protocol::Bytes request_header(uint32_t length, protocol::Command command) {
  protocol::Bytes header(protocol::request_header_size);
  store_u32(header, 0, length);
  store_u32(header, 4, protocol::command_code(command));
  return header;
}

TEST_F(HarkdLimits, AnOversizedControlFrameIsInvalidCommandAndClosesTheConnection) {
  RawConnection connection;
  ASSERT_TRUE(connection.connect_and_login(address()));
  const protocol::Bytes header =
      request_header(4 + protocol::control_payload_max + 1, protocol::Command::get_streams);
  const std::optional<RawResponse> response = connection.exchange(header);
  ASSERT_TRUE(response.has_value()) << "no answer to an oversized frame";
  EXPECT_EQ(response->status, error_code(Error::invalid_command));
  EXPECT_TRUE(response->payload.empty());
  EXPECT_TRUE(connection.closed_by_peer(SteadyClock::now() + at_once_bound));
  EXPECT_TRUE(admin_->ping().ok()) << "other connections are not affected";
}

TEST_F(HarkdLimits, AFrameTooShortForItsCodeIsInvalidCommand) {
  RawConnection connection;
  ASSERT_TRUE(connection.connect_and_login(address()));
  const std::optional<RawResponse> response =
      connection.exchange(request_header(3, protocol::Command::ping));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, error_code(Error::invalid_command));
  EXPECT_TRUE(admin_->ping().ok());
}

// One shard, so "over the limit" does not depend on which shard the kernel picks.
class HarkdConnectionLimit : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.shards_count = 1;
    options.extra_flags = {"--connections-max", "3"};
    return options;
  }
};

TEST_F(HarkdConnectionLimit, AConnectionOverTheLimitIsClosedAndTheOthersKeepWorking) {
  RawConnection second;
  RawConnection third;
  ASSERT_TRUE(second.connect_and_login(address()));  // admin_ is the first.
  ASSERT_TRUE(third.connect_and_login(address()));
  RawConnection fourth;
  ASSERT_TRUE(fourth.connect(address()));  // The kernel completes the handshake ...
  EXPECT_TRUE(fourth.closed_by_peer(SteadyClock::now() + at_once_bound));  // ... harkd closes.

  EXPECT_TRUE(admin_->ping().ok());
  const std::optional<RawResponse> pong = second.exchange(request_frame(protocol::PingRequest{}));
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->status, 0u);
}

}  // namespace
}  // namespace hark::test
