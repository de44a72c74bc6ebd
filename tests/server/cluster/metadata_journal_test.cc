// Cluster metadata over FakeEtcd (server/cluster/etcd_journal.h), deterministic: two or three
// in-process nodes, each a real core::Broker journaling through an EtcdJournal, with its
// NodeAgent and MetadataSync stepped by the test (the coordination thread's loop, by hand, on
// a ManualClock). Covered: creates racing for one entry (one wins, the other is checked again
// against the newer catalog: a taken name gives the single node's error, another name goes in
// as the next entry); a command answered only once every live node applied it; a restart that
// replays metadata.log and then catches up from etcd; etcd unreachable (refused with
// FeatureUnavailable, reads answered from the last catalog); a topic's partition requests
// written with its entry and removed with its delete, their assignments kept; a member joining
// and leaving many times keeps every node's metadata.log under a bound (compaction) and a
// restart from the compacted log has the same group.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/broker/blocking.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_journal.h"
#include "hark/server/cluster/fake_etcd.h"
#include "hark/tests/support/wait_until.h"

namespace hark::server::cluster {
namespace {

using test::wait_until;

// An operation submitted without blocking, so the test can step the nodes meanwhile.
template <typename Op>
class Async final : public Op {
 public:
  bool finished() const { return finished_.load(); }

 private:
  void done() override { finished_.store(true); }
  std::atomic<bool> finished_{false};
};

struct Node {
  uint32_t id = 0;
  std::string directory;
  JournalLink link;
  EtcdJournalFactory factory{link};
  std::unique_ptr<BrokerEntrySink> sink;
  std::unique_ptr<Coordinator> client;
  std::unique_ptr<NodeAgent> agent;
  std::unique_ptr<MetadataSync> sync;
  std::unique_ptr<core::Broker> broker;
};

class MetadataJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("hark_metadata_journal_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override {
    for (auto& node : nodes_) stop(*node);
    std::filesystem::remove_all(root_);
  }

  Node& start(uint32_t id) {
    if (nodes_.size() < id) nodes_.resize(id);
    auto& slot = nodes_[id - 1];
    slot = std::make_unique<Node>();
    Node& node = *slot;
    node.id = id;
    node.directory = (root_ / ("node" + std::to_string(id))).string();
    core::BrokerOptions options;
    options.data_directory = node.directory;
    options.shards_count = 2;
    options.journal = &node.factory;
    options.metadata_snapshot_entries = snapshot_entries_;
    node.client = etcd_.client();
    // As harkd's main: a node behind etcd's trimmed journal starts from its snapshot.
    if (catch_up_) {
      EXPECT_TRUE(catch_up_from_snapshot(*node.client, Keys("test"), node.directory).ok());
    }
    auto broker = core::Broker::start(options);
    EXPECT_TRUE(broker.ok());
    node.broker = std::move(broker).value();
    node.agent = std::make_unique<NodeAgent>(
        *node.client, clock_,
        AgentOptions{.cluster = "test",
                     .self = {.id = id, .client_address = "a", .link_address = "b", .shards = 2},
                     .lease_ttl_seconds = 5});
    node.sink = std::make_unique<BrokerEntrySink>(*node.broker);
    node.sync = std::make_unique<MetadataSync>(
        node.link, *node.sink,
        MetadataSyncOptions{
            .self = id, .keep_entries = keep_entries_, .ack_timeout = std::chrono::seconds(5)});
    return node;
  }

  void stop(Node& node) {
    if (!node.broker) return;
    node.sync->stop();
    (void)node.agent->leave();
    node.broker->stop();
    node.broker.reset();
  }

  Node& node(uint32_t id) { return *nodes_.at(id - 1); }

  // One pass of the coordination loop on each running node in `ids` (all when empty).
  void step(std::initializer_list<uint32_t> ids = {}) {
    for (auto& node : nodes_) {
      if (!node || !node->broker) continue;
      if (ids.size() != 0 && std::find(ids.begin(), ids.end(), node->id) == ids.end()) continue;
      const bool synced = node->agent->step(Duration(0)).ok();
      node->sync->step(*node->client, *node->agent, clock_.monotonic_now(), synced);
    }
  }

  // Steps every node until `op` is answered (shards run on their own threads meanwhile).
  template <typename Op>
  bool settle(const Async<Op>& op) {
    return wait_until([&] {
      step();
      return op.finished();
    });
  }

  template <typename Op>
  Status run(uint32_t id, Async<Op>& op) {
    node(id).broker->submit(op);
    EXPECT_TRUE(settle(op));
    return op.status();
  }

  // Starts nodes 1 and 2 and submits `on_1` to node 1 and `on_2` to node 2, each built as
  // entry 1 on the same (empty) catalog: returns once both wait in their links, before either
  // reached etcd.
  void race_for_entry_one(Async<core::CreateStream>& on_1, Async<core::CreateStream>& on_2) {
    start(1);
    start(2);
    step();
    step();
    node(1).broker->submit(on_1);
    node(2).broker->submit(on_2);
    ASSERT_TRUE(
        wait_until([&] { return node(1).link.pending() == 1 && node(2).link.pending() == 1; }));
  }

  Status create_stream(uint32_t id, const std::string& name) {
    Async<core::CreateStream> create;
    create.name = name;
    return run(id, create);
  }

  // Via node `id`: stream "s" (id 0), its topic "t" of three partitions and its consumer group
  // "g" (ids 0); the status of the first that failed.
  Status create_group_topic(uint32_t id) {
    HARK_TRY(create_stream(id, "s"));
    Async<core::CreateTopic> topic;
    topic.stream = core::NameOrId::id(0);
    topic.name = "t";
    topic.settings.partitions_count = 3;
    HARK_TRY(run(id, topic));
    Async<core::CreateConsumerGroup> group;
    group.stream = group.topic = core::NameOrId::id(0);
    group.name = "g";
    return run(id, group);
  }

  std::vector<core::StreamInfo> streams(uint32_t id) {
    core::Blocking<core::GetStreams> get;
    EXPECT_TRUE(get.call(*node(id).broker).ok());
    return get.streams;
  }

  bool has_key(const std::string& key) { return value_of(key).has_value(); }
  std::optional<std::string> value_of(const std::string& key) {
    auto client = etcd_.client();
    const auto read = client->range(key, false);
    if (!read.ok() || read->kvs.empty()) return std::nullopt;
    return read->kvs[0].value;
  }

  uint64_t snapshot_entries_ = 0;  // BrokerOptions::metadata_snapshot_entries; 0: never.
  uint64_t keep_entries_ = 1000;   // MetadataSyncOptions::keep_entries.
  bool catch_up_ = true;           // start() loads etcd's snapshot when behind, as harkd does.
  ManualClock clock_;
  FakeEtcd etcd_{clock_};
  std::filesystem::path root_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

TEST_F(MetadataJournalTest, RacingCreatesOneWinsAndTheOtherIsCheckedAgainstTheNewerCatalog) {
  Async<core::CreateStream> first;
  first.name = "taken";
  Async<core::CreateStream> second;
  second.name = "taken";
  ASSERT_NO_FATAL_FAILURE(race_for_entry_one(first, second));
  Async<core::CreateStream> third;
  third.name = "other";
  node(2).broker->submit(third);  // Queued behind `second`.
  ASSERT_TRUE(settle(first));
  ASSERT_TRUE(settle(second));
  ASSERT_TRUE(settle(third));
  // Node 1 stepped first and won entry 1; node 2 applied it and then refused its own command
  // as one node would.
  EXPECT_TRUE(first.status().ok());
  EXPECT_EQ(second.status().error(), Error::stream_name_already_exists);
  EXPECT_TRUE(third.status().ok());
  EXPECT_TRUE(has_key("/hark/test/meta/00000000000000000001"));
  EXPECT_TRUE(has_key("/hark/test/meta/00000000000000000002"));
  EXPECT_FALSE(has_key("/hark/test/meta/00000000000000000003"));
  const auto one = streams(1);
  const auto two = streams(2);
  ASSERT_EQ(one.size(), 2u);
  ASSERT_EQ(two.size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(one[i].id, two[i].id);
    EXPECT_EQ(one[i].name, two[i].name);
    EXPECT_EQ(one[i].created_at, two[i].created_at);
  }
}

// A command whose entry another node took waits for that entry; once the node stops, no entry
// comes any more, and the command fails instead of holding the shutdown (it used to stay in
// flight until the drain bound, and harkd left its connection behind).
TEST_F(MetadataJournalTest, ACommandWaitingForAnEntryTakenElsewhereFailsWhenTheNodeStops) {
  Async<core::CreateStream> first;
  first.name = "one";
  Async<core::CreateStream> second;
  second.name = "two";
  ASSERT_NO_FATAL_FAILURE(race_for_entry_one(first, second));
  // Node 1 wins entry 1 (its answer waits for node 2 to apply it).
  ASSERT_TRUE(wait_until([&] {
    step({1});
    return has_key("/hark/test/meta/00000000000000000001");
  }));
  // Node 2's sync alone: its append finds entry 1 taken, and its mirror (its agent did not
  // step) cannot deliver entry 1, so the command waits for it.
  node(2).sync->step(*node(2).client, *node(2).agent, clock_.monotonic_now(), true);
  for (int i = 0; i < 20; i++) step({1});
  EXPECT_FALSE(second.finished());
  stop(node(2));
  ASSERT_TRUE(second.finished());
  EXPECT_EQ(second.status().error(), Error::feature_unavailable);
  // Node 1's command is answered once node 2, which left, no longer counts.
  ASSERT_TRUE(settle(first));
  EXPECT_TRUE(first.status().ok());
}

TEST_F(MetadataJournalTest, ACommandIsAnsweredOnlyOnceEveryLiveNodeAppliedIt) {
  start(1);
  start(2);
  step();
  step();
  Async<core::CreateStream> create;
  create.name = "s";
  node(1).broker->submit(create);
  // Only node 1 steps: its entry is in etcd and applied there, but node 2 has not applied it.
  ASSERT_TRUE(wait_until([&] {
    step({1});
    return has_key("/hark/test/applied/1");
  }));
  for (int i = 0; i < 20; i++) step({1});
  EXPECT_FALSE(create.finished());
  EXPECT_EQ(streams(2).size(), 0u);
  // Node 2 steps: it applies the entry, says so, and node 1 answers.
  ASSERT_TRUE(settle(create));
  EXPECT_TRUE(create.status().ok());
  EXPECT_EQ(streams(2).size(), 1u);
}

TEST_F(MetadataJournalTest, ARestartReplaysItsMetadataLogThenCatchesUpFromEtcd) {
  start(1);
  start(2);
  step();
  step();
  ASSERT_TRUE(create_stream(1, "kept").ok());
  stop(node(2));
  ASSERT_TRUE(create_stream(1, "missed").ok());  // Node 2 left: nobody to wait for.
  Node& back = start(2);
  EXPECT_EQ(back.link.start(), 1u);  // Entry 1 came from its own metadata.log.
  EXPECT_EQ(streams(2).size(), 1u);
  ASSERT_TRUE(wait_until([&] {
    step();
    return streams(2).size() == 2;
  }));
  EXPECT_EQ(streams(2)[1].name, "missed");
  EXPECT_EQ(streams(2)[1].id, streams(1)[1].id);
  // And it writes the next entry itself.
  ASSERT_TRUE(create_stream(2, "third").ok());
  EXPECT_EQ(streams(1).size(), 3u);
}

TEST_F(MetadataJournalTest, EtcdUnreachableRefusesCommandsAndReadsKeepAnswering) {
  start(1);
  step();
  ASSERT_TRUE(create_stream(1, "before").ok());
  etcd_.set_reachable(false);
  EXPECT_EQ(create_stream(1, "refused").error(), Error::feature_unavailable);
  ASSERT_EQ(streams(1).size(), 1u);
  EXPECT_EQ(streams(1)[0].name, "before");
  etcd_.set_reachable(true);
  ASSERT_TRUE(create_stream(1, "after").ok());
  EXPECT_EQ(streams(1).size(), 2u);
}

TEST_F(MetadataJournalTest, ATopicsPartitionsAreRequestedWithItsEntryAndReleasedByItsDelete) {
  start(1);
  step();
  ASSERT_TRUE(create_stream(1, "s").ok());
  Async<core::CreateTopic> topic;
  topic.stream = core::NameOrId::id(0);
  topic.name = "t";
  topic.settings.partitions_count = 3;
  topic.settings.replication_factor = 2;
  ASSERT_TRUE(run(1, topic).ok());
  for (int p = 0; p < 3; p++) {
    // Each request names its topic's replication factor, for the controller to place.
    const auto request = value_of("/hark/test/partitions/0/0/" + std::to_string(p));
    ASSERT_TRUE(request.has_value()) << p;
    EXPECT_EQ(decode_partition_request(*request), 2u) << *request;
  }
  step();  // The controller (node 1) assigns them.
  EXPECT_TRUE(has_key("/hark/test/assignments/0/0/2"));
  Async<core::DeletePartitions> shrink;
  shrink.stream = core::NameOrId::id(0);
  shrink.topic = core::NameOrId::id(0);
  shrink.count = 1;
  ASSERT_TRUE(run(1, shrink).ok());
  EXPECT_FALSE(has_key("/hark/test/partitions/0/0/2"));
  EXPECT_TRUE(has_key("/hark/test/partitions/0/0/1"));
  // The assignment stays: a partition created again with the same ids keeps its epoch.
  EXPECT_TRUE(has_key("/hark/test/assignments/0/0/2"));
}

// Group membership is journaled when the journal is shared: a member that joined via node 1
// and one via node 2 are in one group on both nodes, dealt the partitions alike, in join
// order; a node's members leave with LeaveMembersInRange (its clients' ids), on both nodes; and
// a restarted node finds the members in its metadata.log (the server then removes its own).
TEST_F(MetadataJournalTest, MembersJoinedViaTwoNodesShareOneGroupOnBoth) {
  start(1);
  start(2);
  step();
  step();
  ASSERT_TRUE(create_group_topic(1).ok());
  const uint32_t one = client_id_of(1, 7);
  const uint32_t two = client_id_of(2, 7);
  for (const auto& [via, member] : {std::pair{1u, one}, std::pair{2u, two}}) {
    Async<core::JoinConsumerGroup> join;
    join.stream = core::NameOrId::id(0);
    join.topic = core::NameOrId::id(0);
    join.group = core::NameOrId::id(0);
    join.member = member;
    ASSERT_TRUE(run(via, join).ok());
  }
  const auto members = [&](uint32_t id) {
    core::Blocking<core::GetConsumerGroup> get;
    get.stream = core::NameOrId::id(0);
    get.topic = core::NameOrId::id(0);
    get.group = core::NameOrId::id(0);
    EXPECT_TRUE(get.call(*node(id).broker).ok());
    return get.result ? get.result->members : std::vector<core::GroupMemberInfo>{};
  };
  for (const uint32_t id : {1u, 2u}) {
    const auto seen = members(id);
    ASSERT_EQ(seen.size(), 2u) << id;
    EXPECT_EQ(seen[0].id, one);
    EXPECT_EQ(seen[0].partitions, (std::vector<uint32_t>{0, 2}));
    EXPECT_EQ(seen[1].id, two);
    EXPECT_EQ(seen[1].partitions, (std::vector<uint32_t>{1}));
  }
  // Node 2's members leave (as its server does when node 2 is gone), run via node 1.
  Async<core::LeaveMembersInRange> cleanup;
  cleanup.first = first_client_id(2);
  cleanup.last = last_client_id(2);
  ASSERT_TRUE(run(1, cleanup).ok());
  for (const uint32_t id : {1u, 2u}) {
    const auto seen = members(id);
    ASSERT_EQ(seen.size(), 1u) << id;
    EXPECT_EQ(seen[0].partitions, (std::vector<uint32_t>{0, 1, 2}));
  }
  // A restart replays the members from metadata.log.
  stop(node(2));
  start(2);
  EXPECT_EQ(members(2).size(), 1u);
}

TEST_F(MetadataJournalTest, AMemberJoiningAndLeavingKeepsEveryNodesMetadataLogBounded) {
  constexpr int loops = 50;  // 100 entries: about 3.5 KiB of metadata.log uncompacted.
  snapshot_entries_ = 16;
  start(1);
  start(2);
  step();
  step();
  ASSERT_TRUE(create_group_topic(1).ok());
  const auto membership = [&](uint32_t via, uint32_t member, bool join) {
    if (join) {
      Async<core::JoinConsumerGroup> op;
      op.stream = op.topic = op.group = core::NameOrId::id(0);
      op.member = member;
      return run(via, op);
    }
    Async<core::LeaveConsumerGroup> op;
    op.stream = op.topic = op.group = core::NameOrId::id(0);
    op.member = member;
    return run(via, op);
  };
  const uint32_t stays = client_id_of(1, 1);
  ASSERT_TRUE(membership(1, stays, true).ok());
  uintmax_t largest = 0;
  for (int i = 0; i < loops; i++) {
    const uint32_t passing = client_id_of(2, 100 + i);  // A new connection each time.
    ASSERT_TRUE(membership(2, passing, true).ok());
    ASSERT_TRUE(membership(2, passing, false).ok());
    for (const uint32_t id : {1u, 2u}) {
      largest = std::max(largest, std::filesystem::file_size(node(id).directory + "/metadata.log"));
    }
  }
  // A snapshot of one stream, topic, group and member, and at most 17 entries: a bound that
  // does not grow with `loops`.
  EXPECT_LT(largest, 2048u);
  stop(node(2));
  start(2);  // From its compacted metadata.log.
  core::Blocking<core::GetConsumerGroup> get;
  get.stream = get.topic = get.group = core::NameOrId::id(0);
  ASSERT_TRUE(get.call(*node(2).broker).ok());
  ASSERT_TRUE(get.result.has_value());
  ASSERT_EQ(get.result->members.size(), 1u);
  EXPECT_EQ(get.result->members[0].id, stays);
  EXPECT_EQ(get.result->members[0].partitions, (std::vector<uint32_t>{0, 1, 2}));
}

// The meta/<n> keys among `keys` (the snapshot aside).
size_t meta_entries(const std::map<std::string, KeyValue>& keys) {
  size_t count = 0;
  for (const auto& [key, kv] : keys) {
    count += key.starts_with("/hark/test/meta/0") ? 1 : 0;
  }
  return count;
}

TEST_F(MetadataJournalTest,
       TrimmingKeepsEtcdAndTheMirrorsBoundedAndALateNodeStartsFromTheSnapshot) {
  constexpr int loops = 50;  // 100 entries: over 100 meta/ keys untrimmed.
  snapshot_entries_ = 16;
  keep_entries_ = 8;
  start(1);
  start(2);
  start(3);
  step();
  step();
  ASSERT_TRUE(create_group_topic(1).ok());
  ASSERT_TRUE(create_stream(1, "deleted").ok());
  Async<core::DeleteStream> remove;
  remove.stream = core::NameOrId::id(1);
  ASSERT_TRUE(run(1, remove).ok());
  stop(node(3));
  const auto membership = [&](uint32_t member, bool join) {
    if (join) {
      Async<core::JoinConsumerGroup> op;
      op.stream = op.topic = op.group = core::NameOrId::id(0);
      op.member = member;
      return run(2, op);
    }
    Async<core::LeaveConsumerGroup> op;
    op.stream = op.topic = op.group = core::NameOrId::id(0);
    op.member = member;
    return run(2, op);
  };
  ASSERT_TRUE(membership(client_id_of(2, 1), true).ok());  // Stays.
  size_t in_etcd = 0;
  size_t mirrored = 0;
  auto client = etcd_.client();
  for (int i = 0; i < loops; i++) {
    ASSERT_TRUE(membership(client_id_of(2, 100 + i), true).ok());
    ASSERT_TRUE(membership(client_id_of(2, 100 + i), false).ok());
    const auto read = client->range("/hark/test/meta/", true);
    ASSERT_TRUE(read.ok());
    std::map<std::string, KeyValue> keys;
    for (const KeyValue& kv : read->kvs) keys[kv.key] = kv;
    in_etcd = std::max(in_etcd, meta_entries(keys));
    for (const uint32_t id : {1u, 2u}) {
      mirrored = std::max(mirrored, meta_entries(node(id).agent->mirror().entries()));
    }
  }
  // At most a compaction's worth past the snapshot, one more waiting to be written, and the
  // kept tail: a bound that does not grow with `loops`.
  EXPECT_LT(in_etcd, 64u);
  EXPECT_LT(mirrored, 64u);
  EXPECT_TRUE(has_key("/hark/test/meta/snapshot"));
  EXPECT_FALSE(has_key(Keys("test").meta_entry(1)));

  start(3);  // Its metadata.log ends before etcd's first entry: from the snapshot.
  EXPECT_EQ(streams(3).size(), streams(1).size());
  EXPECT_EQ(streams(3).front().name, "s");
  ASSERT_TRUE(create_stream(3, "after").ok());  // Through every node, node 3 caught up.
  const auto listed = streams(3);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed.back().id, 2u);  // The deleted stream's id 1 is not given again.
  for (const uint32_t id : {1u, 3u}) {
    core::Blocking<core::GetConsumerGroup> get;
    get.stream = get.topic = get.group = core::NameOrId::id(0);
    ASSERT_TRUE(get.call(*node(id).broker).ok());
    ASSERT_TRUE(get.result.has_value());
    ASSERT_EQ(get.result->members.size(), 1u) << id;
    EXPECT_EQ(get.result->members[0].id, client_id_of(2, 1));
  }

  // A node that did not load the snapshot (an empty data directory) cannot start the journal
  // again at entry 1, which trimming removed: the chain check refuses it.
  catch_up_ = false;
  start(4);
  step();
  EXPECT_EQ(create_stream(4, "stale").error(), Error::feature_unavailable);
  EXPECT_FALSE(has_key(Keys("test").meta_entry(1)));
}

}  // namespace
}  // namespace hark::server::cluster
