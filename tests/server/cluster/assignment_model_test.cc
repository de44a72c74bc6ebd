// The controller and assignment state machine as a rapidcheck property: up to four NodeAgents
// over one FakeEtcd on a ManualClock, driven by random joins, pauses (as SIGSTOP: the agent is
// not stepped while time passes), resumptions, crashes with restart, partition creations,
// moves requested of whichever agent believes it leads (deposed ones included), compactions
// and time passing. After every action the whole write history (FakeEtcd::audit, never
// compacted) must show: at most one owner per (partition, epoch); a partition's epochs only
// grow; no assignment written naming a node that was not live at that revision, nor by a node
// that did not hold the controller key then; at most one controller key. At the end, with every
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
  void act(uint32_t action, uint32_t a, uint32_t b) {
    Slot& slot = slots[a % nodes_max];
    switch (action % 8) {
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
        break;
      case 6:
        if (slot.agent && slot.agent->is_controller() && partitions > 0) {
          (void)slot.agent->move_partition({.stream = StreamId(1),
                                            .topic = TopicId(1),
                                            .partition = PartitionId(1 + b % partitions)},
                                           1 + b % nodes_max);
        }
        break;
      case 7: etcd.compact(etcd.revision() - b % 3); break;
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
      epochs[key] = assignment->epoch;
      const auto [it, fresh] = owners.try_emplace({key, assignment->epoch}, assignment->node);
      RC_ASSERT(fresh || it->second == assignment->node);
    }
  }
}

RC_GTEST_PROP(AssignmentModel, InvariantsHoldUnderRandomFailures, ()) {
  Model model;
  model.start(0);
  const auto actions = *rc::gen::container<std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>>(
      rc::gen::tuple(rc::gen::inRange<uint32_t>(0, 8), rc::gen::inRange<uint32_t>(0, 16),
                     rc::gen::inRange<uint32_t>(0, 16)));
  for (const auto& [action, a, b] : actions) {
    model.act(action, a, b);
    check_history(model.etcd);
  }
  // Everyone runs again; once the leases settle every partition has a live owner.
  for (Slot& slot : model.slots) {
    if (slot.agent) slot.running = true;
  }
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
