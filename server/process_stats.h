#pragma once

#include <cstdint>
#include <string>

#include "hark/core/base/units.h"
#include "hark/core/broker/stats.h"
#include "hark/protocol/system_responses.h"

namespace hark::server {

// What get_stats needs besides the broker's figures.
struct StatsContext {
  UnixMicros started_at = 0;  // When harkd started, µs since the epoch.
  UnixMicros now = 0;
  uint32_t clients_count = 0;
  uint32_t threads_count = 0;  // Shards.
  std::string data_directory;  // For free and total disk space.
};

// Iggy's get_stats response from the broker's counters and what the process can learn
// cheaply: its RSS (/proc/self/statm), CPU time (getrusage; cpu_usage is the average percent
// of one CPU since start), the machine's memory (sysinfo), the data directory's disk
// (statvfs), uname and the host name. Left 0: total_cpu_usage, read_bytes, written_bytes, no
// cache metrics (docs/operations.md). Control plane: a few syscalls, a small file read.
protocol::StatsResponse stats_response(const core::BrokerStats& stats, const StatsContext& context);

// The process's resident set size (/proc/self/statm) and CPU time, user + system (getrusage).
uint64_t resident_bytes();
uint64_t cpu_micros();

// harkd's own version string, in get_stats.
inline constexpr const char* server_version = "hark 0.1.0 (iggy 0.8.0 protocol)";

}  // namespace hark::server
