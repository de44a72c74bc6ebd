#pragma once

#include <sched.h>

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <sys/types.h>

#include "hark/bench/suite/options.h"
#include "hark/bench/suite/report.h"

namespace hark::bench {

class HarkServer;
class PeerProcess;

// The processes mode of `wake` and `peers` (--clients processes): the wake as an SDK-shaped
// client sees it. Per measured block, hark-bench starts two children of its own
// (`hark-bench client-role`, client_role.h): a producer and a consumer, one blocking socket
// each, the same shape for every system. docs/bench.md says how it differs from the threads
// mode.

// A server measured this way.
struct ProcessTarget {
  std::string system;   // hark, redis or nats: the role's --system and the row's system.
  std::string variant;  // What sets this server apart ("durability always", "AOF ..."); the
                        // row's name and, with the system, its label in ratios.
  std::string address;
  pid_t pid = -1;  // -1: an external server, neither pinned nor measured.
  // A fresh stream, topic or key for one block: the role's arguments for it (nullopt: failed).
  std::function<std::optional<std::vector<std::string>>()> fresh;
  // Also a row of the producer's acknowledgements ("acknowledgement PLACEMENT, VARIANT"): the
  // commit as the producer sees it.
  bool acknowledgement_row = false;
  std::string label() const { return variant.empty() ? system : system + " " + variant; }
};
ProcessTarget hark_process_target(const HarkServer& server, std::string variant);
ProcessTarget redis_process_target(const PeerProcess& server, std::string variant);
ProcessTarget nats_process_target(const PeerProcess& server, std::string variant);

// Two targets (by label) whose ratio the report notes for each placement.
struct TargetRatio {
  std::string of;
  std::string to;
};

// For each block, each placement of options.placements (unpinned: as the scheduler likes;
// one-cpu: servers and clients on the first CPU; split: servers on the second, clients on the
// first) and each target in turn, so drift weighs on all alike: one producer and one consumer
// process, `gap` before each message. One row per target and placement: latency percentiles,
// server CPU per wake (/proc/PID/task/*/schedstat over the block ÷ wakes) and, in its notes,
// context switches per wake of the server and of the two clients. `before_placement`, if
// given, runs before the targets of each placement of each block, with the placement's name
// and the CPUs its servers are pinned to (a measurement that should alternate with the wakes,
// placed as the servers are; false fails the run). False if a block failed.
//
// The notes also name the file system the servers keep their data on (server_data_parent()):
// under `write` it decides whether harkd's segment write needs a kernel worker
// (docs/operations.md §Data directory).
using PlacementHook = std::function<bool(const std::string& placement, const cpu_set_t& servers)>;
bool measure_process_wakes(const Options& options, std::span<const ProcessTarget> targets,
                           std::span<const TargetRatio> ratios, Report& report,
                           const PlacementHook& before_placement = {});

// Where spawned servers keep their data: $TMPDIR, or /tmp, the rule HarkdProcess and
// PeerProcess make their directories by.
std::string server_data_parent();

}  // namespace hark::bench
