// The controller and assignment state machine as a rapidcheck property: up to four NodeAgents
// over one FakeEtcd on a ManualClock, driven by random joins, pauses (as SIGSTOP: the agent is
// not stepped while time passes), resumptions, crashes with restart, partition creations,
// moves requested of whichever agent believes it leads (deposed ones included), drains, targets
// reporting their moves ready, compactions and time passing. After every action the whole
// write history (FakeEtcd::audit, never compacted) must show: at most one owner per
// (partition, epoch); a partition's epochs only grow; no assignment written naming a node that
// was not live at that revision, nor by a node that did not hold the controller key then; an
// owner changes only by committing a ready move planned from that owner at that epoch, to
// epoch + 1 (a move that is not committed leaves the old owner intact); at most one controller
// key. At the end, with every
// node running again, every partition is assigned. RC_PARAMS="max_success=<n>" runs it longer.
#include <rapidcheck.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hark/core/base/clock.h"
#include "hark/server/cluster/fake_etcd.h"
#include "hark/server/cluster/node_agent.h"

namespace hark::server::cluster {
namespace {

constexpr uint32_t nodes_max = 4;
const Keys keys("model");

struct Slot {
  std::unique_ptr<Coordinator> client;
  std::unique_ptr<NodeAgent> agent;
  bool running = false;
};

struct Model {
  ManualClock clock;
  FakeEtcd etcd{clock};
  Slot slots[nodes_max];
  uint32_t partitions = 0;

  void start(uint32_t index) {
    Slot& slot = slots[index];
    slot.client = etcd.client();
    const uint32_t id = index + 1;
    slot.agent = std::make_unique<NodeAgent>(
        *slot.client, clock,
        AgentOptions{.cluster = "model",
                     .self = {.id = id, .client_address = "c", .link_address = "l", .shards = 1},
                     .lease_ttl_seconds = 3});
    slot.running = true;
  }
  void step_running() {
    for (Slot& slot : slots) {
      if (slot.running) (void)slot.agent->step(Duration(0));
    }
  }
  // Actions 10-12 repeat the steps a move needs (plan, step, ready) so that runs commit moves
  // often, not once in a hundred.
  void act(uint32_t action, uint32_t a, uint32_t b) {
    Slot& slot = slots[a % nodes_max];
    static constexpr uint32_t repeated[] = {6, 0, 9};
    if (action >= 10) action = repeated[(action - 10) % 3];
    switch (action) {
      case 0: step_running(); break;
      case 1:
        clock.advance(std::chrono::seconds(1 + b % 2));
        step_running();
        break;
      case 2:
        if (!slot.agent) start(a % nodes_max);
        break;
      case 3:
        if (slot.agent) slot.running = !slot.running;
        break;  // Pause or resume.
      case 4:
        if (slot.agent) start(a % nodes_max);
        break;  // Crash and restart.
      case 5:
        if (slot.running)
          (void)slot.agent->request_partition(
              {.stream = StreamId(1), .topic = TopicId(1), .partition = PartitionId(++partitions)});
        step_running();  // Requests are followed by steps, so that moves get far enough.
        break;
      case 6:
        // Whichever agent believes it leads (a deposed one too) plans a move.
        for (Slot& leader : slots) {
          if (!leader.agent || !leader.agent->is_controller() || partitions == 0) continue;
          (void)leader.agent->move_partition({.stream = StreamId(1),
                                              .topic = TopicId(1),
                                              .partition = PartitionId(1 + b % partitions)},
                                             1 + a % nodes_max);
          break;
        }
        step_running();
        break;
      case 7: etcd.compact(etcd.revision() - b % 3); break;
      case 8:
        if (slot.running) (void)slot.agent->request_drain(1 + b % nodes_max);
        step_running();
        break;
      case 9:
        // Targets hold their moving partitions durably now (after their copy) and say so.
        for (Slot& target : slots) {
          if (!target.running || !target.agent->view()) continue;
          const Ref<const ClusterView> view = target.agent->view();
          for (const auto& [key, move] : view->moves) (void)target.agent->report_move_ready(key);
        }
        step_running();
        break;
    }
  }
};

// Replays every change ever made and checks the invariants at each assignment write.
void check_history(const FakeEtcd& etcd) {
  std::set<std::string> live;
  bool controller = false;
  std::string holder;  // The controller key's value.
  std::map<std::string, uint64_t> epochs;
  std::map<std::pair<std::string, uint64_t>, uint32_t> owners;
  std::map<std::string, uint32_t> owner_now;  // Assignment key -> its node.
  std::map<std::string, Move> moves;          // By assignment key.
  for (const FakeEtcd::Change& change : etcd.audit()) {
    const std::string& key = change.event.kv.key;
    const bool put = change.event.type == WatchEvent::Type::put;
    if (key.starts_with(keys.nodes)) {
      if (put)
        live.insert(key);
      else
        live.erase(key);
    } else if (key == keys.controller) {
      RC_ASSERT(!(put && controller && change.event.kv.version == 1));
      controller = put;
      holder = put ? change.event.kv.value : "";
    } else if (key.starts_with(keys.assignments)) {
      RC_ASSERT(put);  // Assignments are never deleted.
      const std::optional<Assignment> assignment = decode_assignment(change.event.kv.value);
      RC_ASSERT(assignment.has_value());
      RC_ASSERT(live.contains(keys.node(assignment->node)));
      RC_ASSERT(holder == std::to_string(assignment->by));  // Written by the controller.
      RC_ASSERT(assignment->epoch > epochs[key]);
      if (epochs[key] != 0) {
        // A switch: only the commit of a ready move from the owner at that epoch, one up.
        const auto move = moves.find(key);
        RC_ASSERT(move != moves.end());
        RC_ASSERT(move->second.ready);
        RC_ASSERT(move->second.from == owner_now[key] && move->second.to == assignment->node);
        RC_ASSERT(move->second.epoch == epochs[key] && assignment->epoch == epochs[key] + 1);
      }
      owner_now[key] = assignment->node;
      epochs[key] = assignment->epoch;
      const auto [it, fresh] = owners.try_emplace({key, assignment->epoch}, assignment->node);
      RC_ASSERT(fresh || it->second == assignment->node);
    } else if (key.starts_with(keys.moves)) {
      const std::string assignment = keys.assignments + key.substr(keys.moves.size());
      if (!put) {
        moves.erase(assignment);
        continue;
      }
      const std::optional<Move> move = decode_move(change.event.kv.value);
      RC_ASSERT(move.has_value());
      // Planned by the controller from the owner at its epoch; then only marked ready.
      RC_ASSERT(move->from == owner_now[assignment] && move->epoch == epochs[assignment]);
      if (move->ready) {
        RC_ASSERT(moves.contains(assignment));
        RC_ASSERT(moves[assignment].to == move->to);
      } else {
        RC_ASSERT(holder == std::to_string(move->by));
      }
      moves[assignment] = *move;
    }
  }
}

RC_GTEST_PROP(AssignmentModel, InvariantsHoldUnderRandomFailures, ()) {
  Model model;
  model.start(0);
  const auto actions = *rc::gen::container<std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>>(
      rc::gen::tuple(rc::gen::inRange<uint32_t>(0, 13), rc::gen::inRange<uint32_t>(0, 16),
                     rc::gen::inRange<uint32_t>(0, 16)));
  for (const auto& [action, a, b] : actions) {
    model.act(action, a, b);
    check_history(model.etcd);
  }
  // Everyone runs again and the drains end (an operator deletes drain/<id>); once the leases
  // settle every partition has a live owner.
  for (Slot& slot : model.slots) {
    if (slot.agent) slot.running = true;
  }
  RC_ASSERT(model.etcd.client()->erase(keys.drains, true).ok());
  for (int i = 0; i < 8; i++) {
    model.clock.advance(std::chrono::seconds(1));
    model.step_running();
    model.step_running();
  }
  check_history(model.etcd);
  const Ref<const ClusterView> view = model.slots[0].agent->view();
  RC_ASSERT(view);
  RC_ASSERT(view->assignments.size() == model.partitions);
  for (const auto& [key, assignment] : view->assignments) {
    RC_ASSERT(view->owner(key).kind == PartitionOwner::Kind::node);
  }
}

}  // namespace
}  // namespace hark::server::cluster
