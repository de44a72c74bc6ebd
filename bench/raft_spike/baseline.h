// The two floors a replicated commit is compared with, measured in the same run as the commits:
// a loopback TCP round trip between two processes, and one durable block write the way
// raft_uv writes its open segment (docs/cluster.md §Replication: the engine spike).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "report.h"

namespace spike {

// Both return one latency in ns per sample.
// Round trips of `bytes` each way between this process and a forked echo server, from
// 127.0.0.11 to 127.0.0.12:port, TCP_NODELAY, blocking sockets.
std::vector<std::uint64_t> measure_echo(std::size_t bytes, int port, int count);

// A 4096-byte O_DIRECT|O_DSYNC pwrite per 1 KiB entry at the log's end, as raft_uv writes
// (the last block is written again until full), into a file that is `prewritten` with zeros
// and synced first (hark's `always`), or only fallocated (raft_uv's prepared segments).
std::vector<std::uint64_t> measure_block_sync(const std::string& dir, bool prewritten, int count);

}  // namespace spike
