#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hark::bench {

// What every scenario gets from the command line.
struct Options {
  bool smoke = false;      // Tiny counts: seconds per scenario, for the bench-smoke label.
  std::string harkd_path;  // The harkd to spawn (default: next to hark-bench).
  std::string address;     // An external harkd instead ("127.0.0.1:8090"); no CPU figures.
  uint32_t shards = 2;     // The spawned harkd's --shards.
  std::string json_dir;    // Where SCENARIO.json goes; empty: no JSON.
  // The producer's idle time before each message in `wake` and `peers` (0: back to back, which
  // measures less than a park: the consumer may not have parked again yet).
  std::chrono::microseconds gap{1000};
  std::string durability = "write";  // The spawned harkd's --durability.
  // `wake` and `peers`: producer and consumer as threads of hark-bench (false, the default) or
  // as two child processes with one blocking socket each (--clients processes).
  bool client_processes = false;
  // Where servers and client processes run in the processes mode (--placements): any of
  // unpinned, one-cpu, split.
  std::vector<std::string> placements = {"unpinned", "one-cpu", "split"};
  // `fanout` and `peers`: the K values (--consumers); empty: the scenario's own list.
  std::vector<size_t> consumers;
  // `fanout` and `peers`: threads reading the consumers' replies (--client-threads); 0: by K.
  size_t client_threads = 0;
  // `peers`: which parts run (--parts): any of wake, fanout, throughput.
  std::vector<std::string> parts = {"wake", "fanout", "throughput"};
  // `peers`: which peers run next to hark (--peer-systems): any of redis, nats.
  std::vector<std::string> peer_systems = {"redis", "nats"};
  // `wake` (threads) and `throughput`: the spawned harkd serves TLS with a certificate made
  // for the run, and the clients connect with TLS (docs/operations.md §TLS).
  bool tls = false;
  // `cluster`: a second pair of nodes whose links run mutual TLS (cluster.tls_*), measured in
  // the same run, its blocks alternating with the plain pair's (--link-tls).
  bool link_tls = false;
  // With link_tls: the second pair's links stay plain (--link-tls-control), to measure what
  // being the second pair costs by itself.
  bool link_tls_control = false;
};

}  // namespace hark::bench
