// The controller and assignment state machine as a rapidcheck property: up to four NodeAgents
// over one FakeEtcd on a ManualClock, driven by random joins, pauses (as SIGSTOP: the agent is
// not stepped while time passes), resumptions, crashes with restart, partition creations of
// replication factor 1 to 3, moves requested of whichever agent believes it leads (deposed ones
// included), drains, targets reporting their moves ready, leaders (deposed ones included)
// changing their ISR, compactions and time passing (past the replacement grace too). After
// every action the whole write history (FakeEtcd::audit, never compacted) must show: every
// assignment well formed (replicas distinct, leader in isr, isr within replicas); at most one
// leader per (partition, epoch); a partition's epochs only grow, and its leader changes exactly
// when its epoch does; no assignment written naming a leader that was not live at that
// revision; every write but an ISR change by the controller of that revision; a new leader
// either commits a ready move planned from the old one at that epoch (factor 1, to epoch + 1:
// a move that is not committed leaves the old owner intact) or comes from the previous ISR;
// at most one controller key. At the end, with every node running again, every partition has a
// live leader. RC_PARAMS="max_success=<n>" runs it longer.
#include <rapidcheck.h>

#include <algorithm>
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
                     .lease_ttl_seconds = 3,
                     .replica_replace_after = std::chrono::seconds(4)});
    slot.running = true;
  }
  void step_running() {
    for (Slot& slot : slots) {
      if (slot.running) (void)slot.agent->step(Duration(0));
    }
  }
  // Every agent that believes it leads a partition (a deposed one too) sets its ISR to a
  // random subset of its replicas that holds itself (as its followers fall behind or catch up).
  void change_isrs(uint32_t bits) {
    for (Slot& leader : slots) {
      if (!leader.running || !leader.agent->view()) continue;
      const Ref<const ClusterView> view = leader.agent->view();
      for (const auto& [key, assignment] : view->assignments) {
        if (assignment.node != view->self) continue;
        std::vector<uint32_t> isr;
        for (const uint32_t id : assignment.replicas) {
          if (id == view->self || (bits >> (id % 8)) % 2 == 1) isr.push_back(id);
        }
        (void)leader.agent->change_isr(key, assignment.epoch, isr);
      }
    }
    step_running();
  }
  // A running node (the first from `a` on) that leads a partition with another replica in sync
  // stops, and its lease lapses while the others step.
  void pause_a_leader(uint32_t a) {
    for (uint32_t i = 0; i < nodes_max; i++) {
      Slot& slot = slots[(a + i) % nodes_max];
      if (!slot.running || !slot.agent->view()) continue;
      const Ref<const ClusterView> view = slot.agent->view();
      const bool leads =
          std::any_of(view->assignments.begin(), view->assignments.end(), [&](const auto& item) {
            return item.second.node == view->self && item.second.isr.size() > 1;
          });
      if (!leads) continue;
      slot.running = false;
      for (int second = 0; second < 4; second++) act(1, a, 0);
      return;
    }
  }
  // Actions 10-12 repeat the steps a move needs (plan, step, ready) so that runs commit moves
  // often, not once in a hundred; 13-14 change ISRs (all in sync, or some); 15-16 pause a node
  // once its partitions' ISRs changed and let its lease lapse (so leaders fail over often).
  void act(uint32_t action, uint32_t a, uint32_t b) {
    Slot& slot = slots[a % nodes_max];
    static constexpr uint32_t repeated[] = {6, 0, 9};
    if (action >= 13) {
      change_isrs(action % 2 == 1 ? 0xFF : a * 16 + b);
      if (action >= 15) pause_a_leader(a);
      return;
    }
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
        // Any running node asks (the first from `a` on).
        for (uint32_t i = 0; i < nodes_max; i++) {
          Slot& asker = slots[(a + i) % nodes_max];
          if (!asker.running) continue;
          (void)asker.agent->request_partition(
              {.stream = StreamId(1), .topic = TopicId(1), .partition = PartitionId(++partitions)},
              1 + b % 3);
          break;
        }
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

// What the history showed so far, replayed change by change (check_history).
struct History {
  std::set<std::string> live;
  bool controller = false;
  std::string holder;  // The controller key's value.
  std::map<std::pair<std::string, uint64_t>, uint32_t> leaders;
  std::map<std::string, Move> moves;          // By assignment key.
  std::map<std::string, Assignment> current;  // The last value of each assignment key.
  uint32_t failovers = 0;                     // New leaders from the ISR (not by a move).

  void assignment_put(const std::string& key, std::string_view value) {
    // Well formed, or it would not decode: replicas distinct, leader in isr, isr in replicas.
    const std::optional<Assignment> assignment = decode_assignment(value);
    RC_ASSERT(assignment.has_value());
    RC_ASSERT(live.contains(keys.node(assignment->node)));  // A leader is never dead.
    const auto previous = current.find(key);
    for (const uint32_t id : assignment->replicas) {
      const bool added = previous == current.end() || !previous->second.has_replica(id);
      RC_ASSERT(!added || live.contains(keys.node(id)));  // Nothing placed on a dead node.
    }
    if (previous == current.end()) {
      RC_ASSERT(holder == std::to_string(assignment->by));  // Placed by the controller.
    } else {
      changed(key, previous->second, *assignment);
    }
    current[key] = *assignment;
    const auto [it, fresh] = leaders.try_emplace({key, assignment->epoch}, assignment->node);
    RC_ASSERT(fresh || it->second == assignment->node);  // One leader per (partition, epoch).
  }

  void changed(const std::string& key, const Assignment& before, const Assignment& after) {
    Assignment same = after;
    same.isr = before.isr;
    // Written by the controller, but for an ISR change (its leader's, or the controller's).
    RC_ASSERT(same == before || holder == std::to_string(after.by));
    RC_ASSERT(after.epoch >= before.epoch);  // Epochs only grow...
    // ... and the leader changes exactly when the epoch does, by one.
    RC_ASSERT((after.epoch == before.epoch) == (after.node == before.node));
    if (after.epoch == before.epoch) return;
    RC_ASSERT(after.epoch == before.epoch + 1);
    const auto move = moves.find(key);
    const bool committed = move != moves.end() && move->second.ready &&
                           move->second.from == before.node && move->second.to == after.node &&
                           move->second.epoch == before.epoch;
    // A new leader commits a ready move (factor 1) or comes from the previous ISR.
    RC_ASSERT(committed || before.in_sync(after.node));
    failovers += committed ? 0 : 1;
  }

  void move_changed(const std::string& key, bool put, std::string_view value) {
    const std::string assignment = keys.assignments + key.substr(keys.moves.size());
    if (!put) {
      moves.erase(assignment);
      return;
    }
    const std::optional<Move> move = decode_move(value);
    RC_ASSERT(move.has_value());
    // Planned by the controller from the owner at its epoch; then only marked ready.
    const Assignment& owner = current[assignment];
    RC_ASSERT(move->from == owner.node && move->epoch == owner.epoch);
    if (move->ready) {
      RC_ASSERT(moves.contains(assignment));
      RC_ASSERT(moves[assignment].to == move->to);
    } else {
      RC_ASSERT(holder == std::to_string(move->by));
    }
    moves[assignment] = *move;
  }
};

// Replays every change ever made and checks the invariants at each write; the failovers seen.
uint32_t check_history(const FakeEtcd& etcd) {
  History history;
  for (const FakeEtcd::Change& change : etcd.audit()) {
    const std::string& key = change.event.kv.key;
    const bool put = change.event.type == WatchEvent::Type::put;
    if (key.starts_with(keys.nodes)) {
      if (put)
        history.live.insert(key);
      else
        history.live.erase(key);
    } else if (key == keys.controller) {
      RC_ASSERT(!(put && history.controller && change.event.kv.version == 1));
      history.controller = put;
      history.holder = put ? change.event.kv.value : "";
    } else if (key.starts_with(keys.assignments)) {
      RC_ASSERT(put);  // Assignments are never deleted.
      history.assignment_put(key, change.event.kv.value);
    } else if (key.starts_with(keys.moves)) {
      history.move_changed(key, put, change.event.kv.value);
    }
  }
  return history.failovers;
}

RC_GTEST_PROP(AssignmentModel, InvariantsHoldUnderRandomFailures, ()) {
  Model model;
  // Three nodes and four partitions of factors 1 to 3 to start from (the actions add more).
  for (uint32_t i = 0; i + 1 < nodes_max; i++) model.start(i);
  for (const uint32_t b : {0u, 1u, 2u, 2u}) model.act(5, 0, b);
  const auto actions = *rc::gen::container<std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>>(
      rc::gen::tuple(rc::gen::inRange<uint32_t>(0, 17), rc::gen::inRange<uint32_t>(0, 16),
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
  const uint32_t failovers = check_history(model.etcd);
  RC_CLASSIFY(failovers > 0, "a leader failed over");
  const Ref<const ClusterView> view = model.slots[0].agent->view();
  RC_ASSERT(view);
  RC_ASSERT(view->assignments.size() == model.partitions);
  for (const auto& [key, assignment] : view->assignments) {
    RC_ASSERT(view->owner(key).kind == PartitionOwner::Kind::node);
  }
}

}  // namespace
}  // namespace hark::server::cluster
