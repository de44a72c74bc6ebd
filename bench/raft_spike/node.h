// One raft spike node: a process with one libuv loop running `groups` canonical/raft instances
// (libraft 0.15 from Debian), each with raft_uv's disk log and TCP transport. Node n's group g
// listens on 127.0.0.1n:(base_port + g). What each role measures: docs/cluster.md
// §Replication: the engine spike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace spike {

enum class Role {
  follower,         // serves its groups until SIGUSR1, then reports its memory
  measure_commits,  // leader of group 0: closed-loop raft_apply, one entry in flight
  grow,             // leader of group 0: grows the log to grow_bytes, `in_flight` entries at once
  idle,             // starts every group, waits for leaders, measures its CPU over a window
  load,             // restarts group 0 from its directory: how long `load` takes, what it holds
};

struct NodeConfig {
  std::string key;  // prefix of every reported figure
  Role role = Role::follower;
  int id = 1;
  int voters = 1;
  int groups = 1;
  std::string dir;  // group g lives in dir/g<g>
  int base_port = 21000;
  unsigned election_ms = 1000;
  unsigned heartbeat_ms = 100;
  unsigned snapshot_threshold = 1024;
  unsigned snapshot_trailing = 2048;
  std::size_t segment_bytes = 8u << 20;
  std::size_t entry_bytes = 1024;
  std::string samples_path;  // measure_commits appends its latencies (u64 ns) to this file
  int samples = 2000;
  int warmup = 200;
  std::uint64_t grow_bytes = 0;
  int in_flight = 32;
  int idle_seconds = 30;
};

std::string address_of(int node, int base_port, int group);

// Runs the node's loop; never returns (the process exits on SIGUSR1 or when its role is done).
[[noreturn]] void run_node(const NodeConfig& config);

}  // namespace spike
