#include "hark/tests/client/fake_server.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "hark/protocol/framing.h"
#include "hark/protocol/reader.h"

namespace hark::client::test {
namespace {

// Reads exactly `size` bytes; false on EOF or error.
bool read_exact(int fd, std::byte* data, size_t size) {
  while (size > 0) {
    const ssize_t received = ::recv(fd, data, size, 0);
    if (received < 0 && errno == EINTR) continue;
    if (received <= 0) return false;
    data += received;
    size -= static_cast<size_t>(received);
  }
  return true;
}

}  // namespace

FakeConnection::~FakeConnection() { close(); }

std::optional<FakeConnection::Received> FakeConnection::read_request() {
  std::byte header[protocol::request_header_size];
  if (!read_exact(fd_, header, sizeof header)) return std::nullopt;
  const uint32_t length = protocol::load_u32(header, 0);
  Received received;
  received.code = protocol::load_u32(header, 4);
  received.payload.resize(length - 4);
  if (!read_exact(fd_, received.payload.data(), received.payload.size())) return std::nullopt;
  return received;
}

void FakeConnection::send(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return;  // The client went away; the test checks what the client saw.
    bytes = bytes.subspan(static_cast<size_t>(sent));
  }
}

void FakeConnection::send_ok(std::span<const std::byte> payload) {
  send(protocol::ok_response_header(payload.size()));
  send(payload);
}

void FakeConnection::send_error(Error error) { send(protocol::error_response(error)); }

void FakeConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

FakeServer::FakeServer(Script script) : script_(std::move(script)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(listen_fd_, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(::listen(listen_fd_, 8), 0);
  socklen_t length = sizeof address;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { run(); });
}

FakeServer::~FakeServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

std::string FakeServer::address() const { return "127.0.0.1:" + std::to_string(port_); }

void FakeServer::run() {
  while (!stop_) {
    pollfd waiting{.fd = listen_fd_, .events = POLLIN, .revents = 0};
    if (::poll(&waiting, 1, 20) <= 0) continue;  // Re-check stop_ every 20 ms.
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    FakeConnection connection(fd);
    script_(connection);
  }
}

}  // namespace hark::client::test
