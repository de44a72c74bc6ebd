// Covers users, permissions and personal access tokens against a real harkd (issue #9): every
// user and token command with Iggy 0.8.0's answers and codes, permission enforcement for a
// representative set of users (poll one topic but not send, read-only on one stream,
// inactive, deleted while logged in, no login at all), bad input (wrong password, unknown or
// expired token, over-long names), login throttling, and the root user's settings.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;
using protocol::Permissions;
using protocol::StreamPermissions;
using protocol::TopicPermissions;

constexpr uint32_t root_id = 0;

// Stream 0 / topic 0 poll only, at topic level.
Permissions poll_only_permissions() {
  Permissions permissions;
  StreamPermissions stream{.stream_id = 0};
  stream.topics.push_back({.topic_id = 0, .poll_messages = true});
  permissions.streams.push_back(stream);
  return permissions;
}

// Stream 0 read-only, at stream level.
Permissions stream_reader_permissions() {
  Permissions permissions;
  permissions.streams.push_back({.stream_id = 0, .read_stream = true});
  return permissions;
}

class HarkdUsers : public HarkdTest {
 protected:
  // A client logged in as `username` with `password` (null if the login fails).
  std::unique_ptr<client::Client> login_as(const std::string& username,
                                           const std::string& password = "secret") {
    auto client = std::make_unique<client::Client>();
    if (!client->connect(address()).ok()) return nullptr;
    if (!client->login(username, password).ok()) return nullptr;
    return client;
  }

  protocol::PollMessagesRequest poll_topic() const {
    return poll_request(1, 0, offset_strategy(0), 10, std::chrono::microseconds(0));
  }
};

TEST_F(HarkdUsers, RootIsUserZeroWithEveryPermission) {
  const auto root = admin_->get_user({.user_id = Identifier::numeric(root_id)});
  ASSERT_TRUE(root.ok()) << error_name(root.error());
  ASSERT_TRUE(root->has_value());
  EXPECT_EQ((*root)->user.username, "iggy");
  EXPECT_EQ((*root)->user.status, 1u);
  ASSERT_TRUE((*root)->permissions.has_value());
  EXPECT_TRUE((*root)->permissions->global.manage_servers);
  EXPECT_TRUE((*root)->permissions->global.send_messages);
  EXPECT_EQ(admin_->delete_user({.user_id = Identifier::numeric(root_id)}).error(),
            Error::cannot_delete_user);
  EXPECT_EQ(admin_
                ->update_permissions(
                    {.user_id = Identifier::numeric(root_id), .permissions = Permissions{}})
                .error(),
            Error::cannot_change_permissions);
}

TEST_F(HarkdUsers, CreateGetListUpdateAndDeleteAUser) {
  const auto created = admin_->create_user({.username = "alice",
                                            .password = "secret",
                                            .status = 1,
                                            .permissions = poll_only_permissions()});
  ASSERT_TRUE(created.ok()) << error_name(created.error());
  EXPECT_EQ(created->user.username, "alice");
  EXPECT_GT(created->user.id, root_id);
  EXPECT_GT(created->user.created_at, 0u);
  EXPECT_EQ(created->permissions, poll_only_permissions());
  const uint32_t id = created->user.id;

  const auto by_name = admin_->get_user({.user_id = *Identifier::named("alice")});
  ASSERT_TRUE(by_name.ok() && by_name->has_value());
  EXPECT_EQ((*by_name)->user.id, id);
  EXPECT_EQ((*by_name)->permissions, poll_only_permissions());

  const auto users = admin_->get_users();
  ASSERT_TRUE(users.ok());
  ASSERT_EQ(users->users.size(), 2u);
  EXPECT_EQ(users->users[0].username, "iggy");
  EXPECT_EQ(users->users[1].username, "alice");

  EXPECT_EQ(admin_->create_user({.username = "alice", .password = "other", .status = 1}).error(),
            Error::user_already_exists);
  ASSERT_TRUE(
      admin_->update_user({.user_id = Identifier::numeric(id), .username = "alicia", .status = 2})
          .ok());
  const auto updated = admin_->get_user({.user_id = Identifier::numeric(id)});
  ASSERT_TRUE(updated.ok() && updated->has_value());
  EXPECT_EQ((*updated)->user.username, "alicia");
  EXPECT_EQ((*updated)->user.status, 2u);

  ASSERT_TRUE(admin_->update_permissions({.user_id = Identifier::numeric(id)}).ok());
  const auto stripped = admin_->get_user({.user_id = Identifier::numeric(id)});
  ASSERT_TRUE(stripped.ok() && stripped->has_value());
  EXPECT_FALSE((*stripped)->permissions.has_value());

  ASSERT_TRUE(admin_->delete_user({.user_id = *Identifier::named("alicia")}).ok());
  const auto gone = admin_->get_user({.user_id = Identifier::numeric(id)});
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value()) << "an unknown user is an empty answer";
  EXPECT_EQ(admin_->delete_user({.user_id = Identifier::numeric(id)}).error(),
            Error::resource_not_found);
}

TEST_F(HarkdUsers, BadUserInputIsRefusedWithIggysCodes) {
  EXPECT_EQ(admin_->create_user({.username = std::string(51, 'u'), .password = "secret"}).error(),
            Error::invalid_username);
  EXPECT_EQ(admin_->create_user({.username = "ab", .password = "secret"}).error(),
            Error::invalid_username);
  EXPECT_EQ(admin_->create_user({.username = "bob", .password = "pw"}).error(),
            Error::invalid_password);
  EXPECT_EQ(admin_->create_user({.username = "bob", .password = std::string(101, 'p')}).error(),
            Error::invalid_password);
  EXPECT_EQ(admin_->create_user({.username = "bob", .password = "secret", .status = 3}).error(),
            Error::invalid_command);
  create_user("bob", std::nullopt);
  EXPECT_EQ(
      admin_->update_user({.user_id = *Identifier::named("bob"), .username = std::string(51, 'u')})
          .error(),
      Error::invalid_username);
  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  EXPECT_EQ(client.login("bob", "wrong-password").error(), Error::invalid_credentials);
  EXPECT_EQ(client.login("nobody", "secret").error(), Error::invalid_credentials);
  EXPECT_EQ(client.login(std::string(51, 'u'), "secret").error(), Error::invalid_username);
  EXPECT_TRUE(client.login("bob", "secret").ok());
  EXPECT_TRUE(admin_->ping().ok());
}

TEST_F(HarkdUsers, PasswordsChangeWithTheCurrentOneOrByAUserManager) {
  const uint32_t id = create_user("carol", std::nullopt);
  auto carol = login_as("carol");
  ASSERT_NE(carol, nullptr);
  EXPECT_EQ(carol
                ->change_password({.user_id = Identifier::numeric(id),
                                   .current_password = "wrong",
                                   .new_password = "newsecret"})
                .error(),
            Error::invalid_credentials);
  EXPECT_EQ(carol
                ->change_password({.user_id = Identifier::numeric(root_id),
                                   .current_password = "iggy",
                                   .new_password = "hijacked"})
                .error(),
            Error::unauthorized)
      << "another user's password needs manage_users";
  ASSERT_TRUE(carol
                  ->change_password({.user_id = Identifier::numeric(id),
                                     .current_password = "secret",
                                     .new_password = "newsecret"})
                  .ok());
  EXPECT_EQ(login_as("carol", "secret"), nullptr);
  EXPECT_NE(login_as("carol", "newsecret"), nullptr);
  EXPECT_EQ(admin_
                ->change_password({.user_id = *Identifier::named("nobody"),
                                   .current_password = "whatever",
                                   .new_password = "whatever"})
                .error(),
            Error::resource_not_found);
}

TEST_F(HarkdUsers, EveryCommandButPingAndLoginNeedsALogin) {
  create_stream_and_topic(1);
  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  EXPECT_TRUE(client.ping().ok());
  EXPECT_EQ(client.get_streams().error(), Error::unauthenticated);
  EXPECT_EQ(client.get_users().error(), Error::unauthenticated);
  EXPECT_EQ(client.get_me().error(), Error::unauthenticated);
  EXPECT_EQ(client.create_user({.username = "eve", .password = "secret"}).error(),
            Error::unauthenticated);
  EXPECT_EQ(client.get_personal_access_tokens().error(), Error::unauthenticated);
  EXPECT_EQ(client.create_personal_access_token({.name = "token"}).error(), Error::unauthenticated);
  EXPECT_EQ(client.poll_messages(poll_topic()).error(), Error::unauthenticated);
  // Logging out ends the session.
  ASSERT_TRUE(client.login("iggy", "iggy").ok());
  ASSERT_TRUE(client.logout().ok());
  EXPECT_EQ(client.get_streams().error(), Error::unauthenticated);
}

TEST_F(HarkdUsers, AUserAllowedToPollOneTopicCannotSendOrReadElsewhere) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "hello").ok());
  ASSERT_TRUE(admin_->create_stream({.name = "other"}).ok());
  create_user("poller", poll_only_permissions());
  auto poller = login_as("poller");
  ASSERT_NE(poller, nullptr);

  const auto polled = poller->poll_messages(poll_topic());
  ASSERT_TRUE(polled.ok()) << error_name(polled.error());
  EXPECT_EQ(payloads_of(polled->messages()), std::vector<std::string>{"hello"});
  // By name too: the names resolve to the ids the permissions name.
  auto by_name = poll_topic();
  by_name.stream_id = *Identifier::named("s");
  by_name.topic_id = *Identifier::named("t");
  EXPECT_TRUE(poller->poll_messages(by_name).ok());
  EXPECT_TRUE(poller
                  ->store_consumer_offset({.consumer = {.kind = protocol::ConsumerKind::consumer,
                                                        .id = Identifier::numeric(1)},
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = 0,
                                           .offset = 0})
                  .ok());

  EXPECT_EQ(send_text(*poller, protocol::Partitioning::partition(0), "nope").error(),
            Error::unauthorized);
  EXPECT_EQ(poller->get_stream({.stream_id = Identifier::numeric(0)}).error(), Error::unauthorized);
  EXPECT_EQ(poller->get_streams().error(), Error::unauthorized);
  EXPECT_EQ(poller->get_users().error(), Error::unauthorized);
  EXPECT_EQ(poller->get_stats().error(), Error::unauthorized);
  EXPECT_EQ(poller->get_clients().error(), Error::unauthorized);
  EXPECT_EQ(poller->create_stream({.name = "mine"}).error(), Error::unauthorized);
  EXPECT_EQ(
      poller
          ->delete_topic({.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)})
          .error(),
      Error::unauthorized);
  // A missing stream is answered before permissions, as in 0.8.0.
  EXPECT_EQ(poller->delete_stream({.stream_id = Identifier::numeric(42)}).error(),
            Error::stream_id_not_found);
  // Its own user it may read; others not.
  EXPECT_TRUE(poller->get_user({.user_id = *Identifier::named("poller")}).ok());
  EXPECT_EQ(poller->get_user({.user_id = Identifier::numeric(root_id)}).error(),
            Error::unauthorized);
  // get_me shows who it is; root sees it among the clients.
  const auto me = poller->get_me();
  ASSERT_TRUE(me.ok());
  const auto clients = admin_->get_clients();
  ASSERT_TRUE(clients.ok());
  const auto found =
      std::find_if(clients->clients.begin(), clients->clients.end(),
                   [&](const auto& client) { return client.client_id == me->client.client_id; });
  ASSERT_NE(found, clients->clients.end());
  EXPECT_EQ(found->user_id, me->client.user_id);
  EXPECT_NE(found->user_id, root_id);
}

TEST_F(HarkdUsers, AReadOnlyStreamUserReadsAndPollsButChangesNothing) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "one").ok());
  ASSERT_TRUE(admin_->create_stream({.name = "other"}).ok());
  create_user("reader", stream_reader_permissions());
  auto reader = login_as("reader");
  ASSERT_NE(reader, nullptr);

  const auto stream = reader->get_stream({.stream_id = *Identifier::named("s")});
  ASSERT_TRUE(stream.ok()) << error_name(stream.error());
  EXPECT_TRUE(stream->has_value());
  EXPECT_TRUE(reader->get_topics({.stream_id = Identifier::numeric(0)}).ok());
  EXPECT_TRUE(
      reader->get_topic({.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)})
          .ok());
  EXPECT_TRUE(reader->poll_messages(poll_topic()).ok());

  EXPECT_EQ(send_text(*reader, protocol::Partitioning::partition(0), "nope").error(),
            Error::unauthorized);
  EXPECT_EQ(reader->update_stream({.stream_id = Identifier::numeric(0), .name = "renamed"}).error(),
            Error::unauthorized);
  EXPECT_EQ(
      reader->purge_topic({.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)})
          .error(),
      Error::unauthorized);
  protocol::CreateTopicRequest topic;
  topic.stream_id = Identifier::numeric(0);
  topic.name = "t2";
  topic.partitions_count = 1;
  EXPECT_EQ(reader->create_topic(topic).error(), Error::unauthorized);
  EXPECT_EQ(reader->get_stream({.stream_id = *Identifier::named("other")}).error(),
            Error::unauthorized);
  // A missing stream: the empty answer, before any permission check (0.8.0).
  const auto missing = reader->get_stream({.stream_id = Identifier::numeric(99)});
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST_F(HarkdUsers, GrantedPermissionsApplyToTheNextRequest) {
  create_stream_and_topic(1);
  const uint32_t id = create_user("dave", std::nullopt);
  auto dave = login_as("dave");
  ASSERT_NE(dave, nullptr);
  EXPECT_EQ(dave->poll_messages(poll_topic()).error(), Error::unauthorized);
  ASSERT_TRUE(admin_
                  ->update_permissions(
                      {.user_id = Identifier::numeric(id), .permissions = poll_only_permissions()})
                  .ok());
  EXPECT_TRUE(dave->poll_messages(poll_topic()).ok());
}

TEST_F(HarkdUsers, AnInactiveUserCannotLogIn) {
  const uint32_t id = create_user("frank", std::nullopt, 2);
  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  EXPECT_EQ(client.login("frank", "secret").error(), Error::user_inactive);
  ASSERT_TRUE(admin_->update_user({.user_id = Identifier::numeric(id), .status = 1}).ok());
  const auto login = client.login("frank", "secret");
  ASSERT_TRUE(login.ok()) << error_name(login.error());
  EXPECT_EQ(login->user_id, id);
}

TEST_F(HarkdUsers, ADeletedUsersSessionEnds) {
  create_stream_and_topic(1);
  const uint32_t id = create_user("gina", poll_only_permissions());
  auto gina = login_as("gina");
  ASSERT_NE(gina, nullptr);
  EXPECT_TRUE(gina->poll_messages(poll_topic()).ok());
  ASSERT_TRUE(admin_->delete_user({.user_id = Identifier::numeric(id)}).ok());
  EXPECT_EQ(gina->poll_messages(poll_topic()).error(), Error::unauthenticated);
}

TEST_F(HarkdUsers, DeletingAStreamLeavesPermissionsHarmless) {
  create_stream_and_topic(1);
  create_user("hank", poll_only_permissions());
  auto hank = login_as("hank");
  ASSERT_NE(hank, nullptr);
  ASSERT_TRUE(admin_->delete_stream({.stream_id = Identifier::numeric(0)}).ok());
  EXPECT_EQ(hank->poll_messages(poll_topic()).error(), Error::stream_id_not_found);
  const auto user = admin_->get_user({.user_id = *Identifier::named("hank")});
  ASSERT_TRUE(user.ok() && user->has_value());
  EXPECT_TRUE(admin_->ping().ok());
}

TEST_F(HarkdUsers, PersonalAccessTokensLogInUntilDeletedOrExpired) {
  const uint32_t id = create_user("ivan", std::nullopt);
  auto ivan = login_as("ivan");
  ASSERT_NE(ivan, nullptr);
  const auto created = ivan->create_personal_access_token({.name = "ci-token", .expiry = 0});
  ASSERT_TRUE(created.ok()) << error_name(created.error());
  const std::string token = created->token;
  EXPECT_GE(token.size(), 32u);
  EXPECT_EQ(ivan->create_personal_access_token({.name = "ci-token"}).error(),
            Error::personal_access_token_already_exists);
  EXPECT_EQ(ivan->create_personal_access_token({.name = "ab"}).error(),
            Error::invalid_personal_access_token_name);
  EXPECT_EQ(ivan->create_personal_access_token({.name = std::string(31, 'n')}).error(),
            Error::invalid_personal_access_token_name);
  // Expires 1 µs after its creation: expired by the time it is used.
  ASSERT_TRUE(ivan->create_personal_access_token({.name = "short", .expiry = 1}).ok());
  const auto short_lived = ivan->create_personal_access_token({.name = "short2", .expiry = 1});
  ASSERT_TRUE(short_lived.ok());

  const auto tokens = ivan->get_personal_access_tokens();
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->tokens.size(), 3u);
  EXPECT_EQ(tokens->tokens[0].name, "ci-token");
  EXPECT_EQ(tokens->tokens[0].expiry_at, 0u);
  EXPECT_GT(tokens->tokens[1].expiry_at, 0u);
  const auto root_tokens = admin_->get_personal_access_tokens();
  ASSERT_TRUE(root_tokens.ok());
  EXPECT_TRUE(root_tokens->tokens.empty()) << "tokens are per user";

  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  const auto login = client.login_with_token(token);
  ASSERT_TRUE(login.ok()) << error_name(login.error());
  EXPECT_EQ(login->user_id, id);
  EXPECT_EQ(client.login_with_token(short_lived->token).error(),
            Error::personal_access_token_expired);
  EXPECT_EQ(client.login_with_token(token.substr(0, 20) + "x").error(), Error::resource_not_found);
  EXPECT_EQ(client.login_with_token("not-a-token").error(), Error::resource_not_found);

  ASSERT_TRUE(ivan->delete_personal_access_token({.name = "ci-token"}).ok());
  EXPECT_EQ(ivan->delete_personal_access_token({.name = "ci-token"}).error(),
            Error::resource_not_found);
  client::Client late;
  ASSERT_TRUE(late.connect(address()).ok());
  EXPECT_EQ(late.login_with_token(token).error(), Error::resource_not_found);
}

TEST_F(HarkdUsers, AnInactiveUsersTokenCannotLogIn) {
  const uint32_t id = create_user("judy", std::nullopt);
  auto judy = login_as("judy");
  ASSERT_NE(judy, nullptr);
  const auto created = judy->create_personal_access_token({.name = "ci-token"});
  ASSERT_TRUE(created.ok()) << error_name(created.error());
  const Status deactivated = admin_->update_user({.user_id = Identifier::numeric(id), .status = 2});
  ASSERT_TRUE(deactivated.ok()) << error_name(deactivated.error());
  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  EXPECT_EQ(client.login_with_token(created->token).error(), Error::user_inactive);
}

class HarkdLoginThrottle : public HarkdUsers {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--login-failures-max", "3", "--login-lockout", "10m"};
    return options;
  }
};

TEST_F(HarkdLoginThrottle, RepeatedFailuresLockTheAddressOut) {
  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  EXPECT_EQ(client.login("iggy", "wrong1").error(), Error::invalid_credentials);
  EXPECT_EQ(client.login("iggy", "wrong2").error(), Error::invalid_credentials);
  EXPECT_EQ(client.login("iggy", "wrong3").error(), Error::invalid_credentials);
  // Locked out: even the right password is refused, and a token login too.
  EXPECT_EQ(client.login("iggy", "iggy").error(), Error::unauthorized);
  EXPECT_EQ(client.login_with_token("whatever-token-text").error(), Error::unauthorized);
  client::Client other;
  ASSERT_TRUE(other.connect(address()).ok());
  EXPECT_EQ(other.login("iggy", "iggy").error(), Error::unauthorized) << "per address";
  // Sessions already open are not affected.
  EXPECT_TRUE(admin_->get_streams().ok());
  harkd_.stop();
  EXPECT_NE(harkd_.stderr_tail(200).find("refused for 10m"), std::string::npos)
      << harkd_.stderr_tail();
}

TEST_F(HarkdLoginThrottle, ASuccessResetsTheCount) {
  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  for (int round = 0; round < 3; round++) {
    EXPECT_EQ(client.login("iggy", "wrong").error(), Error::invalid_credentials);
    EXPECT_EQ(client.login("iggy", "wrong").error(), Error::invalid_credentials);
    EXPECT_TRUE(client.login("iggy", "iggy").ok()) << "round " << round;
  }
}

// One shard and one hashing thread: the logins queue on the AuthPool while the shard keeps
// answering. Ordering only (no durations): a ping sent after 40 password logins is answered
// while some of those logins are still unanswered; with hashing on the shard it would come
// after all of them (the shard takes requests in arrival order).
class HarkdAuthPool : public HarkdUsers {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.shards_count = 1;
    options.extra_args = {"--auth-threads", "1"};
    return options;
  }
};

TEST_F(HarkdAuthPool, LoginsHashOffTheShardSoOtherConnectionsAreAnswered) {
  constexpr size_t logins_count = 40;
  std::vector<std::unique_ptr<RawConnection>> logins;
  const protocol::Bytes login = request_frame(protocol::LoginUserRequest{
      .username = "iggy", .password = "iggy", .version = {}, .context = {}});
  for (size_t i = 0; i < logins_count; i++) {
    logins.push_back(std::make_unique<RawConnection>());
    ASSERT_TRUE(logins.back()->connect(address()));
  }
  for (auto& connection : logins) ASSERT_TRUE(connection->send(login));
  RawConnection pinger;
  ASSERT_TRUE(pinger.connect(address()));
  const auto pong = pinger.exchange(request_frame(protocol::PingRequest{}));
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->status, 0u);
  const size_t answered =
      static_cast<size_t>(std::count_if(logins.begin(), logins.end(), [](const auto& connection) {
        return connection->readable_now();
      }));
  EXPECT_LT(answered, logins_count) << "the ping waited for every queued login";
  for (auto& connection : logins) {
    const auto response = connection->read_response(SteadyClock::now() + 60s);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 0u);
  }
}

class HarkdCustomRoot : public HarkdUsers {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--root-username", "admin", "--root-password", "s3cret-root"};
    return options;
  }
  void SetUp() override {
    ASSERT_TRUE(harkd_.start(harkd_options())) << harkd_.error_text();
    admin_ = std::make_unique<client::Client>();
    ASSERT_TRUE(admin_->connect(address()).ok());
    const auto login = admin_->login("admin", "s3cret-root");
    ASSERT_TRUE(login.ok()) << error_name(login.error());
    EXPECT_EQ(login->user_id, root_id);
  }
};

TEST_F(HarkdCustomRoot, TheConfiguredRootReplacesIggyIggy) {
  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  EXPECT_EQ(client.login("iggy", "iggy").error(), Error::invalid_credentials);
  const auto root = admin_->get_user({.user_id = Identifier::numeric(root_id)});
  ASSERT_TRUE(root.ok() && root->has_value());
  EXPECT_EQ((*root)->user.username, "admin");
}

// harkd with the default root password refuses a non-loopback address (exit 2) before it
// binds anything; the test never listens beyond loopback.
TEST(HarkdRootPassword, TheDefaultPasswordIsRefusedOnAPublicAddress) {
  const char* tmp = getenv("TMPDIR");
  std::string directory =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hark-root-XXXXXX";
  ASSERT_NE(mkdtemp(directory.data()), nullptr);
  const std::string command = harkd_path() + " --address 0.0.0.0:0 --shards 1 --data-dir " +
                              directory + "/data > " + directory + "/out 2>&1";
  const int status = system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::error_code ignored;
  std::string output;
  {
    FILE* file = fopen((directory + "/out").c_str(), "r");
    ASSERT_NE(file, nullptr);
    char buffer[4096];
    const size_t read = fread(buffer, 1, sizeof(buffer), file);
    fclose(file);
    output.assign(buffer, read);
  }
  EXPECT_NE(output.find("default password"), std::string::npos) << output;
  std::filesystem::remove_all(directory, ignored);
}

}  // namespace
}  // namespace hark::test
