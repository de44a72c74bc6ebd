// Notifications without a partition over three real harkd (docs/cluster.md §Notifications over
// several nodes): a consumer's WaitForMessages on the whole topic, sent to node 1, parks one leg
// at the owner of each partition (one per node) and is woken by a send to a partition node 1
// does not own; the legs left are cancelled at their owners. Without a wait it answers at once
// with another node's partition that has messages. A lag watch (a total over the partitions)
// whose partitions live on several nodes is refused with FeatureUnavailable (5); naming a
// partition owned elsewhere, it is forwarded and answered. Label cluster (release stage only).
#include <future>
#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "hark/protocol/notify_requests.h"
#include "hark/protocol/notify_responses.h"
#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/wait_until.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using protocol::Identifier;

constexpr uint32_t partitions = 3;
constexpr uint32_t entry = 1;  // The node every notification is sent to.

protocol::Consumer consumer(uint32_t id) {
  return {.kind = protocol::ConsumerKind::consumer, .id = Identifier::numeric(id)};
}

protocol::WaitForMessagesRequest whole_topic(uint64_t wait_us) {
  return {.consumer = consumer(7),
          .stream_id = Identifier::numeric(0),
          .topic_id = Identifier::numeric(0),
          .partition_id = std::nullopt,
          .strategy = next_strategy(),
          .wait_timeout_us = wait_us,
          .min_messages = 1};
}

protocol::WaitForLagRequest lag_above_one(std::optional<uint32_t> partition) {
  return {.consumer = consumer(7),
          .stream_id = Identifier::numeric(0),
          .topic_id = Identifier::numeric(0),
          .partition_id = partition,
          .wait_timeout_us = 0,
          .watch = protocol::LagWatch::above,
          .threshold = 1};
}

class ClusterNotify : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cluster_.start({}), "");
    ASSERT_EQ(cluster_.connect_all(clients_), "");
    ASSERT_TRUE(cluster_.wait_for_all_members());
    ASSERT_EQ(cluster_.create_topic_everywhere(*clients_[1], partitions), "");
    std::set<uint32_t> owners;
    for (uint32_t p = 0; p < partitions; p++) {
      owner_of_[p] = cluster_.owner_of(0, 0, p);
      owners.insert(owner_of_[p]);
      if (owner_of_[p] != entry) remote_ = p;
    }
    ASSERT_EQ(owners.size(), 3u) << "the three partitions should be on three nodes";
  }

  uint64_t parked_now(uint32_t id) { return cluster_.node(id).stats()->parked_now; }

  LocalCluster cluster_;
  std::map<uint32_t, std::unique_ptr<client::Client>> clients_;
  std::map<uint32_t, uint32_t> owner_of_;
  uint32_t remote_ = 0;  // A partition the entry node does not own.
};

TEST_F(ClusterNotify, AWholeTopicWatchIsWokenByASendToAPartitionOfAnotherNode) {
  std::map<uint32_t, uint64_t> parked;
  for (uint32_t id = 1; id <= 3; id++) parked[id] = parked_now(id);
  auto notified = std::async(std::launch::async, [&] {
    return clients_[entry]->wait_for_messages(whole_topic(20'000'000));
  });
  // One leg parked at each partition's owner: every node, the entry's own over its link.
  for (uint32_t id = 1; id <= 3; id++) {
    ASSERT_TRUE(
        wait_for_stats(cluster_.node(id),
                       [&](const HarkdStats& stats) { return stats.parked_now == parked[id] + 1; }))
        << "node " << id << " has no leg parked";
  }
  const uint32_t via = owner_of_[remote_] == 2 ? 3 : 2;  // Neither the entry nor the owner.
  ASSERT_TRUE(send_to_partition(*clients_[via], remote_, "wake").ok());
  ASSERT_EQ(notified.wait_for(signal_timeout), std::future_status::ready);
  const auto answer = notified.get();
  ASSERT_TRUE(answer.ok()) << error_name(answer.error());
  ASSERT_EQ(answer->partitions.size(), 1u);
  EXPECT_EQ(answer->partitions[0].partition_id, remote_);
  EXPECT_EQ(answer->partitions[0].next_offset, 1u);
  // The other legs were cancelled at their owners.
  for (uint32_t id = 1; id <= 3; id++) {
    EXPECT_TRUE(wait_for_stats(
        cluster_.node(id), [&](const HarkdStats& stats) { return stats.parked_now == parked[id]; }))
        << "node " << id << " kept a leg";
  }
  // Without a wait: answered at once with the partition that has a message.
  const auto at_once = clients_[entry]->wait_for_messages(whole_topic(0));
  ASSERT_TRUE(at_once.ok()) << error_name(at_once.error());
  ASSERT_EQ(at_once->partitions.size(), 1u);
  EXPECT_EQ(at_once->partitions[0].partition_id, remote_);
}

TEST_F(ClusterNotify, ALagTotalOverSeveralNodesIsRefusedAndOnePartitionsLagIsForwarded) {
  ASSERT_TRUE(send_to_partition(*clients_[entry], remote_, "lagging").ok());
  const auto total = clients_[entry]->wait_for_lag(lag_above_one(std::nullopt));
  ASSERT_FALSE(total.ok());
  EXPECT_EQ(total.error(), Error::feature_unavailable);
  // The log line is written by harkd's log thread: waited for, not read once.
  EXPECT_TRUE(wait_until([&] {
    return cluster_.node(entry).stderr_tail(2000).find("over partitions of several nodes") !=
           std::string::npos;
  })) << cluster_.node(entry).stderr_tail();
  const auto one = clients_[entry]->wait_for_lag(lag_above_one(remote_));
  ASSERT_TRUE(one.ok()) << error_name(one.error());
  ASSERT_TRUE(one->has_value());  // Nullopt: answered empty, the watch did not hold.
  EXPECT_EQ((*one)->total_lag, 1u);
}

}  // namespace
}  // namespace hark::test
