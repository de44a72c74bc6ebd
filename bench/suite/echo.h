#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace hark::bench {

// The floor under every wake-up: a loopback TCP round trip. A thread echoes `size`-byte
// messages on one connection (blocking sockets, TCP_NODELAY); the caller sends one every
// `gap` and reads it back. Returns `count` round trips in µs (fewer if a socket failed).
std::vector<double> measure_echo(int count, size_t size, std::chrono::microseconds gap);

// Drops the first 5 % of a block's samples (warm-up).
std::vector<double> without_warmup(std::vector<double> samples);

}  // namespace hark::bench
