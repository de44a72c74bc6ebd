// Consumer groups whose members are spread over the nodes of a three-node cluster
// (docs/cluster.md §Consumer groups): a member that joins via node 1 and one that joins via
// node 2 share one group and split its partitions (the assignment every node reads from the
// membership journaled in etcd); every message sent via node 3 is delivered to exactly one
// member exactly once (counted); a member's parked poll is woken by a send via node 3 to a
// partition another node owns (its legs counted parked and cancelled at the owners, not
// timed), and its auto-commit is stored at that owner; a client that goes away cancels its
// legs at every owner; a node that dies takes its members out of the group. Label cluster (release
// stage only): one etcd, three harkd, seconds each.
#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_gateway.h"
#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/wait_until.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using protocol::Identifier;

constexpr uint32_t partitions = 3;

class ClusterGroups : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cluster_.start({}), "");
    ASSERT_EQ(cluster_.connect_all(clients_), "");
    ASSERT_TRUE(clients_[1]->create_stream({.name = "s"}).ok());
    protocol::CreateTopicRequest topic;
    topic.stream_id = Identifier::numeric(0);
    topic.partitions_count = partitions;
    topic.name = "t";
    ASSERT_TRUE(clients_[1]->create_topic(topic).ok());
    ASSERT_TRUE(clients_[1]
                    ->create_consumer_group({.stream_id = Identifier::numeric(0),
                                             .topic_id = Identifier::numeric(0),
                                             .name = "g"})
                    .ok());
    for (uint32_t id = 1; id <= 3; id++) {
      ASSERT_TRUE(wait_for_stats(cluster_.node(id), [](const HarkdStats& stats) {
        return stats.view_assignments == partitions && stats.view_nodes == 3;
      })) << cluster_.node(id).stderr_tail();
    }
    read_owners();
    // Member 1 joins via node 1, member 2 via node 2 (in that order: partitions 0 and 2 go to
    // the first, 1 to the second, p mod members).
    members_[1] = cluster_.connect(1);
    members_[2] = cluster_.connect(2);
    ASSERT_TRUE(members_[1]->join_consumer_group(join()).ok());
    ASSERT_TRUE(members_[2]->join_consumer_group(join()).ok());
  }

  void TearDown() override {
    members_.clear();
    EXPECT_EQ(cluster_.stop_all(), "");
  }

  static protocol::JoinConsumerGroupRequest join() {
    return {.stream_id = Identifier::numeric(0),
            .topic_id = Identifier::numeric(0),
            .group_id = Identifier::numeric(0)};
  }

  void read_owners() {
    auto etcd = server::cluster::EtcdGateway::create({.endpoints = {cluster_.etcd().url()},
                                                      .user = EtcdProcess::user,
                                                      .password = EtcdProcess::password});
    ASSERT_TRUE(etcd.ok());
    for (uint32_t p = 0; p < partitions; p++) {
      const auto range = (*etcd)->range("/hark/e2e/assignments/0/0/" + std::to_string(p), false);
      ASSERT_TRUE(range.ok());
      ASSERT_EQ(range->kvs.size(), 1u);
      owner_of_[p] = server::cluster::decode_assignment(range->kvs[0].value)->node;
    }
  }

  // The group's members as `via` reports them: id → partitions.
  std::map<uint32_t, std::vector<uint32_t>> group_members(uint32_t via) {
    const auto group = clients_[via]->get_consumer_group({.stream_id = Identifier::numeric(0),
                                                          .topic_id = Identifier::numeric(0),
                                                          .group_id = Identifier::numeric(0)});
    std::map<uint32_t, std::vector<uint32_t>> members;
    if (!group.ok() || !group->has_value()) return members;
    for (const auto& member : (*group)->members) members[member.id] = member.partitions;
    return members;
  }

  Status send(uint32_t via, uint32_t partition, std::string_view text) {
    const protocol::Bytes payload = bytes_of(text);
    const protocol::OutgoingMessage message{.payload = payload};
    return clients_[via]->send_messages(
        {.stream_id = Identifier::numeric(0),
         .topic_id = Identifier::numeric(0),
         .partitioning = protocol::Partitioning::partition(partition)},
        std::span(&message, 1));
  }

  // A member's poll as a group consumer without a partition (the group deals it), next,
  // auto-commit on.
  Result<client::PolledMessages> member_poll(uint32_t member, uint32_t count,
                                             std::chrono::microseconds wait) {
    protocol::PollMessagesRequest request = poll_request(0, 0, next_strategy(), count, wait, true);
    request.consumer = {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(0)};
    request.partition_id.reset();
    request.wait_timeout_us = static_cast<uint64_t>(wait.count());  // 0 too: explicit.
    return members_[member]->poll_messages(request);
  }

  uint64_t parked_now_total() {
    uint64_t total = 0;
    for (uint32_t id = 1; id <= 3; id++) total += cluster_.node(id).stats()->parked_now;
    return total;
  }

  LocalCluster cluster_;
  std::map<uint32_t, std::unique_ptr<client::Client>> clients_;
  std::map<uint32_t, std::unique_ptr<client::Client>> members_;
  std::map<uint32_t, uint32_t> owner_of_;
};

TEST_F(ClusterGroups, MembersViaTwoNodesShareOneGroupAndEachMessageIsDeliveredOnce) {
  // One group, two members, every node deals the partitions alike: {0, 2} and {1}.
  for (uint32_t via = 1; via <= 3; via++) {
    const auto members = group_members(via);
    ASSERT_EQ(members.size(), 2u) << "via node " << via;
    std::vector<uint32_t> dealt;
    for (const auto& [id, assigned] : members) {
      dealt.insert(dealt.end(), assigned.begin(), assigned.end());
    }
    std::sort(dealt.begin(), dealt.end());
    EXPECT_EQ(dealt, (std::vector<uint32_t>{0, 1, 2})) << "via node " << via;
  }
  // The partitions are owned by three different nodes, so both members read through links.
  EXPECT_EQ(std::set<uint32_t>({owner_of_[0], owner_of_[1], owner_of_[2]}).size(), 3u);
  constexpr int sent = 30;
  for (int i = 0; i < sent; i++) {
    ASSERT_TRUE(send(3, static_cast<uint32_t>(i) % partitions, "m" + std::to_string(i)).ok());
  }
  std::map<std::string, int> delivered;
  std::map<uint32_t, int> by_member;
  int total = 0;
  for (int round = 0; round < 40 && total < sent; round++) {
    for (const uint32_t member : {1u, 2u}) {
      const auto polled = member_poll(member, 4, 0us);
      ASSERT_TRUE(polled.ok()) << error_name(polled.error());
      for (const std::string& text : payloads_of(polled->messages())) {
        delivered[text]++;
        by_member[member]++;
        total++;
      }
    }
  }
  EXPECT_EQ(total, sent);
  EXPECT_EQ(delivered.size(), static_cast<size_t>(sent));
  for (const auto& [text, times] : delivered) EXPECT_EQ(times, 1) << text;
  EXPECT_EQ(by_member[1], 20);  // Partitions 0 and 2.
  EXPECT_EQ(by_member[2], 10);  // Partition 1.
  // Nothing is left: every offset was committed at its owner.
  for (const uint32_t member : {1u, 2u}) {
    for (int i = 0; i < 2; i++) EXPECT_EQ(member_poll(member, 10, 0us)->messages().count(), 0u);
  }
  // A member that disconnects leaves the group on every node.
  members_.erase(2);
  EXPECT_TRUE(wait_until([&] { return group_members(3).size() == 1; }, 10s));
}

TEST_F(ClusterGroups, ParkedMemberPollsAreWokenBySendsViaAThirdNode) {
  // Member 1 (via node 1) waits on partitions 0 and 2: one leg parked at each owner.
  const uint64_t parked_before = parked_now_total();
  auto first = std::async(std::launch::async, [&] { return member_poll(1, 10, 20s); });
  ASSERT_TRUE(wait_until([&] { return parked_now_total() == parked_before + 2; }, 10s));
  ASSERT_TRUE(send(3, 2, "for-member-1").ok());
  const auto woken = first.get();
  ASSERT_TRUE(woken.ok()) << error_name(woken.error());
  EXPECT_EQ(payloads_of(woken->messages()), std::vector<std::string>{"for-member-1"});
  EXPECT_EQ(woken->header().partition_id, 2u);
  // The other leg was cancelled at its owner: nothing stays parked.
  EXPECT_TRUE(wait_until([&] { return parked_now_total() == parked_before; }, 10s));
  // The auto-commit is stored at partition 2's owner, read back via node 3.
  const auto offset = clients_[3]->get_consumer_offset(
      {.consumer = {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(0)},
       .stream_id = Identifier::numeric(0),
       .topic_id = Identifier::numeric(0),
       .partition_id = 2});
  ASSERT_TRUE(offset.ok() && offset->has_value()) << error_name(offset.error());
  EXPECT_EQ((*offset)->stored_offset, 0u);
  // Member 2 (via node 2) waits on partition 1 alone, parked at its owner.
  const HarkdStats owner_before = *cluster_.node(owner_of_[1]).stats();
  auto second = std::async(std::launch::async, [&] { return member_poll(2, 10, 20s); });
  ASSERT_TRUE(wait_for_stats(cluster_.node(owner_of_[1]), [&](const HarkdStats& stats) {
    return stats.parked_now == owner_before.parked_now + 1;
  }));
  ASSERT_TRUE(send(3, 1, "for-member-2").ok());
  const auto also = second.get();
  ASSERT_TRUE(also.ok()) << error_name(also.error());
  EXPECT_EQ(payloads_of(also->messages()), std::vector<std::string>{"for-member-2"});
  // Member 1's next poll does not see its message again.
  EXPECT_EQ(member_poll(1, 10, 0us)->messages().count(), 0u);
  EXPECT_EQ(member_poll(1, 10, 0us)->messages().count(), 0u);
}

// A member whose client goes away while its legs are parked has them cancelled at every owner
// (their cancelled counters), and its leave reaches every node.
TEST_F(ClusterGroups, AMemberGoneAtTheEntryCancelsItsLegsAtEveryOwner) {
  members_.clear();  // Both leave: the next member is dealt all three partitions.
  for (const uint32_t via : {1u, 2u, 3u}) {
    ASSERT_TRUE(wait_until([&] { return group_members(via).empty(); }, 10s)) << via;
  }
  RawConnection client;
  ASSERT_TRUE(client.connect_and_login(cluster_.node(1).address()));
  const auto joined = client.exchange(request_frame(join()), 10s);
  ASSERT_TRUE(joined.has_value() && joined->status == 0);
  std::map<uint32_t, HarkdStats> before;
  for (uint32_t id = 1; id <= 3; id++) before[id] = *cluster_.node(id).stats();
  const uint64_t parked_before = parked_now_total();
  protocol::PollMessagesRequest poll = poll_request(0, 0, next_strategy(), 1, 20s, true);
  poll.consumer = {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(0)};
  poll.partition_id.reset();
  ASSERT_TRUE(client.send(request_frame(poll)));
  ASSERT_TRUE(wait_until([&] { return parked_now_total() == parked_before + 3; }, 10s));
  client.close();
  for (uint32_t id = 1; id <= 3; id++) {
    EXPECT_TRUE(wait_for_stats(cluster_.node(id),
                               [&](const HarkdStats& stats) {
                                 return stats.parked_now == before[id].parked_now &&
                                        stats.cancelled == before[id].cancelled + 1;
                               }))
        << "node " << id;
  }
  EXPECT_TRUE(wait_until([&] { return group_members(3).empty(); }, 10s));
}

TEST_F(ClusterGroups, ANodeThatDiesTakesItsMembersOutOfTheGroup) {
  ASSERT_EQ(group_members(1).size(), 2u);
  cluster_.kill(2);  // Member 2's connection never says goodbye: its node is gone.
  // Node 1 or 3 sees node 2's lease lapse and removes its member (journaled: each node applies
  // it in turn): member 1 gets every partition on both.
  for (const uint32_t via : {1u, 3u}) {
    ASSERT_TRUE(wait_until([&] { return group_members(via).size() == 1; }, 20s)) << via;
    EXPECT_EQ(group_members(via).begin()->second.size(), partitions) << via;
  }
}

}  // namespace
}  // namespace hark::test
