#include "hark/server/cluster/replicas.h"

#include <algorithm>
#include <tuple>

namespace hark::server::cluster {
namespace {

bool contains(const std::vector<uint32_t>& nodes, uint32_t id) {
  return std::find(nodes.begin(), nodes.end(), id) != nodes.end();
}

// Rule 2 of decide_replicas: who should lead among the live ISR members (in replica order).
uint32_t preferred_leader(const std::vector<uint32_t>& live_isr, const ReplicaFacts& facts) {
  for (const uint32_t id : live_isr) {
    if (!facts.draining.contains(id)) return id;
  }
  return live_isr.front();
}

// Rule 4 of decide_replicas, on `next` (whose leader and ISR rules 2 and 3 settled).
void repair_replicas(Assignment& next, const ReplicaFacts& facts, Loads& loads) {
  const auto leaving = [&](uint32_t id) {
    return facts.draining.contains(id) || facts.gone_past_grace.contains(id);
  };
  std::vector<uint32_t> staying;
  for (const uint32_t id : next.replicas) {
    if (!leaving(id) || id == next.node) staying.push_back(id);
  }
  while (staying.size() < facts.factor) {
    const uint32_t added = least_loaded(loads, next.replicas);
    if (added == 0) break;
    next.replicas.push_back(added);
    staying.push_back(added);
    loads[added].replicas++;
  }
  if (staying.size() < facts.factor) return;  // Nobody to replace them with: they stay.
  const bool settled =
      std::all_of(staying.begin(), staying.end(), [&](uint32_t id) { return next.in_sync(id); });
  std::erase_if(next.replicas, [&](uint32_t id) {
    return id != next.node && leaving(id) && (!next.in_sync(id) || settled);
  });
  std::erase_if(next.isr, [&](uint32_t id) { return !next.has_replica(id); });
}

}  // namespace

Loads loads_of(const ClusterView& view) {
  Loads loads;
  for (const NodeInfo& node : view.nodes) {
    if (!view.is_draining(node.id)) loads[node.id] = {};
  }
  for (const auto& [key, assignment] : view.assignments) {
    for (const uint32_t id : assignment.replicas) {
      const auto found = loads.find(id);
      if (found != loads.end()) found->second.replicas++;
    }
    const auto leader = loads.find(assignment.node);
    if (leader != loads.end()) leader->second.leaders++;
  }
  return loads;
}

uint32_t least_loaded(const Loads& loads, const std::vector<uint32_t>& taken) {
  uint32_t best = 0;
  std::tuple<uint32_t, uint32_t> best_load{};
  for (const auto& [id, load] : loads) {
    if (contains(taken, id)) continue;
    const std::tuple<uint32_t, uint32_t> mine{load.replicas, load.leaders};
    if (best == 0 || mine < best_load) {
      best = id;
      best_load = mine;
    }
  }
  return best;
}

std::optional<Assignment> place_replicas(uint32_t factor, Loads& loads, uint32_t by) {
  std::vector<uint32_t> chosen;
  while (chosen.size() < std::max<uint32_t>(factor, 1)) {
    const uint32_t next = least_loaded(loads, chosen);
    if (next == 0) break;
    chosen.push_back(next);
  }
  if (chosen.empty()) return std::nullopt;
  const auto leader = std::min_element(chosen.begin(), chosen.end(), [&](uint32_t a, uint32_t b) {
    return std::tuple(loads[a].leaders, loads[a].replicas, a) <
           std::tuple(loads[b].leaders, loads[b].replicas, b);
  });
  std::rotate(chosen.begin(), leader, leader + 1);
  for (const uint32_t id : chosen) loads[id].replicas++;
  loads[chosen.front()].leaders++;
  return Assignment{
      .node = chosen.front(), .epoch = 1, .by = by, .replicas = chosen, .isr = {chosen.front()}};
}

std::optional<Assignment> decide_replicas(const Assignment& current, const ReplicaFacts& facts,
                                          Loads& loads) {
  std::vector<uint32_t> live_isr;
  for (const uint32_t id : current.replicas) {
    if (current.in_sync(id) && facts.live.contains(id)) live_isr.push_back(id);
  }
  if (live_isr.empty()) return std::nullopt;  // Rule 1: unavailable.
  Assignment next = current;
  const uint32_t preferred = preferred_leader(live_isr, facts);
  const bool leader_dead = !facts.live.contains(current.node);
  if (leader_dead ||
      (facts.draining.contains(current.node) && !facts.draining.contains(preferred))) {
    next.node = preferred;
    next.epoch = current.epoch + 1;
  }
  next.isr = live_isr;
  if (facts.factor > 1) repair_replicas(next, facts, loads);
  if (next == current) return std::nullopt;
  return next;
}

}  // namespace hark::server::cluster
