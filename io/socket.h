#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <netinet/in.h>
#include <sys/socket.h>

#include "hark/core/base/result.h"

namespace hark::io {

// An IPv4 or IPv6 TCP endpoint.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  uint16_t port() const;
  std::string to_string() const;  // "127.0.0.1:8090", "[::1]:8090"
};

// Parses "HOST:PORT" where HOST is a numeric IPv4 address, "[IPv6]", or "localhost".
// Error::invalid_configuration for anything else.
Result<SocketAddress> parse_address(std::string_view text);

// A non-blocking listening socket. `reuse_port` lets every shard bind the same address so
// the kernel spreads connections (SO_REUSEPORT). Port 0 binds an ephemeral port: read it back
// with local_address(). Error::cannot_bind_to_socket (logged with the errno) on failure.
Result<int> listen_tcp(const SocketAddress& address, bool reuse_port, int backlog);

// The address a socket is bound to.
Result<SocketAddress> local_address(int fd);

// Sets TCP_NODELAY: responses are written whole, and Nagle would hold the last segment.
void set_no_delay(int fd);

}  // namespace hark::io
