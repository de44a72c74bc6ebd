// Covers the socket operations against real loopback sockets: multishot accept, multishot
// recv into a provided buffer ring (including -ENOBUFS backpressure and re-arming), send and
// sendmsg, and the address helpers.
#include <unistd.h>

#include <string>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include "hark/io/buffer_ring.h"
#include "hark/io/ring.h"
#include "hark/io/socket.h"
#include "hark/tests/io/recorder.h"

namespace hark::io {
namespace {

using namespace std::chrono_literals;
using test::Recorder;
using test::run_until;

int connect_blocking(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

struct Loopback {
  std::unique_ptr<Ring> ring = std::move(Ring::create(RingOptions{})).value();
  int listener = -1;
  uint16_t port = 0;

  Loopback() {
    Result<SocketAddress> address = parse_address("127.0.0.1:0");
    EXPECT_TRUE(address.ok());
    listener = *listen_tcp(*address, /*reuse_port=*/true, 64);
    port = local_address(listener)->port();
  }
  ~Loopback() { ::close(listener); }
};

TEST(Socket, ParsesAddresses) {
  EXPECT_EQ(parse_address("127.0.0.1:8090")->to_string(), "127.0.0.1:8090");
  EXPECT_EQ(parse_address("localhost:1")->to_string(), "127.0.0.1:1");
  EXPECT_EQ(parse_address("[::1]:9")->to_string(), "[::1]:9");
  EXPECT_EQ(parse_address("127.0.0.1").error(), Error::invalid_configuration);
  EXPECT_EQ(parse_address("127.0.0.1:99999").error(), Error::invalid_configuration);
  EXPECT_EQ(parse_address("example.com:80").error(), Error::invalid_configuration);
}

TEST(Socket, TwoListenersShareAPortWithReusePort) {
  Loopback first;
  SocketAddress same = *parse_address("127.0.0.1:" + std::to_string(first.port));
  Result<int> second = listen_tcp(same, /*reuse_port=*/true, 16);
  ASSERT_TRUE(second.ok());
  ::close(*second);
  Result<int> without = listen_tcp(same, /*reuse_port=*/false, 16);
  EXPECT_EQ(without.error(), Error::cannot_bind_to_socket);
}

TEST(Network, MultishotAcceptStaysArmedAcrossConnections) {
  Loopback loop;
  Recorder accepted;
  loop.ring->accept_multishot(loop.listener, accepted);
  const int a = connect_blocking(loop.port);
  const int b = connect_blocking(loop.port);
  run_until(*loop.ring, accepted, 2);
  EXPECT_GE(accepted.results[0], 0);
  EXPECT_GE(accepted.results[1], 0);
  EXPECT_NE(accepted.flag_list[1] & IORING_CQE_F_MORE, 0u);
  for (int32_t fd : accepted.results) ::close(fd);
  ::close(a);
  ::close(b);
  loop.ring->cancel(accepted);
  run_until(*loop.ring, accepted, 3);
  EXPECT_EQ(accepted.results.back(), -ECANCELED);
}

TEST(Network, MultishotRecvFillsProvidedBuffersAndSeesClose) {
  Loopback loop;
  auto buffers = std::move(BufferRing::create(*loop.ring, 1, 8, 4096)).value();
  const int client = connect_blocking(loop.port);
  const int server = ::accept4(loop.listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(server, 0);

  Recorder received;
  loop.ring->recv_multishot(server, buffers->group(), received);
  ASSERT_EQ(::send(client, "ping", 4, 0), 4);
  run_until(*loop.ring, received, 1);
  ASSERT_EQ(received.results[0], 4);
  std::span<const std::byte> bytes = buffers->take(received.flag_list[0], 4);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), 4), "ping");
  EXPECT_EQ(buffers->held(), 1u);
  buffers->recycle(BufferRing::buffer_id(received.flag_list[0]));
  EXPECT_EQ(buffers->held(), 0u);

  ::close(client);
  run_until(*loop.ring, received, 2);
  EXPECT_EQ(received.results[1], 0);  // Orderly close ends the multishot.
  EXPECT_EQ(received.flag_list[1] & IORING_CQE_F_MORE, 0u);
  ::close(server);
}

TEST(Network, RecvWithoutBuffersEndsWithEnobufsAndResumesAfterRecycle) {
  Loopback loop;
  auto buffers = std::move(BufferRing::create(*loop.ring, 2, 2, 4096)).value();
  const int client = connect_blocking(loop.port);
  const int server = ::accept4(loop.listener, nullptr, nullptr, SOCK_CLOEXEC);
  Recorder received;
  loop.ring->recv_multishot(server, buffers->group(), received);

  // Three separate sends; only two buffers exist and nobody recycles them.
  std::string all;
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(::send(client, "x", 1, 0), 1);
    loop.ring->run(5ms);
  }
  run_until(*loop.ring, received, 3);
  ASSERT_EQ(received.results[2], -ENOBUFS);
  EXPECT_EQ(received.flag_list[2] & IORING_CQE_F_MORE, 0u);
  for (size_t i = 0; i < 2; i++) {
    ASSERT_GT(received.results[i], 0);
    std::span<const std::byte> bytes =
        buffers->take(received.flag_list[i], static_cast<uint32_t>(received.results[i]));
    all.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    buffers->recycle(BufferRing::buffer_id(received.flag_list[i]));
  }
  loop.ring->recv_multishot(server, buffers->group(), received);  // Re-arm: nothing is lost.
  run_until(*loop.ring, received, 4);
  ASSERT_GT(received.results[3], 0);
  std::span<const std::byte> bytes =
      buffers->take(received.flag_list[3], static_cast<uint32_t>(received.results[3]));
  all.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  buffers->recycle(BufferRing::buffer_id(received.flag_list[3]));
  EXPECT_EQ(all, "xxx");
  loop.ring->cancel(received);
  run_until(*loop.ring, received, 5);
  ::close(client);
  ::close(server);
}

TEST(Network, SendAndSendmsgDeliverEveryByte) {
  Loopback loop;
  const int client = connect_blocking(loop.port);
  const int server = ::accept4(loop.listener, nullptr, nullptr, SOCK_CLOEXEC);
  const std::string head = "header:";
  const std::string body = "body";
  Recorder sent, sent_message;
  loop.ring->send(server, std::as_bytes(std::span(head.data(), head.size())), sent);
  iovec vectors[2] = {{const_cast<char*>(head.data()), head.size()},
                      {const_cast<char*>(body.data()), body.size()}};
  msghdr message{};
  message.msg_iov = vectors;
  message.msg_iovlen = 2;
  loop.ring->sendmsg(server, &message, sent_message);
  run_until(*loop.ring, sent, 1);
  run_until(*loop.ring, sent_message, 1);
  EXPECT_EQ(sent.results[0], static_cast<int32_t>(head.size()));
  EXPECT_EQ(sent_message.results[0], static_cast<int32_t>(head.size() + body.size()));
  char buffer[64] = {};
  size_t got = 0;
  while (got < 18) {
    const ssize_t n = ::recv(client, buffer + got, sizeof buffer - got, 0);
    ASSERT_GT(n, 0);
    got += static_cast<size_t>(n);
  }
  EXPECT_EQ(std::string(buffer, got), "header:header:body");
  ::close(client);
  ::close(server);
}

TEST(Network, SendToAClosedPeerFailsWithoutSigpipe) {
  Loopback loop;
  const int client = connect_blocking(loop.port);
  const int server = ::accept4(loop.listener, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(client);
  const std::string data(1 << 16, 'z');
  Recorder sent;
  int32_t last = 0;
  for (int i = 0; i < 50 && last >= 0; i++) {
    loop.ring->send(server, std::as_bytes(std::span(data.data(), data.size())), sent);
    run_until(*loop.ring, sent, static_cast<size_t>(i + 1));
    last = sent.results.back();
  }
  EXPECT_TRUE(last == -EPIPE || last == -ECONNRESET) << last;
  ::close(server);
}

}  // namespace
}  // namespace hark::io
