// Users and personal access tokens of a cluster with real processes (LocalCluster: a real etcd
// with auth and harkd in cluster mode): users are entries of the metadata journal in etcd
// (docs/cluster.md §Metadata), so a change answered by one node holds on every node right
// after, with no wait in between. Covered: a user created through node 1 logs in through nodes
// 2 and 3, several rounds; a password change and a delete through node 2 are refused on node 3
// (old password, deleted user); a token created through node 1 logs in through node 2; two
// nodes starting together on an empty cluster make one root (one node logs its creation, both
// list the same root); a data directory holding a users.log is refused in cluster mode. Label
// cluster (release stage only): one etcd and one to three harkd, seconds each.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "hark/tests/support/wait_until.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using protocol::Identifier;

// A new connection to node `id` logged in as `username`: the error of the login, if any.
Result<uint32_t> login(LocalCluster& cluster, uint32_t id, const std::string& username,
                       const std::string& password) {
  client::Client client;
  HARK_TRY(client.connect(cluster.node(id).address()));
  HARK_TRY_ASSIGN(const protocol::IdentityResponse identity, client.login(username, password));
  return identity.user_id;
}

class HarkdClusterUsers : public ::testing::Test {
 protected:
  void start(LocalCluster::Options options) {
    ASSERT_EQ(cluster_.start(options), "");
    for (uint32_t id = 1; id <= options.nodes; id++) {
      clients_[id] = cluster_.connect(id);
      ASSERT_NE(clients_[id], nullptr) << id;
    }
    // Every node sees all the others, so every change waits for all of them to apply it.
    ASSERT_TRUE(wait_until([&] {
      for (uint32_t id = 1; id <= options.nodes; id++) {
        if (members(*clients_[id]) != options.nodes) return false;
      }
      return true;
    }));
  }

  client::Client& node(uint32_t id) { return *clients_[id]; }

  Result<uint32_t> create(uint32_t id, const std::string& username, const std::string& password) {
    HARK_TRY_ASSIGN(const protocol::UserDetailsResponse created,
                    node(id).create_user({.username = username, .password = password}));
    return created.user.id;
  }

  LocalCluster cluster_;
  std::unique_ptr<client::Client> clients_[4];
};

TEST_F(HarkdClusterUsers, CreatedThroughNode1LogsInThroughNodes2And3RightAfter) {
  ASSERT_NO_FATAL_FAILURE(start({}));
  for (int round = 0; round < 5; round++) {
    const std::string username = "user" + std::to_string(round);
    const Result<uint32_t> created = create(1, username, "password-" + username);
    ASSERT_TRUE(created.ok()) << round << ": " << error_name(created.error());
    for (uint32_t id : {2u, 3u}) {
      const Result<uint32_t> user = login(cluster_, id, username, "password-" + username);
      ASSERT_TRUE(user.ok()) << round << " node " << id << ": " << error_name(user.error());
      EXPECT_EQ(*user, *created);
    }
  }
}

TEST_F(HarkdClusterUsers, PasswordChangeAndDeleteThroughNode2AreRefusedOnNode3) {
  ASSERT_NO_FATAL_FAILURE(start({}));
  const Result<uint32_t> alice = create(1, "alice", "old-password");
  ASSERT_TRUE(alice.ok());
  ASSERT_TRUE(login(cluster_, 3, "alice", "old-password").ok());
  ASSERT_TRUE(node(2)
                  .change_password({.user_id = Identifier::numeric(*alice),
                                    .current_password = "old-password",
                                    .new_password = "new-password"})
                  .ok());
  EXPECT_EQ(login(cluster_, 3, "alice", "old-password").error(), Error::invalid_credentials);
  EXPECT_TRUE(login(cluster_, 3, "alice", "new-password").ok());
  ASSERT_TRUE(node(2).delete_user({.user_id = Identifier::numeric(*alice)}).ok());
  EXPECT_EQ(login(cluster_, 3, "alice", "new-password").error(), Error::invalid_credentials);
  EXPECT_EQ(login(cluster_, 1, "alice", "new-password").error(), Error::invalid_credentials);
}

TEST_F(HarkdClusterUsers, ATokenCreatedThroughNode1LogsInThroughNode2) {
  ASSERT_NO_FATAL_FAILURE(start({}));
  const Result<uint32_t> bob = create(1, "bob", "bob-password");
  ASSERT_TRUE(bob.ok());
  client::Client as_bob;
  ASSERT_TRUE(as_bob.connect(cluster_.node(1).address()).ok());
  ASSERT_TRUE(as_bob.login("bob", "bob-password").ok());
  const auto token = as_bob.create_personal_access_token({.name = "ci-token", .expiry = 0});
  ASSERT_TRUE(token.ok()) << error_name(token.error());
  client::Client elsewhere;
  ASSERT_TRUE(elsewhere.connect(cluster_.node(2).address()).ok());
  const auto identity = elsewhere.login_with_token(token->token);
  ASSERT_TRUE(identity.ok()) << error_name(identity.error());
  EXPECT_EQ(identity->user_id, *bob);
}

// Two nodes starting at once on an empty cluster: both find no user and both try; the
// journal orders them, one creates root and the other finds it (UserJournalTest has the same
// race step by step). Then a third node started later finds it too.
TEST_F(HarkdClusterUsers, TwoNodesStartingTogetherOnAnEmptyClusterMakeOneRoot) {
  ASSERT_NO_FATAL_FAILURE(start({.nodes = 2, .start_together = true}));
  int created = 0;
  for (uint32_t id : {1u, 2u}) {
    const std::string log = cluster_.node(id).stderr_tail(400);
    if (log.find("created the root user") != std::string::npos) created++;
  }
  EXPECT_EQ(created, 1);
  const auto one = node(1).get_users();
  const auto two = node(2).get_users();
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(one->users.size(), 1u);
  EXPECT_EQ(one->users, two->users);  // The same root, created_at included.
}

TEST_F(HarkdClusterUsers, ADataDirectoryWithAUsersLogIsRefusedInClusterMode) {
  ASSERT_NO_FATAL_FAILURE(start({.nodes = 1}));
  const std::string directory = cluster_.etcd().directory() + "/old-single-node";
  std::filesystem::create_directories(directory);
  std::ofstream(directory + "/users.log") << "users of a single node";
  HarkdProcess refused;
  HarkdProcess::Options options;
  options.harkd_path = HARK_HARKD_PATH;
  options.data_directory = directory;
  options.extra_args = {"--etcd",          cluster_.etcd().url(),
                        "--etcd-user",     EtcdProcess::user,
                        "--etcd-password", EtcdProcess::password,
                        "--node-id",       "2",
                        "--cluster-name",  "e2e"};
  EXPECT_FALSE(refused.start(options));
  EXPECT_NE(refused.stderr_tail().find("users.log"), std::string::npos) << refused.stderr_tail();
}

}  // namespace
}  // namespace hark::test
