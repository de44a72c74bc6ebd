// Covers open_listeners(): N SO_REUSEPORT sockets on one port (port 0 resolved once by the
// first), and a fixed port someone already listens on is refused rather than shared.
#include <unistd.h>

#include <gtest/gtest.h>

#include "hark/io/socket.h"
#include "hark/server/server.h"

namespace hark::server {
namespace {

TEST(OpenListeners, PortZeroGivesEveryShardTheSamePort) {
  Result<std::vector<int>> listeners = open_listeners(*io::parse_address("127.0.0.1:0"), 3, 16);
  ASSERT_TRUE(listeners.ok());
  ASSERT_EQ(listeners->size(), 3u);
  const uint16_t port = io::local_address(listeners->front())->port();
  EXPECT_NE(port, 0);
  for (const int fd : *listeners) {
    EXPECT_EQ(io::local_address(fd)->port(), port);
    ::close(fd);
  }
}

TEST(OpenListeners, RefusesAPortSomeoneAlreadyListensOn) {
  Result<std::vector<int>> first = open_listeners(*io::parse_address("127.0.0.1:0"), 2, 16);
  ASSERT_TRUE(first.ok());
  const uint16_t port = io::local_address(first->front())->port();
  const io::SocketAddress same = *io::parse_address("127.0.0.1:" + std::to_string(port));
  Result<std::vector<int>> second = open_listeners(same, 2, 16);
  EXPECT_EQ(second.error(), Error::cannot_bind_to_socket);
  for (const int fd : *first) ::close(fd);
  Result<std::vector<int>> again = open_listeners(same, 2, 16);
  ASSERT_TRUE(again.ok());
  for (const int fd : *again) ::close(fd);
}

}  // namespace
}  // namespace hark::server
