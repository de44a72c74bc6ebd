// Cluster metadata in etcd with real processes (LocalCluster: a real etcd with auth and three
// harkd in cluster mode): a stream and topic created through node 1 are usable through nodes
// 2 and 3 at once, with no wait in between (read-your-writes: a command is answered once every
// live node applied it; docs/cluster.md §Metadata); a node killed while streams are created
// catches up from etcd when it returns; a delete through one node is seen by the others at
// once. Label cluster (release stage only): one etcd, three harkd, seconds each.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/support/wait_until.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using protocol::Identifier;

Identifier named(const std::string& name) { return *Identifier::named(name); }

protocol::CreateTopicRequest topic_request(const std::string& stream, uint32_t partitions) {
  return {.stream_id = named(stream), .partitions_count = partitions, .name = "t"};
}

Status send_one(client::Client& client, const std::string& stream, std::string_view payload) {
  const protocol::Bytes bytes(reinterpret_cast<const std::byte*>(payload.data()),
                              reinterpret_cast<const std::byte*>(payload.data()) + payload.size());
  const protocol::OutgoingMessage message{.payload = bytes};
  return client.send_messages({.stream_id = named(stream),
                               .topic_id = named("t"),
                               .partitioning = protocol::Partitioning::partition(0)},
                              {&message, 1});
}

Result<client::PolledMessages> poll_all(client::Client& client, const std::string& stream) {
  return client.poll_messages(
      {.consumer = {.kind = protocol::ConsumerKind::consumer, .id = Identifier::numeric(1)},
       .stream_id = named(stream),
       .topic_id = named("t"),
       .partition_id = 0,
       .strategy = {.kind = protocol::PollingKind::offset, .value = 0},
       .count = 10,
       .auto_commit = false,
       .wait_timeout_us = std::nullopt});
}

bool stream_exists(client::Client& client, const std::string& stream) {
  const auto found = client.get_stream({.stream_id = named(stream)});
  return found.ok() && found->has_value();
}

class HarkdMetadata : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cluster_.start({}), "");
    for (uint32_t id = 1; id <= 3; id++) {
      clients_[id] = cluster_.connect(id);
      ASSERT_NE(clients_[id], nullptr);
    }
    // Every node sees all three, so every command waits for all three to apply it.
    ASSERT_TRUE(wait_until([&] {
      return members(*clients_[1]) == 3 && members(*clients_[2]) == 3 && members(*clients_[3]) == 3;
    }));
  }

  client::Client& node(uint32_t id) { return *clients_[id]; }

  LocalCluster cluster_;
  std::unique_ptr<client::Client> clients_[4];
};

TEST_F(HarkdMetadata, CreatedThroughOneNodeIsUsableThroughTheOthersAtOnce) {
  for (int i = 0; i < 50; i++) {
    const std::string stream = "s" + std::to_string(i);
    const auto created = node(1).create_stream({.name = stream});
    ASSERT_TRUE(created.ok()) << i << ": " << error_name(created.error());
    ASSERT_TRUE(node(1).create_topic(topic_request(stream, 1)).ok()) << i;
    // No wait: node 2 and 3 applied both before node 1 answered.
    const Status sent = send_one(node(2), stream, "m" + std::to_string(i));
    ASSERT_TRUE(sent.ok()) << i << ": " << error_name(sent.error());
    const auto polled = poll_all(node(3), stream);
    ASSERT_TRUE(polled.ok()) << i << ": " << error_name(polled.error());
    EXPECT_TRUE(stream_exists(node(2), stream)) << i;
  }
  // The same name through another node gives the error a single node gives.
  const auto again = node(3).create_stream({.name = "s7"});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), Error::stream_name_already_exists);
  const auto streams = node(2).get_streams();
  ASSERT_TRUE(streams.ok());
  EXPECT_EQ(streams->streams.size(), 50u);
}

TEST_F(HarkdMetadata, AKilledNodeCatchesUpOnWhatWasCreatedWhileItWasDown) {
  ASSERT_TRUE(node(1).create_stream({.name = "before"}).ok());
  cluster_.kill(3);
  clients_[3].reset();
  // Node 3 still counts until its lease lapses: the first command waits at most that long.
  for (const char* name : {"during-1", "during-2", "during-3"}) {
    const auto created = node(1).create_stream({.name = name});
    ASSERT_TRUE(created.ok()) << name << ": " << error_name(created.error());
  }
  ASSERT_TRUE(node(2).delete_stream({.stream_id = named("before")}).ok());
  ASSERT_EQ(cluster_.restart(3), "");
  clients_[3] = cluster_.connect(3);
  ASSERT_NE(clients_[3], nullptr);
  // It replays its metadata.log, then catches up from etcd, in order: the delete came last.
  EXPECT_TRUE(wait_until([&] { return !stream_exists(node(3), "before"); }))
      << cluster_.node(3).stderr_tail();
  for (const char* name : {"during-1", "during-2", "during-3"}) {
    EXPECT_TRUE(stream_exists(node(3), name)) << name;
  }
  // Back in the cluster, it writes the next entry itself.
  const auto created = node(3).create_stream({.name = "after"});
  ASSERT_TRUE(created.ok()) << error_name(created.error()) << cluster_.node(3).stderr_tail();
  EXPECT_TRUE(stream_exists(node(1), "after"));
  EXPECT_TRUE(stream_exists(node(2), "after"));
}

TEST_F(HarkdMetadata, ADeleteThroughOneNodeIsSeenByTheOthersAtOnce) {
  ASSERT_TRUE(node(1).create_stream({.name = "doomed"}).ok());
  ASSERT_TRUE(node(1).create_topic(topic_request("doomed", 2)).ok());
  ASSERT_TRUE(send_one(node(3), "doomed", "x").ok());
  ASSERT_TRUE(node(2).delete_topic({.stream_id = named("doomed"), .topic_id = named("t")}).ok());
  for (uint32_t id : {1u, 3u}) {
    const auto topic = node(id).get_topic({.stream_id = named("doomed"), .topic_id = named("t")});
    ASSERT_TRUE(topic.ok()) << id;
    EXPECT_FALSE(topic->has_value()) << id;
  }
  ASSERT_TRUE(node(3).delete_stream({.stream_id = named("doomed")}).ok());
  EXPECT_FALSE(stream_exists(node(1), "doomed"));
  EXPECT_FALSE(stream_exists(node(2), "doomed"));
}

// A topic gets the effective replication factor (docs/cluster.md §Replication factor): an SDK
// asking 1 gets the cluster's minimum, 3, reported by GetTopic through any node and kept by an
// UpdateTopic; its partitions' replicas are on three distinct nodes, led by one each, only the
// leader in sync; a factor above the live nodes is refused with 2018; sends and polls are
// served by the leader as for factor 1.
TEST_F(HarkdMetadata, ATopicGetsTheEffectiveReplicationFactorWithReplicasOnDistinctNodes) {
  ASSERT_TRUE(node(1).create_stream({.name = "r"}).ok());
  ASSERT_TRUE(node(1).create_topic(topic_request("r", 3)).ok());  // replication_factor 1.
  const auto ids = Identifier::numeric(0);
  for (uint32_t id = 1; id <= 3; id++) {
    const auto topic = node(id).get_topic({.stream_id = named("r"), .topic_id = named("t")});
    ASSERT_TRUE(topic.ok() && topic->has_value()) << id;
    EXPECT_EQ((*topic)->topic.replication_factor, 3) << id;
  }
  std::set<uint32_t> leaders;
  for (uint32_t p = 0; p < 3; p++) {
    const auto assignment = cluster_.assignment_of(0, 0, p);
    ASSERT_TRUE(assignment.has_value()) << p;
    EXPECT_EQ(std::set<uint32_t>(assignment->replicas.begin(), assignment->replicas.end()),
              (std::set<uint32_t>{1, 2, 3}));
    EXPECT_TRUE(assignment->in_sync(assignment->node));  // Followers join as they catch up.
    leaders.insert(assignment->node);
  }
  EXPECT_EQ(leaders.size(), 3u);
  const auto refused = node(3).create_topic(
      {.stream_id = named("r"), .partitions_count = 1, .replication_factor = 4, .name = "big"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), Error::invalid_replication_factor);
  ASSERT_TRUE(
      node(2)
          .update_topic(
              {.stream_id = named("r"), .topic_id = ids, .replication_factor = 1, .name = "t"})
          .ok());
  const auto updated = node(1).get_topic({.stream_id = named("r"), .topic_id = named("t")});
  ASSERT_TRUE(updated.ok() && updated->has_value());
  EXPECT_EQ((*updated)->topic.replication_factor, 3);
  ASSERT_TRUE(send_one(node(3), "r", "replicated").ok());
  const auto polled = poll_all(node(1), "r");
  ASSERT_TRUE(polled.ok()) << error_name(polled.error());
  EXPECT_EQ(polled->messages().count(), 1u);
}

}  // namespace
}  // namespace hark::test
