// Users of a cluster as entries of the metadata journal (server/cluster/cluster_user_backend.h)
// over FakeEtcd, deterministic: two in-process nodes, each a real core::Broker journaling
// through an EtcdJournal and a UserStore over a ClusterUserBackend, the coordination loop
// stepped by the test. A user change blocks its AuthPool-like thread until every live node
// applied it, so each check on the other node runs right after the change returns, with no
// step in between: that is read-your-writes. Covered: root bootstrapped once by two nodes
// starting together on an empty cluster; a user created on one node logs in on the other; a
// password change and a delete on one node refuse the old password and the deleted user on
// the other; a token made on one node logs in on the other; etcd holds hashes, never a
// password or a token; two nodes racing for one username make one user; a restarted node
// rebuilds its users from metadata.log, then etcd; etcd unreachable refuses changes with
// FeatureUnavailable while logins keep working; a node whose metadata.log was compacted to a
// snapshot restarts with the same users, tokens and next user id.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/broker/blocking.h"
#include "hark/core/broker/catalog_operations.h"
#include "hark/server/cluster/cluster_user_backend.h"
#include "hark/server/cluster/etcd_journal.h"
#include "hark/server/cluster/fake_etcd.h"
#include "hark/server/users/permissioner.h"
#include "hark/server/users/user_store.h"
#include "hark/tests/support/wait_until.h"

namespace hark::server::cluster {
namespace {

using test::wait_until;

constexpr UnixMicros now = 1'700'000'000'000'000;
const UserStore::Root root{.username = "iggy", .password = "root-secret"};

struct Node {
  uint32_t id = 0;
  std::string directory;
  JournalLink link;
  EtcdJournalFactory factory{link};
  std::unique_ptr<BrokerEntrySink> sink;
  std::unique_ptr<Coordinator> client;
  std::unique_ptr<NodeAgent> agent;
  std::unique_ptr<MetadataSync> sync;
  ClusterUserBackend* backend = nullptr;  // Owned by `users`.
  std::unique_ptr<UserStore> users;
  std::unique_ptr<core::Broker> broker;
};

class UserJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("hark_user_journal_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override {
    for (auto& node : nodes_) stop(*node);
    std::filesystem::remove_all(root_);
  }

  // As harkd's main: the store first (no root), then the broker replaying metadata.log into it.
  Node& start(uint32_t id) {
    if (nodes_.size() < id) nodes_.resize(id);
    auto& slot = nodes_[id - 1];
    slot = std::make_unique<Node>();
    Node& node = *slot;
    node.id = id;
    node.directory = (root_ / ("node" + std::to_string(id))).string();
    auto backend = std::make_unique<ClusterUserBackend>();
    node.backend = backend.get();
    auto users = UserStore::open(std::move(backend), std::nullopt, now);
    EXPECT_TRUE(users.ok());
    node.users = std::move(users).value();
    core::BrokerOptions options;
    options.data_directory = node.directory;
    options.shards_count = 2;
    options.journal = &node.factory;
    options.extensions = node.backend;
    options.metadata_snapshot_entries = snapshot_entries_;
    auto broker = core::Broker::start(options);
    EXPECT_TRUE(broker.ok());
    node.broker = std::move(broker).value();
    node.backend->attach(*node.broker);
    node.client = etcd_.client();
    node.agent = std::make_unique<NodeAgent>(
        *node.client, clock_,
        AgentOptions{.cluster = "test",
                     .self = {.id = id, .client_address = "a", .link_address = "b", .shards = 2},
                     .lease_ttl_seconds = 5});
    node.sink = std::make_unique<BrokerEntrySink>(*node.broker);
    node.sync = std::make_unique<MetadataSync>(
        node.link, *node.sink,
        MetadataSyncOptions{.self = id, .ack_timeout = std::chrono::seconds(5)});
    return node;
  }

  void stop(Node& node) {
    if (!node.broker) return;
    node.sync->stop();
    (void)node.agent->leave();
    node.broker->stop();
    node.broker.reset();
    node.users.reset();
  }

  Node& node(uint32_t id) { return *nodes_.at(id - 1); }
  UserStore& users(uint32_t id) { return *node(id).users; }

  void step() {
    for (auto& node : nodes_) {
      if (!node || !node->broker) continue;
      const bool synced = node->agent->step(Duration(0)).ok();
      node->sync->step(*node->client, *node->agent, clock_.monotonic_now(), synced);
    }
  }

  // Runs `change` (it blocks until the journal answers) on its own thread, as an AuthPool
  // thread would, stepping the nodes until it returns.
  template <typename Change>
  auto change(Change&& run) {
    auto answer = std::async(std::launch::async, std::forward<Change>(run));
    EXPECT_TRUE(wait_until([&] {
      step();
      return answer.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    }));
    return answer.get();
  }

  // Every value under meta/, concatenated (what etcd holds of the journal).
  std::string journal_in_etcd() {
    auto client = etcd_.client();
    const auto read = client->range("/hark/test/meta/", true);
    EXPECT_TRUE(read.ok());
    std::string all;
    for (const auto& kv : read->kvs) all += kv.value;
    return all;
  }

  size_t entries_in_etcd() {
    auto client = etcd_.client();
    const auto read = client->range("/hark/test/meta/", true);
    return read.ok() ? read->kvs.size() : 0;
  }

  void start_both_with_root() {
    start(1);
    start(2);
    step();
    step();
    ASSERT_TRUE(change([&] { return users(1).bootstrap_root(root, now); }).ok());
  }

  Result<UserRecord> create(uint32_t id, const std::string& name, const std::string& password) {
    return change([&] {
      return users(id).create_user(name, password, user_status_active, std::nullopt, now);
    });
  }

  uint64_t snapshot_entries_ = 0;  // BrokerOptions::metadata_snapshot_entries; 0: never.
  ManualClock clock_;
  FakeEtcd etcd_{clock_};
  std::filesystem::path root_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

TEST_F(UserJournalTest, TwoNodesStartingOnAnEmptyClusterBootstrapRootOnce) {
  start(1);
  start(2);
  step();
  step();
  // Both find no user and both try; the journal orders them and the second finds root.
  auto first = std::async(std::launch::async, [&] { return users(1).bootstrap_root(root, now); });
  auto second = std::async(std::launch::async, [&] { return users(2).bootstrap_root(root, now); });
  ASSERT_TRUE(wait_until([&] {
    step();
    return first.wait_for(std::chrono::seconds(0)) == std::future_status::ready &&
           second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }));
  EXPECT_TRUE(first.get().ok());
  EXPECT_TRUE(second.get().ok());
  EXPECT_EQ(entries_in_etcd(), 1u);  // One root entry in the whole cluster.
  for (uint32_t id : {1u, 2u}) {
    const auto table = users(id).snapshot();
    ASSERT_EQ(table->users.size(), 1u) << id;
    EXPECT_EQ(table->users.begin()->first, root_user_id);
    EXPECT_TRUE(users(id).login("iggy", "root-secret").ok()) << id;
  }
}

TEST_F(UserJournalTest, AUserCreatedOnOneNodeLogsInOnTheOtherRightAfter) {
  start_both_with_root();
  for (int round = 0; round < 5; round++) {
    const std::string name = "user" + std::to_string(round);
    const Result<UserRecord> created = create(round % 2 == 0 ? 1 : 2, name, "pw-" + name);
    ASSERT_TRUE(created.ok()) << round;
    // No step since the create returned: both nodes already have it.
    const uint32_t other = round % 2 == 0 ? 2 : 1;
    const Result<uint32_t> login = users(other).login(name, "pw-" + name);
    ASSERT_TRUE(login.ok()) << round;
    EXPECT_EQ(*login, created->id);
  }
  EXPECT_EQ(users(1).snapshot()->users.size(), 6u);
  EXPECT_EQ(users(2).snapshot()->users.size(), 6u);
}

TEST_F(UserJournalTest, APasswordChangeOrDeleteOnOneNodeRefusesTheOldOnTheOther) {
  start_both_with_root();
  const Result<UserRecord> alice = create(1, "alice", "old-password");
  ASSERT_TRUE(alice.ok());
  ASSERT_TRUE(change([&] {
                return users(2).change_password(root_user_id,
                                                protocol::Identifier::numeric(alice->id),
                                                "old-password", "new-password");
              }).ok());
  EXPECT_EQ(users(1).login("alice", "old-password").error(), Error::invalid_credentials);
  EXPECT_TRUE(users(1).login("alice", "new-password").ok());
  ASSERT_TRUE(
      change([&] { return users(2).delete_user(protocol::Identifier::numeric(alice->id)); }).ok());
  EXPECT_EQ(users(1).login("alice", "new-password").error(), Error::invalid_credentials);
  EXPECT_EQ(users(1).snapshot()->find_name("alice"), nullptr);
}

TEST_F(UserJournalTest, ATokenMadeOnOneNodeLogsInOnTheOtherAndEtcdHoldsHashesOnly) {
  start_both_with_root();
  const Result<UserRecord> bob = create(1, "bob", "plain-password-77");
  ASSERT_TRUE(bob.ok());
  const Result<std::string> token =
      change([&] { return users(1).create_token(bob->id, "ci-token", 0, now, 100); });
  ASSERT_TRUE(token.ok()) << error_name(token.error());
  const Result<uint32_t> login = users(2).login_with_token(*token, now);
  ASSERT_TRUE(login.ok());
  EXPECT_EQ(*login, bob->id);
  const std::string journal = journal_in_etcd();
  EXPECT_NE(journal.find("bob"), std::string::npos);  // The scan does see user entries.
  EXPECT_EQ(journal.find("plain-password-77"), std::string::npos);
  EXPECT_EQ(journal.find("root-secret"), std::string::npos);
  EXPECT_EQ(journal.find(token->substr(token_lookup_chars)), std::string::npos);
  ASSERT_TRUE(change([&] { return users(2).delete_token(bob->id, "ci-token"); }).ok());
  EXPECT_EQ(users(1).login_with_token(*token, now).error(), Error::resource_not_found);
}

TEST_F(UserJournalTest, TwoNodesRacingForOneUsernameMakeOneUser) {
  start_both_with_root();
  auto first = std::async(std::launch::async, [&] {
    return users(1).create_user("carol", "one-password", user_status_active, std::nullopt, now);
  });
  auto second = std::async(std::launch::async, [&] {
    return users(2).create_user("carol", "two-password", user_status_active, std::nullopt, now);
  });
  ASSERT_TRUE(wait_until([&] {
    step();
    return first.wait_for(std::chrono::seconds(0)) == std::future_status::ready &&
           second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }));
  const Result<UserRecord> one = first.get();
  const Result<UserRecord> two = second.get();
  EXPECT_NE(one.ok(), two.ok());
  const Result<UserRecord>& refused = one.ok() ? two : one;
  EXPECT_EQ(refused.error(), Error::user_already_exists);
  const std::string password = one.ok() ? "one-password" : "two-password";
  EXPECT_TRUE(users(1).login("carol", password).ok());
  EXPECT_TRUE(users(2).login("carol", password).ok());
  EXPECT_EQ(users(1).snapshot()->users.size(), 2u);
  EXPECT_EQ(users(2).snapshot()->users.size(), 2u);
}

TEST_F(UserJournalTest, ARestartedNodeRebuildsItsUsersFromMetadataLogThenEtcd) {
  start_both_with_root();
  ASSERT_TRUE(create(1, "kept", "kept-password").ok());
  stop(node(2));
  ASSERT_TRUE(create(1, "missed", "missed-password").ok());
  start(2);
  // From its own metadata.log, before any step.
  EXPECT_TRUE(users(2).login("kept", "kept-password").ok());
  EXPECT_TRUE(users(2).bootstrap_root(root, now).ok());  // Root exists: nothing journaled.
  ASSERT_TRUE(wait_until([&] {
    step();
    return users(2).snapshot()->find_name("missed") != nullptr;
  }));
  EXPECT_TRUE(users(2).login("missed", "missed-password").ok());
  EXPECT_EQ(users(2).snapshot()->users.size(), 3u);
}

TEST_F(UserJournalTest, ACompactedMetadataLogKeepsUsersTokensAndTheNextUserId) {
  snapshot_entries_ = 2;
  start_both_with_root();
  ASSERT_TRUE(create(1, "ann", "ann-password-1").ok());
  const Result<UserRecord> bob = create(1, "bob", "bob-password-1");
  ASSERT_TRUE(bob.ok());
  const Result<std::string> token =
      change([&] { return users(1).create_token(bob->id, "ci-token", 0, now, 100); });
  ASSERT_TRUE(token.ok());
  const Result<UserRecord> cid = create(1, "cid", "cid-password-1");
  ASSERT_TRUE(cid.ok());
  // The highest id goes: the snapshot must still keep it from being given again.
  ASSERT_TRUE(
      change([&] { return users(1).delete_user(protocol::Identifier::numeric(cid->id)); }).ok());
  // Past the bound after the delete, so node 2 compacted after it (between two entries).
  for (const char* name : {"s1", "s2", "s3"}) {
    core::Blocking<core::CreateStream> stream;
    stream.name = name;
    ASSERT_TRUE(change([&] { return stream.call(*node(1).broker); }).ok());
  }
  const Ref<const UserTable> expected = users(1).snapshot();
  stop(node(2));
  std::ifstream in(node(2).directory + "/metadata.log", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 24u);
  ASSERT_EQ(bytes[24], 16);  // The first record is a snapshot (docs/storage-format.md).
  ASSERT_LT(bytes.size(), 2048u);

  start(2);  // From its own metadata.log, before any step.
  const Ref<const UserTable> table = users(2).snapshot();
  EXPECT_EQ(table->next_id, cid->id + 1);
  EXPECT_EQ(table->next_id, expected->next_id);
  EXPECT_EQ(table->users.size(), expected->users.size());
  EXPECT_TRUE(users(2).login("ann", "ann-password-1").ok());
  EXPECT_EQ(users(2).login("cid", "cid-password-1").error(),
            users(1).login("cid", "cid-password-1").error());
  const Result<uint32_t> login = users(2).login_with_token(*token, now);
  ASSERT_TRUE(login.ok());
  EXPECT_EQ(*login, bob->id);
}

TEST_F(UserJournalTest, EtcdUnreachableRefusesChangesAndLoginsKeepWorking) {
  start_both_with_root();
  ASSERT_TRUE(create(1, "dave", "dave-password").ok());
  etcd_.set_reachable(false);
  EXPECT_EQ(create(1, "erin", "erin-password").error(), Error::feature_unavailable);
  EXPECT_EQ(users(1).snapshot()->find_name("erin"), nullptr);
  EXPECT_TRUE(users(1).login("dave", "dave-password").ok());
  EXPECT_TRUE(users(2).login("dave", "dave-password").ok());
  etcd_.set_reachable(true);
  ASSERT_TRUE(create(1, "erin", "erin-password").ok());
  EXPECT_TRUE(users(2).login("erin", "erin-password").ok());
}

}  // namespace
}  // namespace hark::server::cluster
