#include "hark/bench/suite/net.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace hark::bench {

int connect_tcp(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  sockaddr_in address{};
  address.sin_family = AF_INET;
  const std::string host = colon == std::string::npos ? "" : host_port.substr(0, colon);
  const int port = colon == std::string::npos ? 0 : std::atoi(host_port.c_str() + colon + 1);
  if (port <= 0 || port > 65535 || ::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    std::fprintf(stderr, "bad address '%s' (want IPV4:PORT)\n", host_port.c_str());
    return -1;
  }
  address.sin_port = htons(static_cast<uint16_t>(port));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    std::fprintf(stderr, "socket: %s\n", std::strerror(errno));
    return -1;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::fprintf(stderr, "connect %s: %s\n", host_port.c_str(), std::strerror(errno));
    ::close(fd);
    return -1;
  }
  set_nodelay(fd);
  return fd;
}

uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

bool write_all(int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    bytes = bytes.subspan(static_cast<size_t>(sent));
  }
  return true;
}

bool read_all(int fd, std::span<std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t got = ::recv(fd, bytes.data(), bytes.size(), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    bytes = bytes.subspan(static_cast<size_t>(got));
  }
  return true;
}

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void write_stamp(std::span<std::byte> to, SteadyClock::time_point at) {
  const int64_t nanos = at.time_since_epoch().count();
  if (to.size() >= sizeof nanos) std::memcpy(to.data(), &nanos, sizeof nanos);
}

SteadyClock::time_point read_stamp(std::span<const std::byte> from) {
  int64_t nanos = 0;
  if (from.size() >= sizeof nanos) std::memcpy(&nanos, from.data(), sizeof nanos);
  return SteadyClock::time_point(SteadyClock::duration(nanos));
}

size_t line_end(std::span<const std::byte> bytes, std::string_view& line) {
  const auto* begin = reinterpret_cast<const char*>(bytes.data());
  for (size_t i = 0; i + 1 < bytes.size(); i++) {
    if (begin[i] == '\r' && begin[i + 1] == '\n') {
      line = std::string_view(begin, i);
      return i + 2;
    }
  }
  return 0;
}

}  // namespace hark::bench
