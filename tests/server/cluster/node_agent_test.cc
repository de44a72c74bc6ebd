// NodeAgent over FakeEtcd on a ManualClock, step by step: registration and membership views,
// the election (one controller; a paused controller's lease lapses, another wins, and the
// old one's guarded write is rejected), partitions spread by load, a dead node's partitions
// unavailable until it returns, moves (planned, committed at epoch + 1 only once their target
// is ready, abandoned when the target or the owner dies, refused to a deposed controller),
// drains, etcd unreachable, and a node that was away past a compaction converging.
#include "hark/server/cluster/node_agent.h"

#include <chrono>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/clock.h"
#include "hark/server/cluster/fake_etcd.h"

namespace hark::server::cluster {
namespace {

using std::chrono::seconds;

core::PartitionKey partition(uint32_t id) {
  return {.stream = StreamId(1), .topic = TopicId(1), .partition = PartitionId(id)};
}

struct Node {
  std::unique_ptr<Coordinator> client;
  std::unique_ptr<NodeAgent> agent;
};

struct AgentTest : ::testing::Test {
  ManualClock clock;
  FakeEtcd etcd{clock};
  std::vector<Node> nodes;

  NodeAgent& add(uint32_t id) {
    Node node;
    node.client = etcd.client();
    AgentOptions options{.cluster = "test",
                         .self = {.id = id,
                                  .client_address = "127.0.0." + std::to_string(id) + ":8090",
                                  .link_address = "127.0.0." + std::to_string(id) + ":8091",
                                  .shards = 2},
                         .lease_ttl_seconds = 5};
    node.agent = std::make_unique<NodeAgent>(*node.client, clock, options);
    nodes.push_back(std::move(node));
    return *nodes.back().agent;
  }
  NodeAgent& agent(uint32_t id) { return *nodes.at(id - 1).agent; }
  // Steps the given agents twice (the second step sees what the first wrote).
  void step(std::initializer_list<uint32_t> ids) {
    for (int round = 0; round < 2; round++) {
      for (const uint32_t id : ids) ASSERT_TRUE(agent(id).step(Duration(0)).ok());
    }
  }
  // `total` seconds pass one second at a time while the given agents keep stepping.
  void run_for(int total, std::initializer_list<uint32_t> ids) {
    for (int i = 0; i < total; i++) {
      clock.advance(seconds(1));
      step(ids);
    }
  }
  int controllers() {
    int count = 0;
    for (Node& node : nodes) count += node.agent->is_controller() ? 1 : 0;
    return count;
  }
};

TEST_F(AgentTest, NodesRegisterAndOneIsElected) {
  add(1);
  add(2);
  add(3);
  step({1, 2, 3});
  EXPECT_EQ(controllers(), 1);
  EXPECT_TRUE(agent(1).is_controller());  // The first to campaign.
  for (uint32_t id = 1; id <= 3; id++) {
    const Ref<const ClusterView> view = agent(id).view();
    ASSERT_EQ(view->nodes.size(), 3u);
    EXPECT_EQ(view->controller, 1u);
    EXPECT_EQ(view->self, id);
    EXPECT_TRUE(view->registered);
    EXPECT_EQ(view->node(2)->client_address, "127.0.0.2:8090");
    EXPECT_EQ(view->node(3)->link_address, "127.0.0.3:8091");
  }
  // Nothing changed: no new view version.
  const uint64_t version = agent(2).view()->version;
  run_for(10, {1, 2, 3});
  EXPECT_EQ(agent(2).view()->version, version);
}

TEST_F(AgentTest, PausedControllerIsDeposedAndItsWriteRejected) {
  add(1);
  add(2);
  step({1, 2});
  ASSERT_TRUE(agent(1).is_controller());
  // Node 1 stops (as under SIGSTOP); node 2 keeps its lease alive and wins once 1's lapses.
  run_for(6, {2});
  ASSERT_TRUE(agent(2).is_controller());
  EXPECT_EQ(agent(2).view()->nodes.size(), 1u);
  EXPECT_TRUE(agent(1).is_controller());  // It has not looked yet.
  const int64_t before = etcd.revision();
  const Result<bool> written = agent(1).controller_txn({}, {TxnOp::put("/test/stale", "x")});
  ASSERT_TRUE(written.ok());
  EXPECT_FALSE(*written);
  EXPECT_EQ(agent(1).controller_writes_rejected(), 1u);
  EXPECT_FALSE(agent(1).is_controller());
  EXPECT_EQ(etcd.revision(), before);  // Nothing written.
  // Resumed, it registers again as a follower.
  step({1, 2});
  EXPECT_FALSE(agent(1).is_controller());
  EXPECT_EQ(agent(1).view()->controller, 2u);
  EXPECT_EQ(agent(2).view()->nodes.size(), 2u);
}

TEST_F(AgentTest, ResumedControllerStepsDownOnItsExpiredLease) {
  add(1);
  add(2);
  step({1, 2});
  run_for(6, {2});
  clock.advance(seconds(1));
  step({1});  // Its keep-alive finds the lease gone: it is not the controller any more.
  EXPECT_FALSE(agent(1).is_controller());
  EXPECT_EQ(controllers(), 1);
}

TEST_F(AgentTest, PartitionsSpreadByLoadAndDeadNodesGetNone) {
  add(1);
  add(2);
  add(3);
  step({1, 2, 3});
  for (uint32_t p = 1; p <= 6; p++) ASSERT_TRUE(agent(2).request_partition(partition(p)).ok());
  step({1, 2, 3});
  const Ref<const ClusterView> view = agent(3).view();
  ASSERT_EQ(view->assignments.size(), 6u);
  std::map<uint32_t, int> load;
  for (const auto& [key, assignment] : view->assignments) {
    load[assignment.node]++;
    EXPECT_EQ(assignment.epoch, 1u);
  }
  EXPECT_EQ(load, (std::map<uint32_t, int>{{1, 2}, {2, 2}, {3, 2}}));
  // Node 3 dies: its partitions are unavailable, new ones go to 1 and 2 only.
  run_for(6, {1, 2});
  std::vector<core::PartitionKey> on_three;
  for (const auto& [key, assignment] : agent(1).view()->assignments) {
    if (assignment.node == 3) on_three.push_back(key);
  }
  ASSERT_EQ(on_three.size(), 2u);
  for (const auto& key : on_three) {
    EXPECT_EQ(agent(1).view()->owner(key).kind, PartitionOwner::Kind::unavailable);
  }
  for (uint32_t p = 7; p <= 10; p++) ASSERT_TRUE(agent(1).request_partition(partition(p)).ok());
  step({1, 2});
  for (uint32_t p = 7; p <= 10; p++) {
    const PartitionOwner owner = agent(2).view()->owner(partition(p));
    EXPECT_EQ(owner.kind, PartitionOwner::Kind::node);
    EXPECT_NE(owner.assignment.node, 3u);
  }
  // It returns: its partitions are served again, at the same epoch.
  step({1, 2, 3});
  for (const auto& key : on_three) {
    const PartitionOwner owner = agent(1).view()->owner(key);
    EXPECT_EQ(owner.kind, PartitionOwner::Kind::node);
    EXPECT_EQ(owner.assignment.node, 3u);
    EXPECT_EQ(owner.assignment.epoch, 1u);
  }
}

TEST_F(AgentTest, AMoveCommitsAtTheNextEpochOnlyOnceItsTargetIsReady) {
  add(1);
  add(2);
  step({1, 2});
  ASSERT_TRUE(agent(1).request_partition(partition(1)).ok());
  step({1, 2});
  const Assignment before = agent(1).view()->assignments.at(partition(1));
  const uint32_t other = before.node == 1 ? 2 : 1;
  ASSERT_TRUE(*agent(1).move_partition(partition(1), other));
  step({1, 2});
  // Planned: the old owner keeps the partition until the target has it.
  EXPECT_EQ(agent(2).view()->assignments.at(partition(1)), before);
  ASSERT_EQ(agent(2).view()->moves.size(), 1u);
  EXPECT_FALSE(agent(2).view()->moves.at(partition(1)).ready);
  EXPECT_FALSE(*agent(1).move_partition(partition(1), other));        // Already moving.
  EXPECT_FALSE(*agent(before.node).report_move_ready(partition(1)));  // Not its target.
  step({1, 2});
  EXPECT_EQ(agent(2).view()->assignments.at(partition(1)), before);
  ASSERT_TRUE(*agent(other).report_move_ready(partition(1)));
  step({1, 2});
  const Assignment after = agent(2).view()->assignments.at(partition(1));
  EXPECT_EQ(after.node, other);
  EXPECT_EQ(after.epoch, before.epoch + 1);
  EXPECT_TRUE(agent(2).view()->moves.empty());
  EXPECT_EQ(agent(1).moves_committed(), 1u);
  EXPECT_FALSE(*agent(1).move_partition(partition(1), 7));  // No node 7.
  EXPECT_TRUE(agent(1).is_controller());                    // Refused, not deposed.
  EXPECT_FALSE(*agent(2).move_partition(partition(1), 1));  // Not the controller.
}

TEST_F(AgentTest, AMoveWhoseTargetDiesIsAbandonedAndTheOldOwnerKeepsThePartition) {
  add(1);
  add(2);
  add(3);
  step({1, 2, 3});
  ASSERT_TRUE(agent(1).request_partition(partition(1)).ok());
  step({1, 2, 3});
  const Assignment before = agent(1).view()->assignments.at(partition(1));
  ASSERT_EQ(before.node, 1u);  // The least loaded, lowest id.
  ASSERT_TRUE(*agent(1).move_partition(partition(1), 3));
  step({1, 2, 3});
  // Node 3 dies (SIGKILL) before it reports the move ready: its lease lapses.
  run_for(7, {1, 2});
  EXPECT_TRUE(agent(1).view()->moves.empty());
  EXPECT_EQ(agent(1).moves_abandoned(), 1u);
  EXPECT_EQ(agent(2).view()->assignments.at(partition(1)), before);
  // Back, it cannot finish the move it lost.
  step({3});
  EXPECT_FALSE(*agent(3).report_move_ready(partition(1)));
  step({1, 2, 3});
  EXPECT_EQ(agent(3).view()->assignments.at(partition(1)), before);
}

TEST_F(AgentTest, AMoveWhoseOwnerDiesIsAbandonedEvenIfReady) {
  add(1);
  add(2);
  add(3);
  step({1, 2, 3});
  for (uint32_t p = 1; p <= 2; p++) ASSERT_TRUE(agent(1).request_partition(partition(p)).ok());
  step({1, 2, 3});
  const Assignment before = agent(1).view()->assignments.at(partition(2));
  ASSERT_EQ(before.node, 2u);
  ASSERT_TRUE(*agent(1).move_partition(partition(2), 3));
  step({1, 2, 3});
  // Node 2 dies; node 3 had the data and says so before the controller notices.
  run_for(7, {1, 3});
  EXPECT_FALSE(*agent(3).report_move_ready(partition(2)));  // Already abandoned.
  EXPECT_EQ(agent(3).view()->assignments.at(partition(2)), before);
  EXPECT_EQ(agent(3).view()->owner(partition(2)).kind, PartitionOwner::Kind::unavailable);
}

TEST_F(AgentTest, ADrainMovesEveryPartitionOffTheNodeAndAssignsItNothingNew) {
  add(1);
  add(2);
  add(3);
  step({1, 2, 3});
  for (uint32_t p = 1; p <= 3; p++) ASSERT_TRUE(agent(1).request_partition(partition(p)).ok());
  step({1, 2, 3});
  ASSERT_EQ(agent(1).view()->assignments.at(partition(2)).node, 2u);
  ASSERT_TRUE(agent(3).request_drain(2).ok());
  step({1, 2, 3});
  EXPECT_TRUE(agent(1).view()->is_draining(2));
  ASSERT_EQ(agent(1).view()->moves.size(), 1u);
  const Move move = agent(1).view()->moves.at(partition(2));
  EXPECT_EQ(move.from, 2u);
  EXPECT_NE(move.to, 2u);
  // A partition created meanwhile goes elsewhere.
  ASSERT_TRUE(agent(1).request_partition(partition(4)).ok());
  step({1, 2, 3});
  EXPECT_NE(agent(1).view()->assignments.at(partition(4)).node, 2u);
  ASSERT_TRUE(*agent(move.to).report_move_ready(partition(2)));
  step({1, 2, 3});
  for (const auto& [key, assignment] : agent(2).view()->assignments) {
    EXPECT_NE(assignment.node, 2u) << key.partition.value();
  }
  EXPECT_EQ(agent(2).view()->assignments.at(partition(2)).epoch, 2u);
  EXPECT_TRUE(agent(2).view()->moves.empty());
}

// A controller paused past its lease (SIGSTOP) while another was elected cannot commit the
// move it had planned: its guarded write is rejected.
TEST_F(AgentTest, ADeposedControllerCannotCommitAMove) {
  add(1);
  add(2);
  add(3);
  step({1, 2, 3});
  for (uint32_t p = 1; p <= 2; p++) ASSERT_TRUE(agent(1).request_partition(partition(p)).ok());
  step({1, 2, 3});
  const Assignment before = agent(1).view()->assignments.at(partition(2));
  ASSERT_EQ(before.node, 2u);
  ASSERT_TRUE(*agent(1).move_partition(partition(2), 3));
  step({1, 2, 3});
  ASSERT_TRUE(*agent(3).report_move_ready(partition(2)));
  run_for(7, {2, 3});  // Node 1 paused: another leads and commits the move at epoch + 1.
  ASSERT_TRUE(agent(2).is_controller() || agent(3).is_controller());
  EXPECT_EQ(agent(2).view()->assignments.at(partition(2)).node, 3u);
  EXPECT_EQ(agent(2).view()->assignments.at(partition(2)).epoch, before.epoch + 1);
  // Resumed, node 1 still believes it leads, but what it writes is rejected.
  ASSERT_TRUE(agent(1).is_controller());
  EXPECT_FALSE(*agent(1).move_partition(partition(2), 1));
  EXPECT_FALSE(agent(1).is_controller());
  EXPECT_EQ(agent(1).controller_writes_rejected(), 1u);
  step({1, 2, 3});
  EXPECT_EQ(agent(1).view()->assignments.at(partition(2)).node, 3u);
}

TEST_F(AgentTest, UnreachableEtcdFailsTheStepAndKeepsTheView) {
  add(1);
  step({1});
  const uint64_t version = agent(1).view()->version;
  etcd.set_reachable(false);
  clock.advance(seconds(2));
  EXPECT_EQ(agent(1).step(Duration(0)).error(), Error::cannot_establish_connection);
  EXPECT_EQ(agent(1).view()->version, version);
  etcd.set_reachable(true);
  step({1});
  EXPECT_TRUE(agent(1).view()->registered);
}

TEST_F(AgentTest, NodeAwayPastACompactionConverges) {
  add(1);
  add(2);
  step({1, 2});
  ASSERT_TRUE(agent(1).request_partition(partition(1)).ok());
  step({1});
  ASSERT_TRUE(agent(1).leave().ok());  // Node 1 leaves while 2 is not looking.
  etcd.compact(etcd.revision());
  step({2});
  EXPECT_EQ(agent(2).view()->nodes.size(), 1u);
  EXPECT_TRUE(agent(2).is_controller());
  EXPECT_EQ(agent(2).view()->assignments.size(), 1u);
}

TEST_F(AgentTest, LeaveLetsAnotherLeadAtOnce) {
  add(1);
  add(2);
  step({1, 2});
  ASSERT_TRUE(agent(1).leave().ok());
  step({2});
  EXPECT_TRUE(agent(2).is_controller());
  EXPECT_EQ(agent(2).view()->nodes.size(), 1u);
}

}  // namespace
}  // namespace hark::server::cluster
