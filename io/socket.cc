#include "hark/io/socket.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <charconv>

#include <arpa/inet.h>
#include <netinet/tcp.h>

#include "hark/core/base/log.h"

namespace hark::io {

uint16_t SocketAddress::port() const {
  if (storage.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
}

std::string SocketAddress::to_string() const {
  char host[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host,
                sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(port());
  }
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host,
              sizeof host);
  return std::string(host) + ":" + std::to_string(port());
}

Result<SocketAddress> parse_address(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= text.size()) {
    return Error::invalid_configuration;
  }
  std::string host(text.substr(0, colon));
  const std::string_view port_text = text.substr(colon + 1);
  uint16_t port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size()) {
    return Error::invalid_configuration;
  }
  if (host == "localhost") host = "127.0.0.1";
  SocketAddress address;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    auto* ipv6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
    ipv6->sin6_family = AF_INET6;
    ipv6->sin6_port = htons(port);
    if (::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &ipv6->sin6_addr) != 1) {
      return Error::invalid_configuration;
    }
    address.length = sizeof(sockaddr_in6);
    return address;
  }
  auto* ipv4 = reinterpret_cast<sockaddr_in*>(&address.storage);
  ipv4->sin_family = AF_INET;
  ipv4->sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &ipv4->sin_addr) != 1) return Error::invalid_configuration;
  address.length = sizeof(sockaddr_in);
  return address;
}

Result<int> listen_tcp(const SocketAddress& address, bool reuse_port, int backlog) {
  const int fd = ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    HARK_LOG_ERROR("socket() for %s failed: %s", address.to_string(), strerror(errno));
    return Error::cannot_bind_to_socket;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0 ||
      ::listen(fd, backlog) != 0) {
    HARK_LOG_ERROR("cannot listen on %s: %s", address.to_string(), strerror(errno));
    ::close(fd);
    return Error::cannot_bind_to_socket;
  }
  return fd;
}

Result<SocketAddress> local_address(int fd) {
  SocketAddress address;
  address.length = sizeof address.storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return Error::io_error;
  }
  return address;
}

void set_no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace hark::io
