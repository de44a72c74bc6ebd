// Covers UserStore, harkd's users log: root on the first open, every mutation's errors, that
// a reopen replays users, permissions, passwords and tokens exactly (and hashes only are on
// disk), token expiry and lookup, and a torn last record cut off at open.
#include "hark/server/users/user_store.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "hark/server/users/permissioner.h"

namespace hark::server {
namespace {

using protocol::Identifier;

constexpr UnixMicros now = 1'700'000'000'000'000;

class UserStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hark-users-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    path_ = directory_ + "/users.log";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

  std::unique_ptr<UserStore> open(UserStore::Root root = {}) {
    auto store = UserStore::open(path_, root, now);
    EXPECT_TRUE(store.ok()) << error_name(store.error());
    return store.ok() ? std::move(store).value() : nullptr;
  }

  std::string file_bytes() const {
    std::ifstream file(path_, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    return bytes.str();
  }

  std::string directory_;
  std::string path_;
};

TEST_F(UserStoreTest, TheFirstOpenCreatesRootWithEveryPermission) {
  auto store = open({.username = "admin", .password = "rootpw"});
  ASSERT_NE(store, nullptr);
  const auto table = store->snapshot();
  ASSERT_EQ(table->users.size(), 1u);
  const UserRecord* root = table->find(root_user_id);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->username, "admin");
  EXPECT_EQ(root->permissions, root_permissions());
  EXPECT_EQ(*store->login("admin", "rootpw"), root_user_id);
  EXPECT_TRUE(store->root_password_is("rootpw"));
  EXPECT_FALSE(store->root_password_is("iggy"));
  store.reset();
  // Later opens keep what is on disk, whatever the root settings say now.
  auto reopened = open({.username = "other", .password = "otherpw"});
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->login("other", "otherpw").error(), Error::invalid_credentials);
  EXPECT_TRUE(reopened->login("admin", "rootpw").ok());
}

TEST_F(UserStoreTest, MutationsAnswerIggysErrors) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  const auto user = store->create_user("alice", "secret", user_status_active, std::nullopt, now);
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->id, 1u);
  EXPECT_EQ(store->create_user("alice", "x", user_status_active, std::nullopt, now).error(),
            Error::user_already_exists);
  EXPECT_EQ(store->delete_user(Identifier::numeric(root_user_id)).error(),
            Error::cannot_delete_user);
  EXPECT_EQ(store->update_permissions(root_user_id, Identifier::numeric(root_user_id), std::nullopt)
                .error(),
            Error::cannot_change_permissions);
  EXPECT_EQ(store->delete_user(Identifier::numeric(9)).error(), Error::resource_not_found);
  EXPECT_EQ(store
                ->update_user(root_user_id, *Identifier::named("alice"), std::string("iggy"),
                              std::nullopt)
                .error(),
            Error::user_already_exists);
  EXPECT_EQ(store->change_password(1, Identifier::numeric(1), "wrong", "next").error(),
            Error::invalid_credentials);
  EXPECT_TRUE(store->change_password(1, Identifier::numeric(1), "secret", "next").ok());
  EXPECT_EQ(store->login("alice", "secret").error(), Error::invalid_credentials);
  EXPECT_EQ(*store->login("alice", "next"), 1u);
  ASSERT_TRUE(
      store->update_user(root_user_id, Identifier::numeric(1), std::nullopt, user_status_inactive)
          .ok());
  EXPECT_EQ(store->login("alice", "next").error(), Error::user_inactive);
  EXPECT_EQ(store->login("nobody", "next").error(), Error::invalid_credentials);
  const uint64_t version = store->version();
  ASSERT_TRUE(store->delete_user(Identifier::numeric(1)).ok());
  EXPECT_GT(store->version(), version) << "readers see a new snapshot";
  EXPECT_EQ(store->snapshot()->find(1), nullptr);
}

// A user manager (manage_users) cannot take over root nor grant itself more: root is changed
// by root only, and nobody changes their own permissions.
TEST_F(UserStoreTest, OnlyRootChangesRootAndNobodyTheirOwnPermissions) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  protocol::Permissions manager;
  manager.global.manage_users = true;
  const auto mallory = store->create_user("mallory", "secret", user_status_active, manager, now);
  ASSERT_TRUE(mallory.ok());
  const auto bob = store->create_user("bob", "secret", user_status_active, std::nullopt, now);
  ASSERT_TRUE(bob.ok());
  const uint32_t id = mallory->id;
  const Identifier root = Identifier::numeric(root_user_id);
  EXPECT_EQ(store->update_user(id, root, std::nullopt, user_status_inactive).error(),
            Error::unauthorized);
  EXPECT_EQ(store->update_user(id, root, std::string("pwned"), std::nullopt).error(),
            Error::unauthorized);
  EXPECT_EQ(store->update_permissions(id, root, std::nullopt).error(),
            Error::cannot_change_permissions);
  EXPECT_EQ(store->change_password(id, root, "iggy", "taken-over").error(), Error::unauthorized);
  EXPECT_EQ(store->delete_user(root).error(), Error::cannot_delete_user);
  EXPECT_EQ(store->update_permissions(id, Identifier::numeric(id), root_permissions()).error(),
            Error::cannot_change_permissions);
  EXPECT_EQ(store->update_permissions(root_user_id, root, std::nullopt).error(),
            Error::cannot_change_permissions)
      << "root's own permissions are fixed too";
  // Root is unchanged and logs in; mallory's grants are what root gave.
  const UserRecord* const after = store->snapshot()->find(root_user_id);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->username, "iggy");
  EXPECT_TRUE(after->active());
  EXPECT_EQ(after->permissions, root_permissions());
  EXPECT_EQ(*store->login("iggy", "iggy"), root_user_id);
  EXPECT_EQ(store->snapshot()->find(id)->permissions, manager);
  // What manage_users is for still works on other users, and root may update itself.
  EXPECT_TRUE(store
                  ->update_user(id, Identifier::numeric(bob->id), std::string("robert"),
                                user_status_inactive)
                  .ok());
  EXPECT_TRUE(store->update_permissions(id, Identifier::numeric(bob->id), manager).ok());
  EXPECT_TRUE(store->update_user(root_user_id, root, std::string("admin"), std::nullopt).ok());
  EXPECT_TRUE(store->change_password(root_user_id, root, "iggy", "new-root").ok());
  EXPECT_EQ(*store->login("admin", "new-root"), root_user_id);
}

// libcrypt hashes C strings: a password with a NUL byte is refused, and a login with one never
// matches a password that is its prefix.
TEST_F(UserStoreTest, APasswordWithANulByteIsRefusedAndNeverMatches) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  using namespace std::string_literals;
  EXPECT_EQ(
      store->create_user("alice", "abc\0secret"s, user_status_active, std::nullopt, now).error(),
      Error::invalid_password);
  EXPECT_EQ(store->snapshot()->find_name("alice"), nullptr);
  const auto bob = store->create_user("bob", "abc", user_status_active, std::nullopt, now);
  ASSERT_TRUE(bob.ok());
  EXPECT_EQ(store->login("bob", "abc\0anything"s).error(), Error::invalid_credentials);
  EXPECT_EQ(*store->login("bob", "abc"), bob->id);
  EXPECT_EQ(
      store->change_password(bob->id, Identifier::numeric(bob->id), "abc", "new\0pw"s).error(),
      Error::invalid_password);
  EXPECT_EQ(*store->login("bob", "abc"), bob->id) << "the password is unchanged";
}

// An inactive user answers 47 only to who knows its password; otherwise 42, as an unknown user.
TEST_F(UserStoreTest, AnInactiveUserIsToldOnlyWithTheRightPassword) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_user("frank", "secret", user_status_inactive, std::nullopt, now).ok());
  EXPECT_EQ(store->login("frank", "wrong").error(), Error::invalid_credentials);
  EXPECT_EQ(store->login("nobody", "wrong").error(), Error::invalid_credentials);
  EXPECT_EQ(store->login("frank", "secret").error(), Error::user_inactive);
}

TEST_F(UserStoreTest, TokensLogInUntilTheyExpireOrAreDeleted) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  const auto token = store->create_token(root_user_id, "never", 0, now, 2);
  ASSERT_TRUE(token.ok());
  EXPECT_GT(token->size(), token_lookup_chars);
  const auto expiring = store->create_token(root_user_id, "soon", 1'000, now, 2);
  ASSERT_TRUE(expiring.ok());
  EXPECT_EQ(store->create_token(root_user_id, "third", 0, now, 2).error(),
            Error::personal_access_tokens_limit_reached);
  EXPECT_EQ(store->create_token(root_user_id, "soon", 0, now, 3).error(),
            Error::personal_access_token_already_exists);
  EXPECT_EQ(*store->login_with_token(*token, now + 1'000'000'000), root_user_id);
  EXPECT_EQ(*store->login_with_token(*expiring, now + 999), root_user_id);
  EXPECT_EQ(store->login_with_token(*expiring, now + 1'000).error(),
            Error::personal_access_token_expired);
  std::string forged = *token;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  EXPECT_EQ(store->login_with_token(forged, now).error(), Error::resource_not_found);
  EXPECT_EQ(store->login_with_token("short", now).error(), Error::resource_not_found);
  ASSERT_TRUE(store->delete_token(root_user_id, "never").ok());
  EXPECT_EQ(store->delete_token(root_user_id, "never").error(), Error::resource_not_found);
  EXPECT_EQ(store->login_with_token(*token, now).error(), Error::resource_not_found);
}

TEST_F(UserStoreTest, AReopenReplaysEverythingAndTheFileHoldsHashesOnly) {
  std::string token;
  protocol::Permissions permissions;
  permissions.global.read_users = true;
  protocol::StreamPermissions stream{.stream_id = 7, .poll_messages = true};
  stream.topics.push_back({.topic_id = 2, .send_messages = true});
  permissions.streams.push_back(stream);
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->create_user("bob", "bobs-password", 1, std::nullopt, now + 5).ok());
    ASSERT_TRUE(store->create_user("carl", "carls-password", 1, std::nullopt, now).ok());
    ASSERT_TRUE(
        store->update_permissions(root_user_id, *Identifier::named("bob"), permissions).ok());
    ASSERT_TRUE(store->delete_user(*Identifier::named("carl")).ok());
    token = *store->create_token(1, "ci-token", 0, now, 10);
    ASSERT_TRUE(store->create_token(1, "other", 0, now, 10).ok());
    ASSERT_TRUE(store->delete_token(1, "other").ok());
  }
  const std::string bytes = file_bytes();
  EXPECT_EQ(bytes.substr(0, 8), "HARKUSER");
  EXPECT_EQ(bytes.find("bobs-password"), std::string::npos);
  EXPECT_EQ(bytes.find(token), std::string::npos);
  auto store = open();
  ASSERT_NE(store, nullptr);
  const auto table = store->snapshot();
  ASSERT_EQ(table->users.size(), 2u);
  const UserRecord* bob = table->find_name("bob");
  ASSERT_NE(bob, nullptr);
  EXPECT_EQ(bob->id, 1u);
  EXPECT_EQ(bob->created_at, now + 5);
  EXPECT_EQ(bob->permissions, permissions);
  ASSERT_EQ(bob->tokens.size(), 1u);
  EXPECT_EQ(bob->tokens[0].name, "ci-token");
  EXPECT_EQ(*store->login("bob", "bobs-password"), 1u);
  EXPECT_EQ(*store->login_with_token(token, now), 1u);
  const auto next = store->create_user("dora", "doras-password", 1, std::nullopt, now);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->id, 3u) << "the deleted user's id is not reused";
}

TEST_F(UserStoreTest, ATornLastRecordIsCutOffAndDamageBeforeTheEndIsRefused) {
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->create_user("erin", "erins-password", 1, std::nullopt, now).ok());
  }
  const std::string whole = file_bytes();
  ASSERT_EQ(truncate(path_.c_str(), static_cast<off_t>(whole.size() - 3)), 0);
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->snapshot()->find_name("erin"), nullptr) << "never acknowledged";
    EXPECT_NE(store->snapshot()->find(root_user_id), nullptr);
    ASSERT_TRUE(store->create_user("fay", "fays-password", 1, std::nullopt, now).ok());
  }
  // Flip a byte inside the first record (root's): damage followed by more records.
  std::string damaged = file_bytes();
  damaged[30] = static_cast<char>(damaged[30] ^ 0x5a);
  {
    std::ofstream file(path_, std::ios::binary | std::ios::trunc);
    file << damaged;
  }
  EXPECT_EQ(UserStore::open(path_, {}, now).error(), Error::state_file_corrupted);
}

}  // namespace
}  // namespace hark::server
