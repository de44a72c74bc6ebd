#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "hark/server/cluster/cluster_view.h"

namespace hark::server::cluster {

// The controller's replica decisions as pure functions of what it sees (docs/cluster.md
// §Replication): where a new partition's replicas go, and what an assignment becomes when
// nodes die, come back, drain or stay gone. NodeAgent writes what they decide, each change in
// one etcd transaction guarded on its leadership and on the assignment's mod_revision.

// What a live node that takes new replicas (not draining) carries, for placement by load.
struct NodeLoad {
  uint32_t replicas = 0;
  uint32_t leaders = 0;
};
using Loads = std::map<uint32_t, NodeLoad>;

// The live nodes of `view` that do not drain, with the replicas and leaders its assignments give
// them.
Loads loads_of(const ClusterView& view);

// The least loaded node of `loads` not in `taken`: fewest replicas, then fewest leaders, then
// the lowest id. 0 when there is none.
uint32_t least_loaded(const Loads& loads, const std::vector<uint32_t>& taken = {});

// A new partition of `factor` replicas: the `factor` least loaded nodes (fewer if fewer exist),
// led by the one among them with the fewest leaders (ties: the fewest replicas, the lowest id),
// which comes first. Only the leader is in sync: a follower joins the ISR when its leader
// reports it caught up (NodeAgent::change_isr). `loads` takes the new replicas. nullopt when
// `loads` is empty.
std::optional<Assignment> place_replicas(uint32_t factor, Loads& loads, uint32_t by);

// What the controller knows of the nodes, for one decision.
struct ReplicaFacts {
  uint32_t factor = 1;                 // The topic's replication factor.
  std::set<uint32_t> live;             // Nodes whose lease holds their key.
  std::set<uint32_t> draining;         // Nodes asked to give up their replicas.
  std::set<uint32_t> gone_past_grace;  // Not live for longer than the replacement grace.
};

// The assignment `current` should become, or nullopt when it stays as it is. In order:
//  1. no live ISR member: nothing (the partition is unavailable until one returns; no unclean
//     election);
//  2. the leader must be live, and should not drain: if it is dead (or drains and a live ISR
//     member that does not drain exists), the first live ISR member in replica order that does
//     not drain (else the first live one) leads, at epoch + 1;
//  3. dead nodes leave the ISR;
//  4. factor > 1: the replicas that stay (neither draining nor gone past the grace, and the
//     leader) are topped up to `factor` with the least loaded live nodes outside the set (they
//     join outside the ISR; `loads` takes them). Once the staying replicas number `factor`, a
//     leaving replica other than the leader is dropped if it is out of the ISR, or once every
//     staying replica is in sync (its replacement caught up: add first, then remove, as a
//     Kafka reassignment). With nobody to replace it, a leaving replica stays.
std::optional<Assignment> decide_replicas(const Assignment& current, const ReplicaFacts& facts,
                                          Loads& loads);

}  // namespace hark::server::cluster
