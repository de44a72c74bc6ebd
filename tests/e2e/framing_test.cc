// Covers the control-frame cap at its boundary, as a client sees it: a get_streams frame whose
// payload is exactly Iggy's 10 MiB is read and answered (the trailing bytes are ignored, as
// 0.8.0 does), one byte more is InvalidCommand (3) and harkd closes that connection (the bytes
// after such a frame cannot be trusted to start a frame; server/README.md). Garbage frames and
// their effect on other connections: commands_admin_test.cc; configurable limits:
// limits_test.cc.
#include "hark/protocol/framing.h"

#include <string>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/protocol/command.h"
#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

class HarkdFraming : public HarkdTest {};

// A get_streams frame with `payload_bytes` zero bytes of payload.
protocol::Bytes get_streams_frame(uint32_t payload_bytes) {
  protocol::Bytes frame(protocol::request_header_size + payload_bytes, std::byte{0});
  store_u32(frame, 0, 4 + payload_bytes);
  store_u32(frame, 4, protocol::command_code(protocol::Command::get_streams));
  return frame;
}

TEST_F(HarkdFraming, ATenMebibyteControlFrameIsTakenAndOneByteMoreClosesTheConnection) {
  RawConnection at_cap;
  ASSERT_TRUE(at_cap.connect_and_login(address()));
  const std::optional<RawResponse> taken =
      at_cap.exchange(get_streams_frame(protocol::control_payload_max), 4 * at_once_bound);
  ASSERT_TRUE(taken.has_value()) << "no answer to a frame at the cap";
  EXPECT_EQ(taken->status, 0u);
  const std::optional<RawResponse> pong = at_cap.exchange(request_frame(protocol::PingRequest{}));
  ASSERT_TRUE(pong.has_value()) << "the connection must stay in step after a frame at the cap";
  EXPECT_EQ(pong->status, 0u);

  RawConnection over_cap;
  ASSERT_TRUE(over_cap.connect_and_login(address()));
  // Only the header: harkd decides on the announced length.
  const protocol::Bytes header = get_streams_frame(protocol::control_payload_max + 1);
  const std::optional<RawResponse> rejected =
      over_cap.exchange({header.data(), protocol::request_header_size});
  ASSERT_TRUE(rejected.has_value()) << "no answer to a frame over the cap";
  EXPECT_EQ(rejected->status, error_code(Error::invalid_command));
  EXPECT_TRUE(rejected->payload.empty());
  EXPECT_TRUE(over_cap.closed_by_peer(SteadyClock::now() + at_once_bound));
  EXPECT_TRUE(admin_->ping().ok()) << "other connections are not affected";
}

}  // namespace
}  // namespace hark::test
