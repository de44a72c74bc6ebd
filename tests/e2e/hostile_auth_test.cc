// Replays attacks on logins, users and root against a real harkd and asserts the fixed
// behaviour by counting answers (docs/operations.md §Users and security): logins sent at once
// are evaluated at most auth.login_failures_max times, valid logins between guesses do not
// reset the count of guesses at root, unknown and inactive users answer the same code and are
// throttled alike, a user manager cannot take over root nor grant itself permissions,
// passwords holding a NUL byte are refused, and a full auth queue answers a clear code.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using namespace std::string_literals;
using protocol::Identifier;
using protocol::Permissions;

constexpr uint32_t root_id = 0;
constexpr uint32_t failures_max = 5;

// How many of `statuses` are `code`.
size_t count_of(const std::vector<uint32_t>& statuses, Error code) {
  return static_cast<size_t>(std::count(statuses.begin(), statuses.end(), error_code(code)));
}

// Sends the login frame on `count` connections at once (all connected first), then reads
// every answer's status; a connection that got none counts as UINT32_MAX.
std::vector<uint32_t> login_at_once(const std::string& address, size_t count,
                                    const std::string& username, const std::string& password) {
  std::vector<std::unique_ptr<RawConnection>> connections;
  for (size_t i = 0; i < count; i++) {
    connections.push_back(std::make_unique<RawConnection>());
    EXPECT_TRUE(connections.back()->connect(address));
  }
  const protocol::Bytes login = request_frame(protocol::LoginUserRequest{
      .username = username, .password = password, .version = {}, .context = {}});
  for (auto& connection : connections) EXPECT_TRUE(connection->send(login));
  std::vector<uint32_t> statuses;
  for (auto& connection : connections) {
    const auto response = connection->read_response(SteadyClock::now() + 120s);
    statuses.push_back(response ? response->status : UINT32_MAX);
  }
  return statuses;
}

class HarkdHostileAuth : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    // 300 connections from 127.0.0.1 log in at once: the per-address admission cap (64 by
    // default; tests/e2e/hostile_connections_test.cc) is raised so the throttle alone answers.
    options.extra_args = {"--login-failures-max",
                          std::to_string(failures_max),
                          "--login-lockout",
                          "10m",
                          "--unauthenticated-per-address-max",
                          "1000"};
    return options;
  }

  // The code a login on a new connection is answered (0: logged in).
  uint32_t login_code(const std::string& username, const std::string& password) {
    client::Client client;
    EXPECT_TRUE(client.connect(address()).ok());
    const auto login = client.login(username, password);
    return login.ok() ? 0 : error_code(login.error());
  }
};

TEST_F(HarkdHostileAuth, LoginsSentAtOnceAreEvaluatedAtMostFailuresMaxTimes) {
  constexpr size_t logins_count = 300;
  const std::vector<uint32_t> statuses = login_at_once(address(), logins_count, "iggy", "wrong");
  EXPECT_EQ(count_of(statuses, Error::invalid_credentials), failures_max)
      << "only failures_max were hashed";
  EXPECT_EQ(count_of(statuses, Error::unauthorized), logins_count - failures_max)
      << "the rest are refused as locked out";
  EXPECT_EQ(login_code("iggy", "iggy"), error_code(Error::unauthorized)) << "locked out";
  EXPECT_TRUE(admin_->get_streams().ok()) << "sessions already open are not affected";
}

TEST_F(HarkdHostileAuth, ValidLoginsBetweenGuessesDoNotResetTheGuessesAtRoot) {
  create_user("alice", std::nullopt);
  client::Client guesser;
  ASSERT_TRUE(guesser.connect(address()).ok());
  std::vector<uint32_t> guesses;
  std::vector<uint32_t> valid;
  for (int i = 0; i < 20; i++) {
    const auto guess = guesser.login("iggy", "guess-" + std::to_string(i));
    guesses.push_back(guess.ok() ? 0 : error_code(guess.error()));
    if (i % 2 == 1) valid.push_back(login_code("alice", "secret"));
  }
  EXPECT_EQ(count_of(guesses, Error::invalid_credentials), failures_max);
  EXPECT_EQ(count_of(guesses, Error::unauthorized), guesses.size() - failures_max);
  // Before the lockout (the 5th guess, at i = 4) alice logged in twice; after it, never.
  ASSERT_EQ(valid.size(), 10u);
  EXPECT_EQ(std::count(valid.begin(), valid.end(), 0u), 2);
  EXPECT_EQ(count_of(valid, Error::unauthorized), 8u);
}

TEST_F(HarkdHostileAuth, UnknownAndInactiveUsersAnswerTheSameAndAreThrottledAlike) {
  create_user("frank", std::nullopt, 2);
  EXPECT_EQ(login_code("frank", "wrong"), error_code(Error::invalid_credentials));
  EXPECT_EQ(login_code("nobody", "wrong"), error_code(Error::invalid_credentials));
  EXPECT_EQ(login_code("frank", "secret"), error_code(Error::user_inactive))
      << "47 only with the right password";
  // Two failures so far (47 is not a guess); three more lock the address out.
  for (uint32_t i = 2; i < failures_max; i++) {
    EXPECT_EQ(login_code(i % 2 == 0 ? "frank" : "nobody", "wrong"),
              error_code(Error::invalid_credentials));
  }
  EXPECT_EQ(login_code("frank", "secret"), error_code(Error::unauthorized));
  EXPECT_EQ(login_code("nobody", "wrong"), error_code(Error::unauthorized));
}

TEST_F(HarkdHostileAuth, AUserManagerCannotTakeOverRootNorGrantItselfPermissions) {
  Permissions manager;
  manager.global.manage_users = true;
  manager.global.read_users = true;
  const uint32_t id = create_user("mallory", manager);
  const uint32_t bob = create_user("bob", std::nullopt);
  client::Client mallory;
  ASSERT_TRUE(mallory.connect(address()).ok());
  ASSERT_TRUE(mallory.login("mallory", "secret").ok());
  Permissions everything = manager;
  everything.global.manage_servers = true;
  everything.global.send_messages = true;
  EXPECT_EQ(
      mallory.update_permissions({.user_id = Identifier::numeric(id), .permissions = everything})
          .error(),
      Error::cannot_change_permissions);
  EXPECT_EQ(mallory.update_user({.user_id = Identifier::numeric(root_id), .status = 2}).error(),
            Error::unauthorized);
  EXPECT_EQ(
      mallory.update_user({.user_id = Identifier::numeric(root_id), .username = "pwned"}).error(),
      Error::unauthorized);
  EXPECT_EQ(mallory.update_permissions({.user_id = Identifier::numeric(root_id)}).error(),
            Error::cannot_change_permissions);
  EXPECT_EQ(mallory
                .change_password({.user_id = Identifier::numeric(root_id),
                                  .current_password = "iggy",
                                  .new_password = "taken-over"})
                .error(),
            Error::unauthorized);
  EXPECT_EQ(mallory.delete_user({.user_id = Identifier::numeric(root_id)}).error(),
            Error::cannot_delete_user);
  // Other users it still manages.
  EXPECT_TRUE(mallory.update_user({.user_id = Identifier::numeric(bob), .status = 2}).ok());
  // Root is as it was and logs in; mallory has what root gave it.
  EXPECT_EQ(login_code("iggy", "iggy"), 0u);
  const auto root = admin_->get_user({.user_id = Identifier::numeric(root_id)});
  ASSERT_TRUE(root.ok() && root->has_value());
  EXPECT_EQ((*root)->user.username, "iggy");
  EXPECT_EQ((*root)->user.status, 1u);
  EXPECT_TRUE((*root)->permissions.has_value() && (*root)->permissions->global.manage_servers);
  const auto self = admin_->get_user({.user_id = Identifier::numeric(id)});
  ASSERT_TRUE(self.ok() && self->has_value());
  EXPECT_EQ((*self)->permissions, manager);
}

TEST_F(HarkdHostileAuth, PasswordsWithANulByteAreRefused) {
  EXPECT_EQ(
      admin_->create_user({.username = "alice", .password = "abc\0secret"s, .status = 1}).error(),
      Error::invalid_password);
  const auto alice = admin_->get_user({.user_id = *Identifier::named("alice")});
  ASSERT_TRUE(alice.ok());
  EXPECT_FALSE(alice->has_value()) << "not created";
  const uint32_t bob = create_user("bob", std::nullopt);
  EXPECT_EQ(login_code("bob", "secret\0anything"s), error_code(Error::invalid_credentials));
  EXPECT_EQ(admin_
                ->change_password({.user_id = Identifier::numeric(bob),
                                   .current_password = "secret",
                                   .new_password = "new\0password"s})
                .error(),
            Error::invalid_password);
  EXPECT_EQ(login_code("bob", "secret"), 0u) << "the password is unchanged";
}

// One shard, one hash thread, a queue of 4: logins sent at once beyond what waits are refused
// with 5 FeatureUnavailable (not queued without bound), and harkd says why.
class HarkdFullAuthQueue : public HarkdHostileAuth {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.shards_count = 1;
    // 200 connections from one address: past the per-address admission cap, as above.
    options.extra_args = {"--auth-threads",
                          "1",
                          "--auth-queue-max",
                          "4",
                          "--unauthenticated-per-address-max",
                          "1000"};
    return options;
  }
};

TEST_F(HarkdFullAuthQueue, LoginsPastTheQueueAreRefusedWithACode) {
  constexpr size_t logins_count = 200;
  const std::vector<uint32_t> statuses = login_at_once(address(), logins_count, "iggy", "iggy");
  const size_t logged_in = static_cast<size_t>(std::count(statuses.begin(), statuses.end(), 0u));
  const size_t refused = count_of(statuses, Error::feature_unavailable);
  EXPECT_EQ(logged_in + refused, logins_count) << "every login answered, 0 or 5";
  // At least what the queue holds (the thread may not have taken the first one yet).
  EXPECT_GE(logged_in, 4u);
  EXPECT_GE(refused, 1u);
  EXPECT_EQ(login_code("iggy", "iggy"), 0u) << "the queue drained";
  harkd_.stop();
  EXPECT_NE(harkd_.stderr_tail(400).find("auth.queue_max"), std::string::npos)
      << harkd_.stderr_tail();
}

}  // namespace
}  // namespace hark::test
