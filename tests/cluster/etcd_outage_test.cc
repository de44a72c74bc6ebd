// etcd killed and restarted under a three-node cluster (tests/cluster/local_cluster.h): while it
// is away every node keeps serving what is assigned (sends through any node, forwarded or not,
// are stored; a poll parked through one node is woken by a send through another), and a
// metadata command is refused with FeatureUnavailable (5), never left hanging; once etcd is
// back, metadata commands work again and read-your-writes holds (docs/cluster.md §Metadata,
// "etcd unreachable"). Label cluster (release stage only): one etcd, three harkd, seconds.
#include <chrono>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/wait_until.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using protocol::Identifier;

constexpr uint32_t partitions = 3;

Result<std::vector<std::string>> read(client::Client& client, uint32_t partition, uint64_t from = 0,
                                      std::chrono::microseconds wait = 0us) {
  auto polled = client.poll_messages(poll_request(1, partition, offset_strategy(from), 10, wait));
  if (!polled.ok()) return polled.error();
  return payloads_of(polled->messages());
}

TEST(HarkdEtcdOutage, NodesKeepServingWhatTheyOwnAndRefuseMetadataUntilEtcdReturns) {
  LocalCluster cluster;
  ASSERT_EQ(cluster.start({}), "");
  std::unique_ptr<client::Client> clients[4];
  for (uint32_t id = 1; id <= 3; id++) {
    clients[id] = cluster.connect(id);
    ASSERT_NE(clients[id], nullptr) << id;
  }
  ASSERT_TRUE(clients[1]->create_stream({.name = "s"}).ok());
  protocol::CreateTopicRequest topic;
  topic.stream_id = Identifier::numeric(0);
  topic.partitions_count = partitions;
  topic.name = "t";
  ASSERT_TRUE(clients[1]->create_topic(topic).ok());
  for (uint32_t id = 1; id <= 3; id++) {
    ASSERT_TRUE(wait_for_stats(cluster.node(id), [](const HarkdStats& stats) {
      return stats.view_assignments == partitions && stats.view_nodes == 3;
    })) << cluster.node(id).stderr_tail();
  }

  cluster.etcd().kill();
  // Every partition, whichever node owns it, takes a send through node 2 and is read through
  // node 3: the three owners are three nodes, so two of the sends and reads are forwarded.
  for (uint32_t p = 0; p < partitions; p++) {
    const Status sent = send_to_partition(*clients[2], p, "during-" + std::to_string(p));
    ASSERT_TRUE(sent.ok()) << p << ": " << error_name(sent.error());
    const auto read_back = read(*clients[3], p);
    ASSERT_TRUE(read_back.ok()) << p << ": " << error_name(read_back.error());
    EXPECT_EQ(*read_back, std::vector<std::string>{"during-" + std::to_string(p)});
  }
  // A poll parked through node 1 is woken by a send through node 3 (not by its deadline).
  auto parked = std::async(std::launch::async, [&] { return read(*clients[1], 0, 1, 30s); });
  ASSERT_TRUE(wait_until([&] {
    uint64_t now = 0;
    for (uint32_t id = 1; id <= 3; id++) now += cluster.node(id).stats()->parked_now;
    return now >= 1;
  }));
  ASSERT_TRUE(send_to_partition(*clients[3], 0, "woken").ok());
  ASSERT_EQ(parked.wait_for(at_once_bound), std::future_status::ready);
  const auto woken = parked.get();
  ASSERT_TRUE(woken.ok()) << error_name(woken.error());
  EXPECT_EQ(*woken, std::vector<std::string>{"woken"});
  // Metadata needs etcd: refused with a clear code, through any node.
  for (uint32_t id = 1; id <= 3; id++) {
    const auto created = clients[id]->create_stream({.name = "while-away-" + std::to_string(id)});
    ASSERT_FALSE(created.ok()) << id;
    EXPECT_EQ(created.error(), Error::feature_unavailable)
        << id << ": " << error_name(created.error());
  }

  ASSERT_EQ(cluster.etcd().restart(), "");
  // Back: the next metadata command is accepted once the node's agent reached etcd again, and
  // is usable through the other nodes at once (read-your-writes).
  // (A try whose answer was lost may have written it: the name then exists.)
  ASSERT_TRUE(wait_until([&] {
    const auto created = clients[2]->create_stream({.name = "after"});
    return created.ok() || created.error() == Error::stream_name_already_exists;
  })) << cluster.node(2).stderr_tail();
  for (const uint32_t id : {1u, 3u}) {
    const auto found = clients[id]->get_stream({.stream_id = *Identifier::named("after")});
    ASSERT_TRUE(found.ok() && found->has_value()) << id << cluster.node(id).stderr_tail();
  }
  for (uint32_t id = 1; id <= 3; id++) {
    const auto refused = clients[id]->get_stream(
        {.stream_id = *Identifier::named("while-away-" + std::to_string(id))});
    ASSERT_TRUE(refused.ok()) << id;
    EXPECT_FALSE(refused->has_value()) << id << ": a refused command left a stream behind";
  }
  // Data sent while etcd was away is still there, through every node.
  for (uint32_t id = 1; id <= 3; id++) {
    const auto read_back = read(*clients[id], 1);
    ASSERT_TRUE(read_back.ok()) << id;
    EXPECT_EQ(*read_back, std::vector<std::string>{"during-1"}) << id;
  }
}

}  // namespace
}  // namespace hark::test
