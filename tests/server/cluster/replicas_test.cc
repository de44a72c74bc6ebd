// The controller side of replication (docs/cluster.md §Replication), over FakeEtcd on a
// ManualClock: replicas placed on distinct nodes by load; a dead leader replaced by the first
// live in-sync replica at epoch + 1; no live in-sync replica leaves the partition unavailable
// until one returns; a leader's ISR changes, and a deposed leader's rejected; a replica gone past
// the grace replaced outside the ISR; a drain moving leadership, then the replica; and the pure
// parts: the effective replication factor, the assignment's JSON, decide_replicas.
#include "hark/server/cluster/replicas.h"

#include <chrono>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/clock.h"
#include "hark/server/cluster/fake_etcd.h"
#include "hark/server/cluster/node_agent.h"

namespace hark::server::cluster {
namespace {

using std::chrono::seconds;
using IsrChange = NodeAgent::IsrChange;

core::PartitionKey partition(uint32_t id) {
  return {.stream = StreamId(1), .topic = TopicId(1), .partition = PartitionId(id)};
}

struct ReplicaTest : ::testing::Test {
  ManualClock clock;
  FakeEtcd etcd{clock};
  std::vector<std::unique_ptr<Coordinator>> clients;
  std::vector<std::unique_ptr<NodeAgent>> agents;

  void add(uint32_t count) {
    for (uint32_t i = 0; i < count; i++) {
      const auto id = static_cast<uint32_t>(agents.size() + 1);
      clients.push_back(etcd.client());
      agents.push_back(std::make_unique<NodeAgent>(
          *clients.back(), clock,
          AgentOptions{.cluster = "test",
                       .self = {.id = id, .client_address = "c", .link_address = "l", .shards = 1},
                       .lease_ttl_seconds = 5,
                       .replica_replace_after = seconds(60)}));
    }
  }
  NodeAgent& agent(uint32_t id) { return *agents.at(id - 1); }
  void step(std::initializer_list<uint32_t> ids) {
    for (int round = 0; round < 2; round++) {
      for (const uint32_t id : ids) ASSERT_TRUE(agent(id).step(Duration(0)).ok());
    }
  }
  void run_for(int total, std::initializer_list<uint32_t> ids) {
    for (int i = 0; i < total; i++) {
      clock.advance(seconds(1));
      step(ids);
    }
  }
  Assignment at(uint32_t id, uint32_t p = 1) {
    return agent(id).view()->assignments.at(partition(p));
  }
  // The assignment as etcd holds it now.
  Assignment stored(uint32_t p) {
    const Result<RangeResult> range =
        clients.front()->range("/hark/test/assignments/1/1/" + std::to_string(p), false);
    if (!range.ok() || range->kvs.size() != 1) return {};
    return decode_assignment(range->kvs[0].value).value_or(Assignment{});
  }
  // The leader of p makes every replica in sync (as it will once they caught up).
  void all_in_sync(uint32_t p, std::initializer_list<uint32_t> ids) {
    const Assignment now = at(1, p);
    const Result<IsrChange> changed =
        agent(now.node).change_isr(partition(p), now.epoch, now.replicas);
    ASSERT_TRUE(changed.ok());
    ASSERT_EQ(*changed, IsrChange::applied);
    step(ids);
    ASSERT_EQ(at(1, p).isr.size(), now.replicas.size());
  }
};

TEST_F(ReplicaTest, ReplicasArePlacedOnDistinctNodesSpreadByLoadWithOnlyTheLeaderInSync) {
  add(4);
  step({1, 2, 3, 4});
  for (uint32_t p = 1; p <= 4; p++) ASSERT_TRUE(agent(2).request_partition(partition(p), 3).ok());
  step({1, 2, 3, 4});
  std::map<uint32_t, int> replicas;
  std::map<uint32_t, int> leaders;
  for (uint32_t p = 1; p <= 4; p++) {
    const Assignment assignment = at(3, p);
    ASSERT_EQ(assignment.replicas.size(), 3u);
    EXPECT_TRUE(assignment.well_formed());  // Distinct, leader in sync, isr within replicas.
    EXPECT_EQ(assignment.replicas.front(), assignment.node);
    EXPECT_EQ(assignment.isr, std::vector<uint32_t>{assignment.node});
    EXPECT_EQ(assignment.epoch, 1u);
    EXPECT_EQ(agent(3).view()->owner(partition(p)).assignment.node, assignment.node);
    for (const uint32_t id : assignment.replicas) replicas[id]++;
    leaders[assignment.node]++;
  }
  EXPECT_EQ(replicas, (std::map<uint32_t, int>{{1, 3}, {2, 3}, {3, 3}, {4, 3}}));
  EXPECT_EQ(leaders, (std::map<uint32_t, int>{{1, 1}, {2, 1}, {3, 1}, {4, 1}}));
}

TEST_F(ReplicaTest, FewerLiveNodesThanTheFactorPlacesWhatItCanAndTopsUpAsNodesJoin) {
  add(3);
  step({1});
  ASSERT_TRUE(agent(1).request_partition(partition(1), 3).ok());
  step({1});
  EXPECT_EQ(at(1).replicas, std::vector<uint32_t>{1});
  step({1, 2, 3});
  step({1});
  EXPECT_EQ(at(1).replicas, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(at(1).isr, std::vector<uint32_t>{1});  // The new ones join outside the ISR.
  EXPECT_EQ(at(1).epoch, 1u);
}

TEST_F(ReplicaTest, ADeadLeaderIsReplacedByTheFirstLiveInSyncReplicaAtTheNextEpoch) {
  add(3);
  step({1, 2, 3});
  ASSERT_TRUE(agent(1).request_partition(partition(1), 3).ok());
  step({1, 2, 3});
  ASSERT_EQ(at(1).replicas, (std::vector<uint32_t>{1, 2, 3}));
  all_in_sync(1, {1, 2, 3});
  // Node 1 leads and controls; it dies (SIGKILL): its lease lapses, 2 or 3 takes over both.
  run_for(7, {2, 3});
  const Assignment after = at(2);
  EXPECT_EQ(after.node, 2u);  // The first live one of the ISR, in replica order.
  EXPECT_EQ(after.epoch, 2u);
  EXPECT_EQ(after.isr, (std::vector<uint32_t>{2, 3}));          // The dead node left the ISR.
  EXPECT_EQ(after.replicas, (std::vector<uint32_t>{1, 2, 3}));  // Within the grace: kept.
  EXPECT_EQ(agent(2).view()->owner(partition(1)).kind, PartitionOwner::Kind::node);
  EXPECT_EQ(agent(2).leader_changes() + agent(3).leader_changes(), 1u);
  // Node 1 returns: a follower out of sync; nothing changes until its leader says it caught up.
  step({1, 2, 3});
  EXPECT_EQ(at(1), after);
}

TEST_F(ReplicaTest, ADeposedLeadersIsrChangeIsRejected) {
  add(3);
  step({1, 2, 3});
  ASSERT_TRUE(agent(1).request_partition(partition(1), 3).ok());
  step({1, 2, 3});
  all_in_sync(1, {1, 2, 3});
  // Node 1 paused (SIGSTOP) past its lease: node 2 leads at epoch 2.
  run_for(7, {2, 3});
  ASSERT_EQ(at(2).node, 2u);
  const int64_t before = etcd.revision();
  // Resumed with its old mirror, node 1 still believes it leads at epoch 1: etcd refuses.
  const Result<IsrChange> stale_leader = agent(1).change_isr(partition(1), 1, {1});
  ASSERT_TRUE(stale_leader.ok());
  EXPECT_EQ(*stale_leader, IsrChange::deposed);
  EXPECT_EQ(etcd.revision(), before);
  step({1, 2, 3});
  EXPECT_EQ(*agent(1).change_isr(partition(1), 1, {1}), IsrChange::deposed);  // Now it knows.
  // The leader at epoch 2 may: it shrinks, then expands (node 1 caught up again).
  EXPECT_EQ(*agent(2).change_isr(partition(1), 2, {2}), IsrChange::applied);
  step({1, 2, 3});
  EXPECT_EQ(at(3).isr, std::vector<uint32_t>{2});
  EXPECT_EQ(*agent(2).change_isr(partition(1), 2, {3, 1, 2}), IsrChange::applied);
  step({1, 2, 3});
  EXPECT_EQ(at(3).isr, (std::vector<uint32_t>{1, 2, 3}));  // Kept in replica order.
  EXPECT_EQ(at(3).epoch, 2u);                              // An ISR change is no change of leader.
  // Rules: the leader stays in sync, only replicas are, at the epoch it leads.
  EXPECT_EQ(agent(2).change_isr(partition(1), 2, {1, 3}).error(), Error::invalid_format);
  EXPECT_EQ(agent(2).change_isr(partition(1), 2, {2, 7}).error(), Error::invalid_format);
  EXPECT_EQ(*agent(3).change_isr(partition(1), 2, {3}), IsrChange::deposed);  // Not the leader.
}

TEST_F(ReplicaTest, AnIsrChangeRacingTheControllersIsStaleAndAppliesWhenAskedAgain) {
  add(3);
  step({1, 2, 3});
  for (uint32_t p = 1; p <= 2; p++) ASSERT_TRUE(agent(1).request_partition(partition(p), 3).ok());
  step({1, 2, 3});
  ASSERT_TRUE(agent(1).is_controller());
  ASSERT_EQ(at(1, 2).node, 2u);  // Partition 2: led by node 2, not the controller.
  all_in_sync(2, {1, 2, 3});
  // Node 3 dies; the controller drops it from the ISR before node 2's mirror sees that.
  for (int i = 0; i < 10 && stored(2).isr.size() == 3; i++) {
    clock.advance(seconds(1));
    ASSERT_TRUE(agent(1).step(Duration(0)).ok());
    if (stored(2).isr.size() == 3) {
      ASSERT_TRUE(agent(2).step(Duration(0)).ok());
    }
  }
  ASSERT_EQ(stored(2).isr, (std::vector<uint32_t>{2, 1}));
  ASSERT_EQ(at(2, 2).isr.size(), 3u);  // Node 2 has not seen it.
  const Result<IsrChange> raced = agent(2).change_isr(partition(2), 1, {2, 3});
  ASSERT_TRUE(raced.ok());
  EXPECT_EQ(*raced, IsrChange::stale);
  step({1, 2});
  EXPECT_EQ(*agent(2).change_isr(partition(2), 1, {2}), IsrChange::applied);
  step({1, 2});
  EXPECT_EQ(at(1, 2).isr, std::vector<uint32_t>{2});
}

TEST_F(ReplicaTest, NoLiveInSyncReplicaLeavesThePartitionUnavailableUntilOneReturns) {
  add(3);
  step({1, 2, 3});
  ASSERT_TRUE(agent(1).request_partition(partition(1), 3).ok());
  step({1, 2, 3});
  const Assignment placed = at(1);
  ASSERT_EQ(placed.isr, std::vector<uint32_t>{1});  // The followers have not caught up.
  // Its leader dies: the followers are live but out of sync, so none may lead (no unclean
  // election).
  run_for(7, {2, 3});
  EXPECT_EQ(agent(2).view()->owner(partition(1)).kind, PartitionOwner::Kind::unavailable);
  EXPECT_EQ(at(2), placed);
  // It returns: served again, by it, at the same epoch.
  step({1, 2, 3});
  EXPECT_EQ(agent(2).view()->owner(partition(1)).kind, PartitionOwner::Kind::node);
  EXPECT_EQ(at(2), placed);
  // Now two in sync, {1, 2}; both die. The one whose lease lapsed last is the last in sync (the
  // controller dropped the other): the first back is out of sync and may not lead; the last
  // in sync may, at the next epoch if it was not the leader.
  ASSERT_EQ(*agent(1).change_isr(partition(1), 1, {1, 2}), IsrChange::applied);
  step({1, 2, 3});
  ASSERT_EQ(at(3).isr, (std::vector<uint32_t>{1, 2}));
  run_for(7, {3});
  EXPECT_EQ(agent(3).view()->owner(partition(1)).kind, PartitionOwner::Kind::unavailable);
  ASSERT_EQ(at(3).isr.size(), 1u);
  const uint32_t last = at(3).isr.front();
  const uint32_t other = last == 1 ? 2 : 1;
  const NodeAgent& out_of_sync = agent(other);
  for (int i = 0; i < 2; i++) ASSERT_TRUE(agent(other).step(Duration(0)).ok());
  step({3});
  EXPECT_TRUE(out_of_sync.view()->registered);
  EXPECT_EQ(agent(3).view()->owner(partition(1)).kind, PartitionOwner::Kind::unavailable);
  for (int i = 0; i < 2; i++) ASSERT_TRUE(agent(last).step(Duration(0)).ok());
  step({1, 2, 3});
  EXPECT_EQ(at(3).node, last);
  EXPECT_EQ(at(3).epoch, last == 1 ? 1u : 2u);
  EXPECT_EQ(agent(3).view()->owner(partition(1)).kind, PartitionOwner::Kind::node);
}

TEST_F(ReplicaTest, AReplicaGonePastTheGraceIsReplacedByALiveNodeOutsideTheIsr) {
  add(4);
  step({1, 2, 3, 4});
  ASSERT_TRUE(agent(1).request_partition(partition(1), 3).ok());
  step({1, 2, 3, 4});
  ASSERT_EQ(at(1).replicas, (std::vector<uint32_t>{1, 2, 3}));
  all_in_sync(1, {1, 2, 3, 4});
  // Node 3 dies: out of the ISR at once, kept as a replica through the grace (60 s here).
  run_for(30, {1, 2, 4});
  EXPECT_EQ(at(1).replicas, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(at(1).isr, (std::vector<uint32_t>{1, 2}));
  run_for(40, {1, 2, 4});
  EXPECT_EQ(at(1).replicas, (std::vector<uint32_t>{1, 2, 4}));
  EXPECT_EQ(at(1).isr, (std::vector<uint32_t>{1, 2}));  // Node 4 joins outside the ISR.
  EXPECT_EQ(at(1).epoch, 1u);
  EXPECT_EQ(agent(1).replica_set_changes(), 1u);
}

TEST_F(ReplicaTest, ADrainMovesLeadershipFirstThenTheReplicaOnceItsReplacementCaughtUp) {
  add(4);
  step({1, 2, 3, 4});
  ASSERT_TRUE(agent(1).request_partition(partition(1), 3).ok());
  step({1, 2, 3, 4});
  ASSERT_EQ(at(1).replicas, (std::vector<uint32_t>{1, 2, 3}));
  all_in_sync(1, {1, 2, 3, 4});
  ASSERT_TRUE(agent(4).request_drain(1).ok());
  step({1, 2, 3, 4});
  // A leader change, no copy: node 2 leads at epoch 2; node 4 joins outside the ISR and node 1
  // stays a replica (in sync) until node 4 caught up.
  EXPECT_EQ(at(1).node, 2u);
  EXPECT_EQ(at(1).epoch, 2u);
  EXPECT_EQ(at(1).replicas, (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(at(1).isr, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_TRUE(agent(1).view()->moves.empty());  // Not a move.
  ASSERT_EQ(*agent(2).change_isr(partition(1), 2, {1, 2, 3, 4}), IsrChange::applied);
  step({1, 2, 3, 4});
  EXPECT_EQ(at(1).replicas, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(at(1).isr, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(at(1).epoch, 2u);
}

TEST_F(ReplicaTest, AFactorOnePartitionStillMovesAndIsNeverFailedOver) {
  add(2);
  step({1, 2});
  ASSERT_TRUE(agent(1).request_partition(partition(1), 1).ok());
  step({1, 2});
  ASSERT_EQ(at(1), single_replica(1, 1, 1));
  run_for(7, {2});  // Its only copy is gone: unavailable, no other node leads it.
  EXPECT_EQ(agent(2).view()->owner(partition(1)).kind, PartitionOwner::Kind::unavailable);
  EXPECT_EQ(at(2), single_replica(1, 1, 1));
  step({1, 2});
  ASSERT_TRUE(agent(2).is_controller());
  ASSERT_TRUE(*agent(2).move_partition(partition(1), 2));
  step({1, 2});
  ASSERT_TRUE(*agent(2).report_move_ready(partition(1)));
  step({1, 2});
  EXPECT_EQ(at(1), single_replica(2, 2, 2));
}

TEST(ReplicationFactor, RaisedToTheMinimumCappedByLiveNodesAndRefusedAboveThem) {
  const auto effective = [](uint8_t requested, uint8_t minimum, size_t live) {
    return effective_replication_factor(requested, minimum, live);
  };
  EXPECT_EQ(effective(1, 3, 3)->factor, 3);  // The Node SDK sends 1.
  EXPECT_FALSE(effective(1, 3, 3)->capped);
  EXPECT_EQ(effective(0, 3, 5)->factor, 3);  // No factor named.
  EXPECT_EQ(effective(5, 3, 5)->factor, 5);
  EXPECT_EQ(effective(1, 3, 2)->factor, 2);  // A 2-node cluster: capped, logged.
  EXPECT_TRUE(effective(1, 3, 2)->capped);
  EXPECT_EQ(effective(1, 3, 1)->factor, 1);
  EXPECT_EQ(effective(1, 1, 3)->factor, 1);
  EXPECT_EQ(effective(4, 3, 3).error(), Error::invalid_replication_factor);  // As Kafka.
  EXPECT_EQ(effective(2, 1, 1).error(), Error::invalid_replication_factor);
}

TEST(AssignmentJson, RoundTripsAndReadsTheOldFormAsOneReplica) {
  const Assignment assignment{.node = 2, .epoch = 4, .by = 1, .replicas = {2, 3, 1}, .isr = {2, 1}};
  EXPECT_EQ(encode_assignment(assignment),
            R"({"by":1,"epoch":4,"isr":[2,1],"node":2,"replicas":[2,3,1]})");
  EXPECT_EQ(decode_assignment(encode_assignment(assignment)), assignment);
  EXPECT_EQ(decode_assignment(R"({"node":2,"epoch":1,"by":1})"), single_replica(2, 1, 1));
  for (const char* bad : {R"({"node":2,"epoch":1,"by":1,"replicas":[2,2],"isr":[2]})",
                          R"({"node":2,"epoch":1,"by":1,"replicas":[1,3],"isr":[1]})",
                          R"({"node":2,"epoch":1,"by":1,"replicas":[2,3],"isr":[3]})",
                          R"({"node":2,"epoch":1,"by":1,"replicas":[2],"isr":[2,4]})",
                          R"({"node":2,"epoch":1,"by":1,"replicas":[2,0],"isr":[2]})",
                          R"({"node":2,"epoch":1,"by":1,"replicas":[],"isr":[2]})",
                          R"({"node":2,"epoch":1,"by":1,"replicas":"2","isr":[2]})"}) {
    EXPECT_FALSE(decode_assignment(bad).has_value()) << bad;
  }
  EXPECT_EQ(decode_partition_request(""), 1u);
  EXPECT_EQ(decode_partition_request(encode_partition_request(3)), 3u);
  EXPECT_FALSE(decode_partition_request(R"({"replication_factor":0})").has_value());
  EXPECT_FALSE(decode_partition_request("garbage").has_value());
}

TEST(DecideReplicas, ANewLeaderComesFromTheIsrAndPrefersOneThatDoesNotDrain) {
  const Assignment current{.node = 1, .epoch = 3, .by = 1, .replicas = {1, 2, 3}, .isr = {1, 2, 3}};
  Loads loads;
  ReplicaFacts facts{.factor = 3, .live = {2, 3}, .draining = {2}, .gone_past_grace = {}};
  const std::optional<Assignment> next = decide_replicas(current, facts, loads);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->node, 3u);
  EXPECT_EQ(next->epoch, 4u);
  EXPECT_EQ(next->isr, (std::vector<uint32_t>{2, 3}));
  facts.live = {2};  // Only a draining one left: it leads all the same.
  EXPECT_EQ(decide_replicas(current, facts, loads)->node, 2u);
  facts.live = {};  // Nobody in sync is live: nothing changes.
  EXPECT_FALSE(decide_replicas(current, facts, loads).has_value());
  facts = {.factor = 3, .live = {1, 2, 3}, .draining = {}, .gone_past_grace = {}};
  EXPECT_FALSE(decide_replicas(current, facts, loads).has_value());  // All well.
}

// A replica's place for the data path (docs/cluster.md §Replication, The data path): the
// leader is member 0, the others follow in replica order; the in-sync mask and the set's hash
// follow the members, so a reordered set is another set.
TEST(ReplicaPlace, MembersAreNumberedFromTheLeaderAndTheSetNamesTheirOrder) {
  const Assignment assignment{.node = 2, .epoch = 4, .replicas = {1, 2, 3}, .isr = {2, 3}};
  EXPECT_EQ(assignment.member_of(2), 0u);
  EXPECT_EQ(assignment.member_of(1), 1u);
  EXPECT_EQ(assignment.member_of(3), 2u);
  EXPECT_EQ(assignment.member_of(4), std::nullopt);
  const auto leader = assignment.place_of(2);
  ASSERT_TRUE(leader.has_value());
  EXPECT_EQ(leader->role, core::ReplicaRole::leader);
  EXPECT_EQ(leader->epoch, 4u);
  EXPECT_EQ(leader->replicas, 3u);
  EXPECT_EQ(leader->in_sync, 0b101u);  // Itself and node 3 (member 2).
  const auto follower = assignment.place_of(3);
  ASSERT_TRUE(follower.has_value());
  EXPECT_EQ(follower->role, core::ReplicaRole::follower);
  EXPECT_EQ(follower->set, leader->set);
  EXPECT_NE(follower->set, 0u);
  EXPECT_EQ(assignment.place_of(4), std::nullopt);
  Assignment reordered = assignment;
  reordered.replicas = {2, 3, 1};
  EXPECT_NE(reordered.place_of(2)->set, leader->set);
  EXPECT_EQ(single_replica(1, 1, 1).place_of(1), std::nullopt);  // Factor 1: no place.
}

}  // namespace
}  // namespace hark::server::cluster
