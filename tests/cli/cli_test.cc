// Covers the whole CLI in-process (run_cli) against a scripted fake server on 127.0.0.1: the
// requests each command sends (including the user and token commands harkd does not serve
// yet), how server and transport errors are printed, and consume's polling loop (explicit
// offsets without auto-commit, polling again after an early empty answer, joining a group,
// stopping a parked poll), and wait and lag (the notification requests they send, what they
// print, re-issuing after an early empty answer, the flips of lag --follow, and their own exit
// statuses). Exit statuses: 0 done, 1 failed, 2 bad arguments; wait and lag: 0 fired, 1 timed
// out, 2 any other failure.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/notify_responses.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/request.h"
#include "hark/protocol/stream_responses.h"
#include "hark/protocol/system_responses.h"
#include "hark/protocol/user_responses.h"
#include "hark/tests/cli/cli_runner.h"
#include "hark/tests/client/fake_server.h"

namespace hark::cli {
namespace {

using client::test::FakeConnection;
using client::test::FakeServer;
using protocol::Bytes;
using test::CliRun;
using test::run_cli_in_process;

Bytes payload_of(const auto& response) {
  Bytes payload;
  EXPECT_TRUE(protocol::encode_payload(response, payload).ok());
  return payload;
}

// The next request, decoded as a T (a default T, and a test failure, if it is not one). A
// SendMessagesRequest holds views into its payload: pass `payload` to keep the bytes alive.
template <typename T>
T next_request(FakeConnection& connection, Bytes* payload = nullptr) {
  auto received = connection.read_request();
  EXPECT_TRUE(received.has_value());
  if (!received) return T{};
  EXPECT_EQ(received->code, protocol::command_code(T::code));
  if (payload != nullptr) *payload = std::move(received->payload);
  const std::span<const std::byte> bytes = payload != nullptr ? *payload : received->payload;
  Result<protocol::DecodedRequest> decoded = protocol::decode_request(received->code, bytes);
  EXPECT_TRUE(decoded.ok());
  if (!decoded.ok() || !std::holds_alternative<T>(decoded->request)) return T{};
  return std::get<T>(decoded->request);
}

void accept_login(FakeConnection& connection) {
  const auto login = next_request<protocol::LoginUserRequest>(connection);
  EXPECT_EQ(login.username, "iggy");
  EXPECT_EQ(login.password, "iggy");
  connection.send_ok(payload_of(protocol::IdentityResponse{.user_id = 0}));
}

void drain(FakeConnection& connection) {
  while (connection.read_request()) {
  }
}

// A poll answer from `partition` with the given payloads at offsets first, first + 1, ...
Bytes poll_answer(uint32_t partition, uint64_t first, const std::vector<std::string>& payloads) {
  Bytes blob;
  protocol::Writer writer(blob);
  for (const std::string& payload : payloads) {
    protocol::write_message(writer, {.payload = protocol::as_bytes(payload)});
  }
  std::span<std::byte> rest(blob);
  for (uint64_t offset = first; !rest.empty(); ++offset) {
    const size_t size = protocol::message_size(rest);
    protocol::stamp_message(rest.first(size), {.offset = offset, .timestamp = 1});
    rest = rest.subspan(size);
  }
  const auto count = static_cast<uint32_t>(payloads.size());
  return payload_of(
      protocol::PollMessagesResponse{.header = {.partition_id = partition,
                                                .current_offset = first + count,
                                                .messages_count = count},
                                     .messages = *protocol::MessageBatchView::parse(blob, count)});
}

std::vector<std::string> with_address(const FakeServer& server, std::vector<std::string> args) {
  args.push_back("--address");
  args.push_back(server.address());
  return args;
}

TEST(Cli, UserCreateSendsTheRequestAndPrintsTheRefusalCleanly) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto create = next_request<protocol::CreateUserRequest>(connection);
    EXPECT_EQ(create.username, "alice");
    EXPECT_EQ(create.password, "secret");
    EXPECT_EQ(create.status, 2);
    ASSERT_TRUE(create.permissions.has_value());
    EXPECT_TRUE(create.permissions->global.read_streams);
    EXPECT_FALSE(create.permissions->global.manage_users);
    connection.send_error(Error::feature_unavailable);
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"user", "create", "alice", "secret", "--status", "inactive",
                            "--permissions", "read_streams,poll_messages"}));
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err, "error: FeatureUnavailable (5): Feature is unavailable\n");
  EXPECT_EQ(run.out, "");
}

TEST(Cli, TokenCreateSendsNameAndExpiryInMicroseconds) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto create = next_request<protocol::CreatePersonalAccessTokenRequest>(connection);
    EXPECT_EQ(create.name, "ci");
    EXPECT_EQ(create.expiry, 86'400'000'000u);
    connection.send_ok(payload_of(protocol::RawPersonalAccessTokenResponse{.token = "t0k3n"}));
    drain(connection);
  });
  const CliRun run =
      run_cli_in_process(with_address(server, {"token", "create", "ci", "--expiry", "24h"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "t0k3n\n");
}

TEST(Cli, ATokenInTheEnvironmentLogsInWithIt) {
  FakeServer server([](FakeConnection& connection) {
    const auto login = next_request<protocol::LoginWithPersonalAccessTokenRequest>(connection);
    EXPECT_EQ(login.token, "from-env");
    connection.send_error(Error::invalid_personal_access_token);
    drain(connection);
  });
  const CliRun run =
      run_cli_in_process(with_address(server, {"stream", "list"}), {{{"HARK_TOKEN", "from-env"}}});
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err, "error: InvalidPersonalAccessToken (53): Invalid personal access token\n");
}

TEST(Cli, UserListAndGetPrintWhatTheServerAnswers) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    next_request<protocol::GetUsersRequest>(connection);
    connection.send_ok(payload_of(protocol::UsersResponse{
        .users = {
            {.id = 0, .created_at = 0, .status = 1, .username = "iggy"},
            {.id = 7, .created_at = 1'700'000'000'000'000, .status = 2, .username = "alice"}}}));
    drain(connection);
  });
  const CliRun list = run_cli_in_process(with_address(server, {"user", "list"}));
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_EQ(list.out,
            "ID  USERNAME  STATUS    CREATED\n"
            "0   iggy      active    -\n"
            "7   alice     inactive  2023-11-14T22:13:20Z\n");

  protocol::Permissions permissions;
  permissions.global.read_streams = true;
  permissions.global.poll_messages = true;
  FakeServer details_server([&](FakeConnection& connection) {
    accept_login(connection);
    const auto get = next_request<protocol::GetUserRequest>(connection);
    EXPECT_EQ(get.user_id.name(), "alice");
    connection.send_ok(payload_of(protocol::UserDetailsResponse{
        .user = {.id = 7, .status = 1, .username = "alice"}, .permissions = permissions}));
    drain(connection);
  });
  const CliRun get = run_cli_in_process(with_address(details_server, {"user", "get", "alice"}));
  EXPECT_EQ(get.status, 0) << get.err;
  EXPECT_NE(get.out.find("alice"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("read_streams,poll_messages"), std::string::npos) << get.out;
}

// harkd serves no users yet: each user and token command reaches it with the request Iggy
// 0.8.0 expects and prints its refusal by name and code, exit status 1.
TEST(Cli, UserAndTokenCommandsReportFeatureUnavailableByNameAndCode) {
  struct Case {
    std::vector<std::string> args;
    protocol::Command expected;
  };
  const std::vector<Case> cases = {
      {{"user", "permissions", "alice", "send_messages,poll_messages"},
       protocol::Command::update_permissions},
      {{"user", "password", "alice", "old", "new"}, protocol::Command::change_password},
      {{"user", "update", "alice", "--status", "active"}, protocol::Command::update_user},
      {{"user", "delete", "alice"}, protocol::Command::delete_user},
      {{"token", "list"}, protocol::Command::get_personal_access_tokens},
      {{"token", "delete", "ci"}, protocol::Command::delete_personal_access_token}};
  for (const Case& c : cases) {
    FakeServer server([&](FakeConnection& connection) {
      accept_login(connection);
      const auto received = connection.read_request();
      ASSERT_TRUE(received.has_value());
      EXPECT_EQ(received->code, protocol::command_code(c.expected));
      connection.send_error(Error::feature_unavailable);
      drain(connection);
    });
    const CliRun run = run_cli_in_process(with_address(server, c.args));
    EXPECT_EQ(run.status, 1) << testing::PrintToString(c.args);
    EXPECT_EQ(run.err, "error: FeatureUnavailable (5): Feature is unavailable\n")
        << testing::PrintToString(c.args);
    EXPECT_EQ(run.out, "");
  }
}

TEST(Cli, UserPermissionsSendsTheGlobalSet) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto update = next_request<protocol::UpdatePermissionsRequest>(connection);
    EXPECT_EQ(update.user_id.number(), 3u);
    ASSERT_TRUE(update.permissions.has_value());
    EXPECT_TRUE(update.permissions->global.send_messages);
    EXPECT_FALSE(update.permissions->global.manage_servers);
    EXPECT_TRUE(update.permissions->streams.empty());
    connection.send_ok({});
    drain(connection);
  });
  const CliRun run =
      run_cli_in_process(with_address(server, {"user", "permissions", "3", "send_messages"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "set the permissions of user 3 to send_messages\n");
}

TEST(Cli, TokenListPrintsNamesAndExpiry) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    next_request<protocol::GetPersonalAccessTokensRequest>(connection);
    connection.send_ok(payload_of(protocol::PersonalAccessTokensResponse{
        .tokens = {{.name = "ci", .expiry_at = 0},
                   {.name = "deploy", .expiry_at = 1'700'000'000'000'000}}}));
    drain(connection);
  });
  const CliRun run = run_cli_in_process(with_address(server, {"token", "list"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out,
            "NAME    EXPIRES\n"
            "ci      never\n"
            "deploy  2023-11-14T22:13:20Z\n");
}

TEST(Cli, ATokenFlagLogsInWithItInsteadOfThePassword) {
  FakeServer server([](FakeConnection& connection) {
    const auto login = next_request<protocol::LoginWithPersonalAccessTokenRequest>(connection);
    EXPECT_EQ(login.token, "from-flag");
    connection.send_error(Error::feature_unavailable);
    drain(connection);
  });
  const CliRun run =
      run_cli_in_process(with_address(server, {"token", "list", "--token", "from-flag"}));
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err, "error: FeatureUnavailable (5): Feature is unavailable\n");
}

TEST(Cli, BadUserAndTokenArgumentsExitTwoBeforeAnyConnection) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"user", "create", "alice"},
           {"user", "create", "", "secret"},
           {"user", "create", "alice", "secret", "--status", "asleep"},
           {"user", "permissions", "alice", "fly"},
           {"user", "update", "alice"},
           {"user", "password", "alice", "only-one"},
           {"token", "create", "ci", "--expiry", "soon"},
           {"token", "delete"}}) {
    const CliRun run = run_cli_in_process(args);
    EXPECT_EQ(run.status, 2) << testing::PrintToString(args);
    EXPECT_NE(run.err, "");
    EXPECT_EQ(run.out, "");
  }
}

TEST(Cli, AServerErrorShowsNameCodeAndTheMessageAboutWhatWasAsked) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto get = next_request<protocol::DeleteStreamRequest>(connection);
    EXPECT_EQ(get.stream_id.number(), 7u);
    connection.send_error(Error::stream_id_not_found);
    drain(connection);
  });
  const CliRun run = run_cli_in_process(with_address(server, {"stream", "delete", "7"}));
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err, "error: StreamIdNotFound (1009): Stream with ID: 7 was not found.\n");
}

TEST(Cli, AMissingStreamAnsweredEmptyIsReportedAsNotFound) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto get = next_request<protocol::GetStreamRequest>(connection);
    EXPECT_EQ(get.stream_id.name(), "orders");
    connection.send_ok({});  // 0.8.0's "not found".
    drain(connection);
  });
  const CliRun run = run_cli_in_process(with_address(server, {"stream", "get", "orders"}));
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err, "error: StreamNameNotFound (1010): Stream with name: orders was not found.\n");
}

TEST(Cli, ALostConnectionIsATransportError) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    ASSERT_TRUE(connection.read_request().has_value());
    connection.close();
  });
  const CliRun run = run_cli_in_process(with_address(server, {"stream", "list"}));
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.err, "error: connection to " + server.address() + " failed: Disconnected (8)\n");
}

TEST(Cli, BadArgumentsExitTwoBeforeAnyConnection) {
  // No server at all: a usage error must not get as far as connecting.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"consume", "s", "t", "--from", "sideways"},
           {"consume", "s", "t", "--wait", "5"},
           {"produce", "s", "t", "--partition", "1", "--key", "k"},
           {"topic", "create", "s"},
           {"stream", "create", ""},
           {"stream", "frobnicate"},
           {"stream", "list", "--follow"},
           {"ping", "--address", "nowhere"},
           {"--nope"},
           {}}) {
    const CliRun run = run_cli_in_process(args);
    EXPECT_EQ(run.status, 2) << testing::PrintToString(args);
    EXPECT_NE(run.err, "");
    EXPECT_EQ(run.out, "");
  }
}

TEST(Cli, HelpGoesToStdoutAndExitsZero) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--help"},
                                             {"help"},
                                             {"help", "topic", "create"},
                                             {"topic", "--help"},
                                             {"consume", "-h"}}) {
    const CliRun run = run_cli_in_process(args);
    EXPECT_EQ(run.status, 0) << testing::PrintToString(args);
    EXPECT_NE(run.out.find("usage:"), std::string::npos) << run.out;
    EXPECT_EQ(run.err, "");
  }
}

TEST(Cli, PingNeedsNoLoginAndPrintsTheRoundTrip) {
  FakeServer server([](FakeConnection& connection) {
    next_request<protocol::PingRequest>(connection);
    connection.send_ok({});
    drain(connection);
  });
  const CliRun run = run_cli_in_process(with_address(server, {"ping"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(run.out.starts_with("pong from " + server.address() + ": seq=1 time="));
  EXPECT_TRUE(run.out.ends_with(" us\n")) << run.out;
}

TEST(Cli, ProduceSendsStdinLinesInBatchesAndCountsThem) {
  std::vector<std::string> payloads;
  FakeServer server([&payloads](FakeConnection& connection) {
    accept_login(connection);
    for (int batch = 0; batch < 2; ++batch) {
      Bytes payload;
      const auto send = next_request<protocol::SendMessagesRequest>(connection, &payload);
      EXPECT_EQ(send.partitioning.kind(), protocol::PartitioningKind::messages_key);
      EXPECT_EQ(protocol::as_chars(send.partitioning.key()), "user-1");
      EXPECT_EQ(send.messages.count(), batch == 0 ? 2u : 1u);
      for (const protocol::MessageView message : send.messages) {
        payloads.emplace_back(protocol::as_chars(message.payload()));
      }
      connection.send_ok({});
    }
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"produce", "s", "t", "--key", "user-1", "--batch", "2"}), {},
      "one\n\ntwo\nthree");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "sent 3 messages\n");
  EXPECT_EQ(payloads, (std::vector<std::string>{"one", "two", "three"}));
}

TEST(Cli, ProduceSendsArgumentsToTheGivenPartition) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    Bytes payload;
    const auto send = next_request<protocol::SendMessagesRequest>(connection, &payload);
    EXPECT_EQ(send.partitioning.kind(), protocol::PartitioningKind::partition_id);
    EXPECT_EQ(send.partitioning.partition_id(), 2u);
    EXPECT_EQ(send.messages.count(), 2u);
    connection.send_ok({});
    drain(connection);
  });
  const CliRun run =
      run_cli_in_process(with_address(server, {"produce", "s", "t", "a", "b", "--partition", "2"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "sent 2 messages\n");
}

TEST(Cli, ProduceStoppedByAnErrorTellsWhatWentThrough) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    Bytes payload;
    next_request<protocol::SendMessagesRequest>(connection, &payload);
    connection.send_ok({});
    next_request<protocol::SendMessagesRequest>(connection, &payload);
    connection.send_error(Error::topic_name_not_found);
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"produce", "s", "events", "x", "y", "z", "--batch", "2"}));
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "sent 2 messages\n");
  EXPECT_EQ(run.err,
            "error: TopicNameNotFound (2011): Topic with name: events for stream with ID: s was "
            "not found.\n");
}

TEST(Cli, ProduceWithARateSendsOneMessageAtATime) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    for (int message = 0; message < 3; ++message) {
      Bytes payload;
      const auto send = next_request<protocol::SendMessagesRequest>(connection, &payload);
      EXPECT_EQ(send.messages.count(), 1u);
      EXPECT_EQ(send.partitioning.kind(), protocol::PartitioningKind::balanced);
      connection.send_ok({});
    }
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"produce", "s", "t", "x", "y", "z", "--rate", "1000/s"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "sent 3 messages\n");
}

TEST(Cli, ConsumeWithoutAutoCommitAdvancesWithExplicitOffsets) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto first = next_request<protocol::PollMessagesRequest>(connection);
    EXPECT_EQ(first.strategy.kind, protocol::PollingKind::next);
    EXPECT_FALSE(first.auto_commit);
    EXPECT_EQ(first.wait_timeout_us, 5'000'000u);
    EXPECT_EQ(first.count, 3u);
    connection.send_ok(poll_answer(1, 4, {"a", "b"}));
    const auto second = next_request<protocol::PollMessagesRequest>(connection);
    EXPECT_EQ(second.strategy.kind, protocol::PollingKind::offset);
    EXPECT_EQ(second.strategy.value, 6u);
    EXPECT_EQ(second.partition_id, std::optional<uint32_t>(1));
    EXPECT_EQ(second.count, 1u);
    EXPECT_FALSE(second.auto_commit);
    connection.send_ok(poll_answer(1, 6, {"c"}));
    drain(connection);
  });
  const CliRun run = run_cli_in_process(with_address(
      server, {"consume", "s", "t", "--no-auto-commit", "--count", "3", "--wait", "5s"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "a\nb\nc\n");
}

TEST(Cli, ConsumePollsAgainAfterAnEmptyAnswerThatCameBeforeTheWait) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto first = next_request<protocol::PollMessagesRequest>(connection);
    EXPECT_EQ(first.wait_timeout_us, 60'000'000u);
    connection.send_ok(poll_answer(0, 0, {}));  // As a server whose maximum wait is shorter.
    const auto second = next_request<protocol::PollMessagesRequest>(connection);
    EXPECT_GT(second.wait_timeout_us, 0u);
    EXPECT_LE(second.wait_timeout_us, 60'000'000u);  // What is left of the wait.
    EXPECT_EQ(second.strategy.kind, protocol::PollingKind::next);
    EXPECT_TRUE(second.auto_commit);
    connection.send_ok(poll_answer(0, 0, {"late"}));
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"consume", "s", "t", "--wait", "1m", "--count", "1"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "late\n");
}

TEST(Cli, ConsumeWithAGroupJoinsItFirstAndPollsAsTheGroup) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto join = next_request<protocol::JoinConsumerGroupRequest>(connection);
    EXPECT_EQ(join.group_id.name(), "workers");
    connection.send_ok({});
    const auto poll = next_request<protocol::PollMessagesRequest>(connection);
    EXPECT_EQ(poll.consumer.kind, protocol::ConsumerKind::group);
    EXPECT_EQ(poll.consumer.id.name(), "workers");
    EXPECT_FALSE(poll.partition_id.has_value());
    connection.send_ok(poll_answer(2, 0, {"{\"n\":1}"}));
    const auto store = next_request<protocol::StoreConsumerOffsetRequest>(connection);
    EXPECT_EQ(store.partition_id, std::optional<uint32_t>(2));
    EXPECT_EQ(store.offset, 0u);
    connection.send_ok({});
    next_request<protocol::LeaveConsumerGroupRequest>(connection);
    connection.send_ok({});
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"consume", "s", "t", "--group", "workers", "--no-auto-commit",
                            "--count", "1", "--format", "json"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(run.out.starts_with("{\"partition\":2,\"offset\":0,")) << run.out;
  EXPECT_TRUE(run.out.ends_with(",\"payload\":\"{\\\"n\\\":1}\"}\n")) << run.out;
}

TEST(Cli, AStopEndsAFollowingConsumeWhileItsPollIsParked) {
  Stop stop;
  FakeServer server([&stop](FakeConnection& connection) {
    accept_login(connection);
    const auto poll = next_request<protocol::PollMessagesRequest>(connection);
    EXPECT_EQ(poll.wait_timeout_us, 30'000'000u);  // --follow's default wait.
    stop.request();  // As SIGINT would, with the poll parked on the server.
    drain(connection);
  });
  const CliRun run =
      run_cli_in_process(with_address(server, {"consume", "s", "t", "--follow"}), {}, {}, &stop);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
}

// --- wait and lag ---------------------------------------------------------------------------

template <typename T>
T next_notify_request(FakeConnection& connection) {
  auto received = connection.read_request();
  EXPECT_TRUE(received.has_value());
  if (!received) return T{};
  EXPECT_EQ(received->code, protocol::command_code(T::code));
  Result<protocol::DecodedRequest> decoded =
      protocol::decode_request(received->code, received->payload);
  EXPECT_TRUE(decoded.ok());
  if (!decoded.ok() || !std::holds_alternative<T>(decoded->request)) return T{};
  return std::get<T>(decoded->request);
}

TEST(CliWait, BadArgumentsExitTwoWithAReasonBeforeAnyConnection) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"wait", "s", "t", "--offset", "3", "--consumer", "c"},
           {"wait", "s", "t", "--offset", "3", "--group", "g"},
           {"wait", "s", "t", "--consumer", "c", "--group", "g"},
           {"wait", "s", "t", "--min", "0"},
           {"wait", "s", "t", "--min", "many"},
           {"wait", "s", "t", "--offset", "-1"},
           {"wait", "s", "t", "--timeout", "5"},
           {"wait", "s", "t", "--partition", "4294967296"},
           {"wait", "s", "t", "--follow"},
           {"wait", "s"},
           {"lag", "s", "t", "--above", "3"},
           {"lag", "s", "t", "--consumer", "c"},
           {"lag", "s", "t", "--consumer", "c", "--above", "3", "--below", "1"},
           {"lag", "s", "t", "--group", "g", "--above", "ten"},
           {"lag", "s", "t", "--group", "g", "--above", "0", "--follow"},
           {"lag", "s", "t", "--group", "g", "--below", "18446744073709551615", "--follow"},
           {"lag", "s", "t", "--group", "g", "--below", "1", "--timeout", "soon"},
           {"lag", "s", "t", "--group", "g", "--below", "1", "--offset", "3"}}) {
    const CliRun run = run_cli_in_process(args);
    EXPECT_EQ(run.status, 2) << testing::PrintToString(args);
    EXPECT_TRUE(run.err.starts_with("hark: ")) << run.err;
    EXPECT_NE(run.err.find("usage: hark "), std::string::npos) << run.err;
    EXPECT_EQ(run.out, "");
  }
}

TEST(CliWait, FromTheEndAsksForThePartitionsNextOffsetAndPrintsWhatIsReady) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto get = next_request<protocol::GetTopicRequest>(connection);
    EXPECT_EQ(get.topic_id, *protocol::Identifier::named("t"));
    protocol::TopicDetailsResponse topic{.topic = {.id = 0, .partitions_count = 2, .name = "t"}};
    topic.partitions = {{.id = 0, .current_offset = 3, .messages_count = 4},
                        {.id = 1, .current_offset = 9, .messages_count = 10}};
    connection.send_ok(payload_of(topic));
    const auto wait = next_notify_request<protocol::WaitForMessagesRequest>(connection);
    EXPECT_EQ(wait.partition_id, std::optional<uint32_t>(1));
    EXPECT_EQ(wait.strategy, (protocol::PollingStrategy{protocol::PollingKind::offset, 10}));
    EXPECT_EQ(wait.min_messages, 3u);
    EXPECT_EQ(wait.wait_timeout_us, 30'000'000u);  // No --timeout: the server's maximum.
    connection.send_ok(payload_of(protocol::WaitForMessagesResponse{
        {{.partition_id = 1, .first_offset = 10, .next_offset = 14}}}));
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"wait", "s", "t", "--partition", "1", "--min", "3"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "partition 1: offsets 10..13 ready\n");
}

TEST(CliWait, AnEarlyEmptyAnswerIsAskedAgainWithinTheServersMaximum) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto first = next_notify_request<protocol::WaitForMessagesRequest>(connection);
    EXPECT_EQ(first.consumer.kind, protocol::ConsumerKind::consumer);
    EXPECT_EQ(first.strategy.kind, protocol::PollingKind::next);  // Past its stored offset.
    EXPECT_EQ(first.partition_id, std::nullopt);
    EXPECT_EQ(first.wait_timeout_us, 30'000'000u);  // 1 h asked: one server maximum at a time.
    connection.send_ok({});                         // As when the server's maximum passed.
    const auto second = next_notify_request<protocol::WaitForMessagesRequest>(connection);
    EXPECT_EQ(second.wait_timeout_us, 30'000'000u);
    connection.send_ok(payload_of(protocol::WaitForMessagesResponse{
        {{.partition_id = 0, .first_offset = 7, .next_offset = 8},
         {.partition_id = 2, .first_offset = 0, .next_offset = 3}}}));
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"wait", "s", "t", "--consumer", "c", "--timeout", "1h"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "partition 0: offsets 7..7 ready\npartition 2: offsets 0..2 ready\n");
}

TEST(CliWait, TimeoutZeroChecksOnceAndExitsOneWithNothingPrinted) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto wait = next_notify_request<protocol::WaitForMessagesRequest>(connection);
    EXPECT_EQ(wait.consumer.kind, protocol::ConsumerKind::group);
    EXPECT_EQ(wait.wait_timeout_us, 0u);
    connection.send_ok({});
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"wait", "s", "t", "--group", "g", "--timeout", "0"}));
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "");
}

TEST(CliWait, AServerErrorExitsTwoWithTheCliErrorLine) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    (void)next_notify_request<protocol::WaitForMessagesRequest>(connection);
    connection.send_error(Error::invalid_command);  // A server without the command.
    drain(connection);
  });
  const CliRun run = run_cli_in_process(with_address(server, {"wait", "s", "t", "--offset", "5"}));
  EXPECT_EQ(run.status, 2);
  EXPECT_TRUE(run.err.starts_with("error: InvalidCommand (3)")) << run.err;
}

TEST(CliLag, PrintsTheTotalAndEachPartitionWhenTheWatchFires) {
  FakeServer server([](FakeConnection& connection) {
    accept_login(connection);
    const auto lag = next_notify_request<protocol::WaitForLagRequest>(connection);
    EXPECT_EQ(lag.consumer.kind, protocol::ConsumerKind::group);
    EXPECT_EQ(lag.watch, protocol::LagWatch::above);
    EXPECT_EQ(lag.threshold, 10u);
    connection.send_ok(payload_of(protocol::WaitForLagResponse{
        .total_lag = 12,
        .partitions = {{.partition_id = 0, .next_offset = 10, .stored_offset = 4, .lag = 5},
                       {.partition_id = 1, .next_offset = 7, .lag = 7}}}));
    drain(connection);
  });
  const CliRun run =
      run_cli_in_process(with_address(server, {"lag", "s", "t", "--group", "g", "--above", "10"}));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out,
            "lag 12: above 10\n"
            "  partition 0: lag 5 (next offset 10, stored offset 4)\n"
            "  partition 1: lag 7 (next offset 7, no stored offset)\n");
}

TEST(CliLag, FollowAlternatesTheWatchAndPrintsOneLinePerFlipUntilStopped) {
  Stop stop;
  FakeServer server([&stop](FakeConnection& connection) {
    accept_login(connection);
    const auto first = next_notify_request<protocol::WaitForLagRequest>(connection);
    EXPECT_EQ(first.watch, protocol::LagWatch::below);
    EXPECT_EQ(first.threshold, 5u);
    connection.send_ok(payload_of(protocol::WaitForLagResponse{.total_lag = 2}));
    const auto second = next_notify_request<protocol::WaitForLagRequest>(connection);
    EXPECT_EQ(second.watch, protocol::LagWatch::above);
    EXPECT_EQ(second.threshold, 6u);
    connection.send_ok(payload_of(protocol::WaitForLagResponse{.total_lag = 40}));
    const auto third = next_notify_request<protocol::WaitForLagRequest>(connection);
    EXPECT_EQ(third.watch, protocol::LagWatch::below);
    stop.request();  // As SIGINT would, with the watch parked on the server.
    drain(connection);
  });
  const CliRun run = run_cli_in_process(
      with_address(server, {"lag", "s", "t", "--consumer", "c", "--below", "5", "--follow"}), {},
      {}, &stop);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "lag 2: below 5\nlag 40: no longer below 5\n");
}

}  // namespace
}  // namespace hark::cli
