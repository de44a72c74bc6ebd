// Covers UserStore, the one layer of harkd's user rules, over both of its backends (a typed
// suite): root on the first open, every mutation's errors, root's guards, NUL passwords,
// token expiry and lookup, and that a failed persist publishes nothing. Then each backend on
// its own: the users log (JournalUserBackend) replays users, permissions, passwords and
// tokens exactly across a reopen, holds hashes only in the documented record layout, and cuts
// a torn last record off; the memory fake (MemoryUserBackend) opens no file and a new store
// over its saved table sees the same users.
#include "hark/server/users/user_store.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "hark/server/users/journal_user_backend.h"
#include "hark/server/users/memory_user_backend.h"
#include "hark/server/users/permissioner.h"

namespace hark::server {
namespace {

using protocol::Identifier;

constexpr UnixMicros now = 1'700'000'000'000'000;

// Wraps a backend so a test can make its next persist fail (a full disk, an etcd outage).
class FailingBackend final : public UserBackend {
 public:
  explicit FailingBackend(std::unique_ptr<UserBackend> inner) : inner_(std::move(inner)) {}
  Result<Ref<UserTable>> load(UserPublisher& publisher) override { return inner_->load(publisher); }
  Result<Persisted> persist(const UserChange& change, uint64_t base_version) override {
    if (fail_next_) return std::exchange(fail_next_, std::nullopt).value();
    return inner_->persist(change, base_version);
  }
  std::string where() const override { return inner_->where(); }

  std::optional<Error> fail_next_;

 private:
  std::unique_ptr<UserBackend> inner_;
};

// A temporary directory holding users.log, removed at the end.
class TempUsersLog {
 public:
  TempUsersLog() {
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hark-users-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    directory_ = pattern;
    path_ = directory_ + "/users.log";
  }
  ~TempUsersLog() {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  TempUsersLog(const TempUsersLog&) = delete;
  TempUsersLog& operator=(const TempUsersLog&) = delete;

  const std::string& path() const { return path_; }
  std::string bytes() const {
    std::ifstream file(path_, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    return bytes.str();
  }

 private:
  std::string directory_;
  std::string path_;
};

std::unique_ptr<UserBackend> journal_at(const std::string& path) {
  auto backend = JournalUserBackend::open(path);
  EXPECT_TRUE(backend.ok()) << error_name(backend.error());
  return backend.ok() ? std::move(backend).value() : nullptr;
}

// The backends the typed suite runs on: each makes a fresh backend over the same storage.
class JournalBackends {
 public:
  std::unique_ptr<UserBackend> make() { return journal_at(log_.path()); }

 private:
  TempUsersLog log_;
};

class MemoryBackends {
 public:
  std::unique_ptr<UserBackend> make() { return std::make_unique<MemoryUserBackend>(); }
};

std::unique_ptr<UserStore> open_store(std::unique_ptr<UserBackend> backend,
                                      const UserStore::Root& root = {}) {
  if (backend == nullptr) return nullptr;
  auto store = UserStore::open(std::move(backend), root, now);
  EXPECT_TRUE(store.ok()) << error_name(store.error());
  return store.ok() ? std::move(store).value() : nullptr;
}

template <typename Backends>
class UserStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<UserStore> open(UserStore::Root root = {}) {
    auto failing = std::make_unique<FailingBackend>(backends_.make());
    failing_ = failing.get();
    return open_store(std::move(failing), root);
  }

  Backends backends_;
  FailingBackend* failing_ = nullptr;  // The last opened store's backend.
};

class BackendName {
 public:
  template <typename T>
  static std::string GetName(int /*index*/) {  // NOLINT(readability-identifier-naming): gtest's.
    return std::is_same_v<T, JournalBackends> ? "Journal" : "Memory";
  }
};

using Backends = ::testing::Types<JournalBackends, MemoryBackends>;
TYPED_TEST_SUITE(UserStoreTest, Backends, BackendName);

TYPED_TEST(UserStoreTest, TheFirstOpenCreatesRootWithEveryPermission) {
  auto store = this->open({.username = "admin", .password = "rootpw"});
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
}

TYPED_TEST(UserStoreTest, MutationsAnswerIggysErrors) {
  auto store = this->open();
  ASSERT_NE(store, nullptr);
  const auto user = store->create_user("alice", "secret", user_status_active, std::nullopt, now);
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->id, 1u);
  EXPECT_EQ(store->create_user("alice", "other-pw", user_status_active, std::nullopt, now).error(),
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
TYPED_TEST(UserStoreTest, OnlyRootChangesRootAndNobodyTheirOwnPermissions) {
  auto store = this->open();
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
TYPED_TEST(UserStoreTest, APasswordWithANulByteIsRefusedAndNeverMatches) {
  auto store = this->open();
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
TYPED_TEST(UserStoreTest, AnInactiveUserIsToldOnlyWithTheRightPassword) {
  auto store = this->open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_user("frank", "secret", user_status_inactive, std::nullopt, now).ok());
  EXPECT_EQ(store->login("frank", "wrong").error(), Error::invalid_credentials);
  EXPECT_EQ(store->login("nobody", "wrong").error(), Error::invalid_credentials);
  EXPECT_EQ(store->login("frank", "secret").error(), Error::user_inactive);
}

TYPED_TEST(UserStoreTest, TokensLogInUntilTheyExpireOrAreDeleted) {
  auto store = this->open();
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

// The rules are the store's, above any backend: what reaches it past the wire's checks (an
// embedder, the cluster) is refused alike.
TYPED_TEST(UserStoreTest, NameLengthAndStatusRulesHoldWhateverTheBackend) {
  auto store = this->open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->create_user("al", "secret", user_status_active, std::nullopt, now).error(),
            Error::invalid_username);
  EXPECT_EQ(
      store->create_user(std::string(51, 'a'), "secret", user_status_active, std::nullopt, now)
          .error(),
      Error::invalid_username);
  EXPECT_EQ(store->create_user("alice", "pw", user_status_active, std::nullopt, now).error(),
            Error::invalid_password);
  EXPECT_EQ(
      store->create_user("alice", std::string(101, 'p'), user_status_active, std::nullopt, now)
          .error(),
      Error::invalid_password);
  EXPECT_EQ(store->create_user("alice", "secret", 3, std::nullopt, now).error(),
            Error::invalid_command);
  EXPECT_EQ(store->snapshot()->users.size(), 1u) << "only root";
  const auto alice = store->create_user("alice", "secret", user_status_active, std::nullopt, now);
  ASSERT_TRUE(alice.ok());
  const Identifier id = Identifier::numeric(alice->id);
  EXPECT_EQ(store->update_user(root_user_id, id, std::string("al"), std::nullopt).error(),
            Error::invalid_username);
  EXPECT_EQ(store->update_user(root_user_id, id, std::nullopt, 0).error(), Error::invalid_command);
  EXPECT_EQ(store->change_password(alice->id, id, "secret", "pw").error(), Error::invalid_password);
  EXPECT_EQ(store->create_token(alice->id, "ab", 0, now, 10).error(),
            Error::invalid_personal_access_token_name);
  EXPECT_EQ(store->create_token(alice->id, std::string(31, 't'), 0, now, 10).error(),
            Error::invalid_personal_access_token_name);
  EXPECT_EQ(store->snapshot()->find(alice->id)->username, "alice");
  EXPECT_EQ(*store->login("alice", "secret"), alice->id);
}

// A change is published only once its backend stored it: a failed persist answers its error
// and every reader keeps seeing the users as they were; the next change goes through.
TYPED_TEST(UserStoreTest, AFailedPersistPublishesNothing) {
  auto store = this->open();
  ASSERT_NE(store, nullptr);
  const auto bob =
      store->create_user("bob", "bobs-password", user_status_active, std::nullopt, now);
  ASSERT_TRUE(bob.ok());
  ASSERT_TRUE(store->create_token(bob->id, "kept", 0, now, 10).ok());
  const Identifier id = Identifier::numeric(bob->id);
  protocol::Permissions readers;
  readers.global.read_users = true;
  const auto before = store->snapshot();
  const uint64_t version = store->version();
  const auto fail_next = [&] { this->failing_->fail_next_ = Error::cannot_write_to_file; };
  fail_next();
  EXPECT_EQ(store->create_user("carl", "carls-pw", 1, std::nullopt, now).error(),
            Error::cannot_write_to_file);
  fail_next();
  EXPECT_EQ(store->delete_user(id).error(), Error::cannot_write_to_file);
  fail_next();
  EXPECT_EQ(store->update_user(root_user_id, id, std::string("robert"), 2).error(),
            Error::cannot_write_to_file);
  fail_next();
  EXPECT_EQ(store->update_permissions(root_user_id, id, readers).error(),
            Error::cannot_write_to_file);
  fail_next();
  EXPECT_EQ(store->change_password(bob->id, id, "bobs-password", "next-pw").error(),
            Error::cannot_write_to_file);
  fail_next();
  EXPECT_EQ(store->create_token(bob->id, "lost", 0, now, 10).error(), Error::cannot_write_to_file);
  fail_next();
  EXPECT_EQ(store->delete_token(bob->id, "kept").error(), Error::cannot_write_to_file);
  EXPECT_EQ(store->version(), version);
  EXPECT_EQ(store->snapshot().get(), before.get()) << "the same table, untouched";
  const UserRecord* const same = store->snapshot()->find(bob->id);
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->username, "bob");
  EXPECT_EQ(same->permissions, std::nullopt);
  ASSERT_EQ(same->tokens.size(), 1u);
  EXPECT_EQ(*store->login("bob", "bobs-password"), bob->id);
  EXPECT_EQ(store->snapshot()->find_name("carl"), nullptr);
  ASSERT_TRUE(store->update_permissions(root_user_id, id, readers).ok());
  EXPECT_EQ(store->snapshot()->find(bob->id)->permissions, readers);
}

// Later opens keep what the log says, whatever the root settings say now.
TEST(UsersLog, ALaterOpenKeepsRootAsTheLogHasIt) {
  TempUsersLog log;
  ASSERT_NE(open_store(journal_at(log.path()), {.username = "admin", .password = "rootpw"}),
            nullptr);
  auto reopened = open_store(journal_at(log.path()), {.username = "other", .password = "otherpw"});
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->login("other", "otherpw").error(), Error::invalid_credentials);
  EXPECT_TRUE(reopened->login("admin", "rootpw").ok());
}

TEST(UsersLog, AReopenReplaysEverythingAndTheFileHoldsHashesOnly) {
  TempUsersLog log;
  const auto open = [&log] { return open_store(journal_at(log.path())); };
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
  const std::string bytes = log.bytes();
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

TEST(UsersLog, ATornLastRecordIsCutOffAndDamageBeforeTheEndIsRefused) {
  TempUsersLog log;
  const auto open = [&log] { return open_store(journal_at(log.path())); };
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->create_user("erin", "erins-password", 1, std::nullopt, now).ok());
  }
  const std::string whole = log.bytes();
  ASSERT_EQ(truncate(log.path().c_str(), static_cast<off_t>(whole.size() - 3)), 0);
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->snapshot()->find_name("erin"), nullptr) << "never acknowledged";
    EXPECT_NE(store->snapshot()->find(root_user_id), nullptr);
    ASSERT_TRUE(store->create_user("fay", "fays-password", 1, std::nullopt, now).ok());
  }
  // Flip a byte inside the first record (root's): damage followed by more records.
  std::string damaged = log.bytes();
  damaged[30] = static_cast<char>(damaged[30] ^ 0x5a);
  {
    std::ofstream file(log.path(), std::ios::binary | std::ios::trunc);
    file << damaged;
  }
  EXPECT_EQ(JournalUserBackend::open(log.path()).error(), Error::state_file_corrupted);
}

// users.log stays byte-compatible: root's record is the first, in the layout of
// docs/storage-format.md §Users log (after the 16-byte header and the 8-byte frame).
TEST(UsersLog, RecordsKeepTheDocumentedLayout) {
  TempUsersLog log;
  ASSERT_NE(open_store(journal_at(log.path())), nullptr);
  std::string expected;
  const auto put_u32 = [&expected](uint32_t value) {
    for (int i = 0; i < 4; i++) expected.push_back(static_cast<char>(value >> (8 * i)));
  };
  expected.push_back(1);  // user put
  put_u32(root_user_id);
  put_u32(static_cast<uint32_t>(now));  // created_at u64, little-endian
  put_u32(static_cast<uint32_t>(now >> 32));
  expected.push_back(static_cast<char>(user_status_active));
  put_u32(4);
  expected += "iggy";
  const std::string bytes = log.bytes();
  ASSERT_GT(bytes.size(), 24 + expected.size() + 7);
  EXPECT_EQ(bytes.substr(8, 4), std::string("\x01\0\0\0", 4)) << "format version 1";
  EXPECT_EQ(bytes.substr(24, expected.size()), expected);
  EXPECT_EQ(bytes.substr(24 + expected.size() + 4, 3), "$y$") << "a yescrypt hash";
}

// The open file descriptors of this process.
size_t open_files() {
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    count++;
  }
  return count;
}

// The fake needs no disk: it opens no file, records every change in order, and a new store
// over the table it saved (an embedder's restart) has the same users, passwords and tokens.
TEST(MemoryUserBackend, NeedsNoDiskAndANewStoreOverItsTableHasTheSameUsers) {
  const size_t files_before = open_files();
  auto owned = std::make_unique<MemoryUserBackend>();
  MemoryUserBackend& backend = *owned;
  auto store = open_store(std::move(owned), {.username = "admin", .password = "rootpw"});
  ASSERT_NE(store, nullptr);
  const auto bob = store->create_user("bob", "bobs-password", 1, std::nullopt, now);
  ASSERT_TRUE(bob.ok());
  const auto token = store->create_token(bob->id, "ci-token", 0, now, 10);
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(store->create_user("carl", "carls-password", 1, std::nullopt, now).ok());
  ASSERT_TRUE(store->delete_user(*Identifier::named("carl")).ok());
  EXPECT_EQ(open_files(), files_before) << "no file opened";
  const std::vector<UserChange> changes = backend.changes();
  ASSERT_EQ(changes.size(), 5u);
  EXPECT_TRUE(std::holds_alternative<UserPut>(changes[0])) << "root";
  EXPECT_TRUE(std::holds_alternative<UserPut>(changes[1]));
  EXPECT_TRUE(std::holds_alternative<TokenPut>(changes[2]));
  EXPECT_TRUE(std::holds_alternative<UserPut>(changes[3]));
  EXPECT_TRUE(std::holds_alternative<UserDeleted>(changes[4]));
  const UserTable saved = backend.table();
  store.reset();
  auto again = open_store(std::make_unique<MemoryUserBackend>(saved),
                          {.username = "other", .password = "otherpw"});
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->snapshot()->users.size(), 2u);
  EXPECT_EQ(*again->login("admin", "rootpw"), root_user_id) << "root is not created again";
  EXPECT_EQ(*again->login("bob", "bobs-password"), bob->id);
  EXPECT_EQ(*again->login_with_token(*token, now), bob->id);
  const auto dora = again->create_user("dora", "doras-password", 1, std::nullopt, now);
  ASSERT_TRUE(dora.ok());
  EXPECT_EQ(dora->id, 3u) << "the deleted user's id is not reused";
}

}  // namespace
}  // namespace hark::server
