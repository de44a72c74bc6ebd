// Parked polls follow a moved partition to its new owner (docs/cluster.md §Moves), with three
// real harkd (tests/cluster/local_cluster.h). The move is committed as the controller commits
// one, by writing the assignment {B, epoch + 1} to etcd, with no data copied (the partition is
// empty). Parked at the old owner A when it moves: a poll through entry node C, a poll of a
// client connected to A itself, a WaitForMessages through C, and a poll through C whose
// deadline passes after the move. Each is routed again to B by the node holding its client
// (B's parked counter is the signal, never time); a send through C then wakes the first three
// with the message, none sees an error, and the fourth is answered empty at its own deadline,
// never extended. A consumer-group member's leg parked at A follows the move the same way.
// Label cluster (release stage only): one etcd, three harkd, a few seconds.
#include <chrono>
#include <future>
#include <map>

#include <gtest/gtest.h>

#include "hark/protocol/group_requests.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_gateway.h"
#include "hark/tests/e2e/e2e_support.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using protocol::Identifier;

constexpr uint32_t partitions = 3;

class HarkdMoves : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cluster_.start({.extra_args = single_replica_args}), "");  // Moves of factor 1.
    ASSERT_EQ(cluster_.connect_all(clients_), "");
    ASSERT_TRUE(cluster_.wait_for_all_members());
    ASSERT_EQ(cluster_.create_topic_everywhere(*clients_[1], partitions), "");
    // Three partitions over three nodes: one each. A owns p, B is where it moves, C the entry.
    for (uint32_t q = 0; q < partitions; q++) {
      if (cluster_.owner_of(0, 0, q) == a) p_ = q;
    }
    ASSERT_EQ(cluster_.owner_of(0, 0, p_), a);
  }

  void TearDown() override { EXPECT_EQ(cluster_.stop_all(), ""); }

  // The controller's commit of a move of p_ to `to`, as node_agent.cc writes it (without the
  // move key and the copy: the partition holds nothing).
  void commit_move(uint32_t to) {
    auto etcd = server::cluster::EtcdGateway::create({.endpoints = {cluster_.etcd().url()},
                                                      .user = EtcdProcess::user,
                                                      .password = EtcdProcess::password});
    ASSERT_TRUE(etcd.ok());
    const std::string key = "/hark/e2e/assignments/0/0/" + std::to_string(p_);
    const auto range = (*etcd)->range(key, false);
    ASSERT_TRUE(range.ok() && range->kvs.size() == 1);
    auto assignment = server::cluster::decode_assignment(range->kvs[0].value);
    ASSERT_TRUE(assignment.has_value());
    *assignment = server::cluster::single_replica(to, assignment->epoch + 1, assignment->by);
    ASSERT_TRUE((*etcd)->put(key, server::cluster::encode_assignment(*assignment), 0).ok());
  }

  uint64_t parked_now(uint32_t id) { return cluster_.node(id).stats()->parked_now; }

  static constexpr uint32_t a = 1;
  static constexpr uint32_t b = 2;
  static constexpr uint32_t c = 3;
  LocalCluster cluster_;
  std::map<uint32_t, std::unique_ptr<client::Client>> clients_;
  uint32_t p_ = 0;
};

TEST_F(HarkdMoves, ParkedPollsAndNotificationsFollowTheMoveAndAreWokenAtTheNewOwner) {
  const uint64_t parked_a = parked_now(a);
  const uint64_t parked_b = parked_now(b);
  AsyncPoll via_c(cluster_.node(c).address(), poll_request(1, p_, offset_strategy(0), 10, 20s));
  AsyncPoll at_a(cluster_.node(a).address(), poll_request(2, p_, offset_strategy(0), 10, 20s));
  auto notified = std::async(std::launch::async, [&] {
    return clients_[c]->wait_for_messages({.consumer = {.id = Identifier::numeric(5)},
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = p_,
                                           .strategy = offset_strategy(0),
                                           .wait_timeout_us = 20'000'000});
  });
  // Offset 5: the one message sent below does not answer it; its deadline does.
  constexpr auto short_wait = 4s;
  AsyncPoll expiring(cluster_.node(c).address(),
                     poll_request(3, p_, offset_strategy(5), 10, short_wait));
  ASSERT_TRUE(wait_for_stats(
      cluster_.node(a), [&](const HarkdStats& stats) { return stats.parked_now == parked_a + 4; }));

  commit_move(b);
  // All four are parked at B (the entry nodes routed them again), none at A any more.
  ASSERT_TRUE(wait_for_stats(
      cluster_.node(b), [&](const HarkdStats& stats) { return stats.parked_now == parked_b + 4; }))
      << cluster_.node(c).stderr_tail() << cluster_.node(a).stderr_tail();
  EXPECT_EQ(parked_now(a), parked_a);
  EXPECT_FALSE(via_c.answered());
  EXPECT_FALSE(at_a.answered());
  EXPECT_GE(cluster_.node(a).stats()->forwarded_not_hosted, 3u);  // C's two polls and its wait.
  EXPECT_GE(cluster_.node(c).stats()->rerouted, 3u);
  EXPECT_GE(cluster_.node(a).stats()->rerouted, 1u);  // A's own client's poll.

  // A connection of its own: clients_[c]'s is busy with the WaitForMessages.
  const std::unique_ptr<client::Client> sender = cluster_.connect(c);
  ASSERT_NE(sender, nullptr);
  ASSERT_TRUE(send_to_partition(*sender, p_, "moved").ok());
  for (AsyncPoll* poll : {&via_c, &at_a}) {
    const PollOutcome& outcome = poll->wait(at_once_bound);
    ASSERT_TRUE(outcome.answered) << (poll == &via_c ? "via C" : "at A");
    EXPECT_EQ(outcome.status, 0u) << (poll == &via_c ? "via C" : "at A");
    EXPECT_EQ(outcome.payloads, std::vector<std::string>{"moved"})
        << (poll == &via_c ? "via C" : "at A");
  }
  const auto waited = notified.get();
  ASSERT_TRUE(waited.ok()) << error_name(waited.error());
  ASSERT_EQ(waited->partitions.size(), 1u);
  EXPECT_EQ(waited->partitions[0].next_offset, 1u);

  // Answered empty at its own deadline: not before it, and not extended by the move.
  const PollOutcome& expired = expiring.wait(short_wait + at_once_bound);
  ASSERT_TRUE(expired.answered);
  EXPECT_EQ(expired.status, 0u);
  EXPECT_TRUE(expired.payloads.empty());
  const auto took = expired.answered_at - expiring.sent_at();
  EXPECT_GE(took, short_wait - 50ms);
  EXPECT_LE(took, short_wait + late_bound());
}

// The lone member of a group, joined via C, is dealt all three partitions: its poll keeps one
// leg parked at each owner. When A's partition moves to B, A answers its leg "not hosted" and C
// routes the member's poll again whole: two legs at B, one at C, none at A; a send to the moved
// partition answers it.
TEST_F(HarkdMoves, AMembersLegAtTheOldOwnerFollowsTheMove) {
  ASSERT_TRUE(clients_[a]
                  ->create_consumer_group({.stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .name = "g"})
                  .ok());
  RawConnection member;
  ASSERT_TRUE(member.connect_and_login(cluster_.node(c).address()));
  const auto joined = member.exchange(
      request_frame(protocol::JoinConsumerGroupRequest{.stream_id = Identifier::numeric(0),
                                                       .topic_id = Identifier::numeric(0),
                                                       .group_id = Identifier::numeric(0)}));
  ASSERT_TRUE(joined.has_value() && joined->status == 0);
  std::map<uint32_t, uint64_t> before;
  for (uint32_t id = 1; id <= 3; id++) before[id] = parked_now(id);
  protocol::PollMessagesRequest poll = poll_request(0, 0, next_strategy(), 1, 20s, true);
  poll.consumer = {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(0)};
  poll.partition_id.reset();
  AsyncPoll polled(member, poll);
  for (uint32_t id = 1; id <= 3; id++) {
    ASSERT_TRUE(wait_for_stats(cluster_.node(id), [&](const HarkdStats& stats) {
      return stats.parked_now == before[id] + 1;
    })) << id;
  }

  commit_move(b);
  ASSERT_TRUE(wait_for_stats(cluster_.node(b), [&](const HarkdStats& stats) {
    return stats.parked_now == before[b] + 2;
  })) << cluster_.node(c).stderr_tail();
  EXPECT_EQ(parked_now(a), before[a]);
  EXPECT_FALSE(polled.answered());
  EXPECT_GE(cluster_.node(c).stats()->rerouted, 1u);

  ASSERT_TRUE(send_to_partition(*clients_[a], p_, "to-member").ok());
  const PollOutcome& outcome = polled.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.payloads, std::vector<std::string>{"to-member"});
  EXPECT_EQ(outcome.header.partition_id, p_);
}

}  // namespace
}  // namespace hark::test
