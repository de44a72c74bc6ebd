// Covers the blocking client library against a scripted fake server on 127.0.0.1: requests go
// out as the SDKs frame them, answers come back decoded, a server error surfaces as its Iggy
// code, responses split into small pieces are reassembled, a waiting poll outlives the normal
// command timeout, a connection lost mid-response is an error, not a hang, and a cancel
// descriptor ends a wait at once.
#include "hark/tools/client/client.h"

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/request.h"
#include "hark/tests/client/fake_server.h"

namespace hark::client {
namespace {

using protocol::Bytes;
using protocol::Identifier;
using test::FakeConnection;
using test::FakeServer;

Bytes payload_of(const auto& response) {
  Bytes payload;
  EXPECT_TRUE(protocol::encode_payload(response, payload).ok());
  return payload;
}

template <typename T>
T decode_received(const FakeConnection::Received& received) {
  EXPECT_EQ(received.code, protocol::command_code(T::code));
  Result<protocol::DecodedRequest> decoded =
      protocol::decode_request(received.code, received.payload);
  EXPECT_TRUE(decoded.ok());
  if (!decoded.ok() || !std::holds_alternative<T>(decoded->request)) return T{};
  return std::get<T>(decoded->request);
}

TEST(Client, LoginSendsTheSdkFrameAndReturnsTheUserId) {
  FakeServer server([](FakeConnection& connection) {
    const auto request = connection.read_request();
    ASSERT_TRUE(request.has_value());
    const auto login = decode_received<protocol::LoginUserRequest>(*request);
    EXPECT_EQ(login.username, "iggy");
    EXPECT_EQ(login.password, "secret");
    EXPECT_EQ(request->payload.size(), 1u + 4u + 1u + 6u + 4u + 4u);
    connection.send_ok(payload_of(protocol::IdentityResponse{.user_id = 7}));
    while (connection.read_request()) {
    }
  });
  Client client;
  ASSERT_TRUE(client.connect(server.address()).ok());
  const Result<protocol::IdentityResponse> identity = client.login("iggy", "secret");
  ASSERT_TRUE(identity.ok()) << error_name(identity.error());
  EXPECT_EQ(identity->user_id, 7u);
}

TEST(Client, ServerErrorIsReturnedAsItsCodeAndTheConnectionStays) {
  FakeServer server([](FakeConnection& connection) {
    ASSERT_TRUE(connection.read_request().has_value());
    connection.send_error(Error::stream_id_not_found);
    ASSERT_TRUE(connection.read_request().has_value());
    connection.send_ok({});
    while (connection.read_request()) {
    }
  });
  Client client;
  ASSERT_TRUE(client.connect(server.address()).ok());
  const auto result = client.delete_stream({.stream_id = Identifier::numeric(3)});
  EXPECT_EQ(result.error(), Error::stream_id_not_found);
  EXPECT_EQ(error_name(result.error()), "StreamIdNotFound");
  EXPECT_TRUE(client.connected());
  EXPECT_TRUE(client.ping().ok());
}

TEST(Client, EmptyPayloadForAGetterMeansNotFound) {
  FakeServer server([](FakeConnection& connection) {
    ASSERT_TRUE(connection.read_request().has_value());
    connection.send_ok({});
    while (connection.read_request()) {
    }
  });
  Client client;
  ASSERT_TRUE(client.connect(server.address()).ok());
  const auto stream = client.get_stream({.stream_id = Identifier::numeric(0)});
  ASSERT_TRUE(stream.ok());
  EXPECT_FALSE(stream->has_value());
}

TEST(Client, ResponsesArrivingInPiecesAreReassembled) {
  protocol::StreamsResponse streams;
  streams.streams.push_back({.id = 0, .name = "first"});
  streams.streams.push_back({.id = 1, .topics_count = 2, .name = "second"});
  FakeServer server([&streams](FakeConnection& connection) {
    ASSERT_TRUE(connection.read_request().has_value());
    Bytes frame;
    ASSERT_TRUE(protocol::encode_response(streams, frame).ok());
    for (const std::byte b : frame) {  // One byte per send, each its own TCP segment.
      connection.send({&b, 1});
      // Not a wait for a signal: the pacing that splits the response is the test.
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    while (connection.read_request()) {
    }
  });
  Client client;
  ASSERT_TRUE(client.connect(server.address()).ok());
  const auto received = client.get_streams();
  ASSERT_TRUE(received.ok()) << error_name(received.error());
  EXPECT_EQ(*received, streams);
}

TEST(Client, UndecodableResponseIsInvalidBytesResponse) {
  FakeServer server([](FakeConnection& connection) {
    ASSERT_TRUE(connection.read_request().has_value());
    const std::byte three[3] = {};
    connection.send_ok(three);
    while (connection.read_request()) {
    }
  });
  Client client;
  ASSERT_TRUE(client.connect(server.address()).ok());
  EXPECT_EQ(client.get_stats().error(), Error::invalid_bytes_response);
}

TEST(Client, WaitingPollOutlivesTheCommandTimeout) {
  FakeServer server([](FakeConnection& connection) {
    const auto request = connection.read_request();
    ASSERT_TRUE(request.has_value());
    const auto poll = decode_received<protocol::PollMessagesRequest>(*request);
    EXPECT_EQ(poll.wait_timeout_us, 2'000'000u);
    // Longer than the client's command timeout, well inside wait + margin. Not a wait for a
    // signal: the time that passes is the test.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const Bytes payload = {std::byte{'h'}, std::byte{'i'}};
    Bytes blob;
    protocol::Writer writer(blob);
    protocol::write_message(writer, {.id = {1, 0}, .payload = payload});
    const auto messages = protocol::MessageBatchView::parse(blob, 1);
    ASSERT_TRUE(messages.ok());
    connection.send_ok(payload_of(protocol::PollMessagesResponse{
        .header = {.partition_id = 0, .current_offset = 0, .messages_count = 1},
        .messages = *messages}));
    while (connection.read_request()) {
    }
  });
  Client client(
      {.command_timeout = std::chrono::milliseconds(50), .poll_margin = std::chrono::seconds(5)});
  ASSERT_TRUE(client.connect(server.address()).ok());
  protocol::PollMessagesRequest request;
  request.count = 10;
  request.wait_timeout_us = 2'000'000;
  const Result<PolledMessages> polled = client.poll_messages(request);
  ASSERT_TRUE(polled.ok()) << error_name(polled.error());
  ASSERT_EQ(polled->header().messages_count, 1u);
  const protocol::MessageView message = *polled->messages().begin();
  EXPECT_EQ(protocol::as_chars(message.payload()), "hi");
}

template <typename T>
T decode_notify_received(const FakeConnection::Received& received) {
  EXPECT_EQ(received.code, protocol::command_code(T::code));
  Result<protocol::DecodedRequest> decoded =
      protocol::decode_request(received.code, received.payload);
  EXPECT_TRUE(decoded.ok());
  if (!decoded.ok() || !std::holds_alternative<T>(decoded->request)) return T{};
  return std::get<T>(decoded->request);
}

TEST(Client, NotificationsSendTheirFramesAndDecodeAnswersAndTimeouts) {
  FakeServer server([](FakeConnection& connection) {
    auto request = connection.read_request();
    ASSERT_TRUE(request.has_value());
    const auto messages = decode_notify_received<protocol::WaitForMessagesRequest>(*request);
    EXPECT_EQ(messages.min_messages, 3u);
    EXPECT_EQ(messages.wait_timeout_us, 2'000'000u);
    // Longer than the client's command timeout: the wait's deadline is wait + margin. Not a
    // wait for a signal: the time that passes is the test.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    connection.send_ok(payload_of(protocol::WaitForMessagesResponse{
        {{.partition_id = 1, .first_offset = 4, .next_offset = 9}}}));
    request = connection.read_request();
    ASSERT_TRUE(request.has_value());
    const auto lag = decode_notify_received<protocol::WaitForLagRequest>(*request);
    EXPECT_EQ(lag.watch, protocol::LagWatch::below);
    EXPECT_EQ(lag.threshold, 5u);
    connection.send_ok({});  // Timed out.
    request = connection.read_request();
    ASSERT_TRUE(request.has_value());
    const auto condition = decode_notify_received<protocol::WaitForConditionRequest>(*request);
    EXPECT_EQ(condition.name, "stalled");
    connection.send_error(Error::invalid_command);  // A server without the command.
    while (connection.read_request()) {
    }
  });
  Client client(
      {.command_timeout = std::chrono::milliseconds(50), .poll_margin = std::chrono::seconds(5)});
  ASSERT_TRUE(client.connect(server.address()).ok());
  const auto ready = client.wait_for_messages({.wait_timeout_us = 2'000'000, .min_messages = 3});
  ASSERT_TRUE(ready.ok()) << error_name(ready.error());
  ASSERT_EQ(ready->partitions.size(), 1u);
  EXPECT_EQ(ready->partitions[0].next_offset, 9u);
  const auto lag = client.wait_for_lag(
      {.wait_timeout_us = 1000, .watch = protocol::LagWatch::below, .threshold = 5});
  ASSERT_TRUE(lag.ok()) << error_name(lag.error());
  EXPECT_FALSE(lag->has_value());
  EXPECT_EQ(client.wait_for_condition({.wait_timeout_us = 1000, .name = "stalled"}).error(),
            Error::invalid_command);
  EXPECT_TRUE(client.connected());
}

TEST(Client, UnansweredCommandTimesOutAndClosesTheConnection) {
  FakeServer server([](FakeConnection& connection) {
    while (connection.read_request()) {  // Never answers.
    }
  });
  Client client({.command_timeout = std::chrono::milliseconds(50)});
  ASSERT_TRUE(client.connect(server.address()).ok());
  EXPECT_EQ(client.ping().error(), Error::task_timeout);
  EXPECT_FALSE(client.connected());
  EXPECT_EQ(client.ping().error(), Error::not_connected);
}

TEST(Client, CancelFdStopsAWaitingPollAndClosesTheConnection) {
  FakeServer server([](FakeConnection& connection) {
    while (connection.read_request()) {  // Never answers: the poll stays parked.
    }
  });
  int cancel[2];
  ASSERT_EQ(::pipe(cancel), 0);
  Client client({.cancel_fd = cancel[0]});
  ASSERT_TRUE(client.connect(server.address()).ok());
  ASSERT_EQ(::write(cancel[1], "x", 1), 1);  // As a signal handler would.
  protocol::PollMessagesRequest request;
  request.count = 10;
  request.wait_timeout_us = 3'600'000'000;  // An hour: only the cancel can end this.
  EXPECT_EQ(client.poll_messages(request).error(), Error::client_shutdown);
  EXPECT_FALSE(client.connected());
  ::close(cancel[0]);
  ::close(cancel[1]);
}

TEST(Client, DisconnectMidResponseIsDisconnected) {
  FakeServer server([](FakeConnection& connection) {
    ASSERT_TRUE(connection.read_request().has_value());
    connection.send(protocol::ok_response_header(100));
    const std::byte ten[10] = {};
    connection.send(ten);
    connection.close();
  });
  Client client;
  ASSERT_TRUE(client.connect(server.address()).ok());
  EXPECT_EQ(client.get_clients().error(), Error::disconnected);
  EXPECT_FALSE(client.connected());
}

TEST(Client, SendMessagesFrameDecodesOnTheServer) {
  FakeServer server([](FakeConnection& connection) {
    const auto request = connection.read_request();
    ASSERT_TRUE(request.has_value());
    const auto send = decode_received<protocol::SendMessagesRequest>(*request);
    EXPECT_EQ(send.topic_id.name(), "events");
    std::string payloads;
    for (const protocol::MessageView message : send.messages) {
      payloads += protocol::as_chars(message.payload());
    }
    EXPECT_EQ(payloads, "onetwo");
    connection.send_ok({});
    while (connection.read_request()) {
    }
  });
  Client client;
  ASSERT_TRUE(client.connect(server.address()).ok());
  const std::string one = "one";
  const std::string two = "two";
  const protocol::OutgoingMessage messages[] = {{.payload = protocol::as_bytes(one)},
                                                {.payload = protocol::as_bytes(two)}};
  const protocol::SendTarget target{.stream_id = Identifier::numeric(1),
                                    .topic_id = *Identifier::named("events"),
                                    .partitioning = protocol::Partitioning::balanced()};
  EXPECT_TRUE(client.send_messages(target, messages).ok());
}

TEST(Client, ConnectFailuresAreReported) {
  // A port that was just free: bind, read the port, close.
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t length = sizeof address;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(probe);
  Client client;
  EXPECT_EQ(client.connect("127.0.0.1:" + std::to_string(ntohs(address.sin_port))).error(),
            Error::cannot_establish_connection);
  EXPECT_EQ(client.connect("no-port-here").error(), Error::invalid_server_address);
  EXPECT_EQ(client.ping().error(), Error::not_connected);
}

}  // namespace
}  // namespace hark::client
