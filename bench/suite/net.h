#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace hark::bench {

using SteadyClock = std::chrono::steady_clock;

inline double micros_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

// Blocking loopback helpers shared by every scenario and peer client. Sockets are TCP with
// TCP_NODELAY and SO_CLOEXEC; failures print what failed on stderr and return -1 / false.

// Connects to "127.0.0.1:PORT" (any "HOST:PORT" with a numeric IPv4 host): a blocking socket.
int connect_tcp(const std::string& host_port);
// Binds 127.0.0.1:0 and returns the port the kernel chose, closing the socket again: a free
// port for a peer server to listen on (a race with other processes is possible; the peer's
// start retries).
uint16_t free_loopback_port();
bool write_all(int fd, std::span<const std::byte> bytes);
bool read_all(int fd, std::span<std::byte> bytes);
void set_nodelay(int fd);
void set_nonblocking(int fd);
// The text protocols' (RESP, NATS) line at the front of `bytes`, without its \r\n, and the
// size with it; 0 if the line is not complete yet.
size_t line_end(std::span<const std::byte> bytes, std::string_view& line);

// The steady-clock time as 8 payload bytes, and back: how a producer tells a consumer when it
// sent (producer and consumer share this process, so the clock is the same).
void write_stamp(std::span<std::byte> to, SteadyClock::time_point at);
SteadyClock::time_point read_stamp(std::span<const std::byte> from);

}  // namespace hark::bench
