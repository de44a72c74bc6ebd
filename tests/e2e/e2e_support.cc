#include "hark/tests/e2e/e2e_support.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "hark/core/base/message_layout.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/send_messages.h"

#ifndef HARK_HARKD_PATH
#error "HARK_HARKD_PATH must name the harkd binary (tests/e2e/CMakeLists.txt sets it)"
#endif

namespace hark::test {
namespace {

int milliseconds_until(SteadyClock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
}

constexpr bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

}  // namespace

std::string harkd_path() { return HARK_HARKD_PATH; }

std::chrono::milliseconds late_bound() { return sanitized() ? 1000ms : 500ms; }

bool sanitized_build() { return sanitized(); }

protocol::Bytes bytes_of(std::string_view text) {
  protocol::Bytes bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

std::string text_of(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::vector<uint64_t> offsets_of(const protocol::MessageBatchView& messages) {
  std::vector<uint64_t> offsets;
  for (const protocol::MessageView message : messages) offsets.push_back(message.offset());
  return offsets;
}

std::vector<std::string> payloads_of(const protocol::MessageBatchView& messages) {
  std::vector<std::string> payloads;
  for (const protocol::MessageView message : messages)
    payloads.push_back(text_of(message.payload()));
  return payloads;
}

protocol::PollMessagesRequest poll_request(uint32_t consumer_id, uint32_t partition,
                                           protocol::PollingStrategy strategy, uint32_t count,
                                           std::chrono::microseconds wait, bool auto_commit) {
  protocol::PollMessagesRequest request;
  request.consumer = {protocol::ConsumerKind::consumer, protocol::Identifier::numeric(consumer_id)};
  request.stream_id = protocol::Identifier::numeric(0);
  request.topic_id = protocol::Identifier::numeric(0);
  request.partition_id = partition;
  request.strategy = strategy;
  request.count = count;
  request.auto_commit = auto_commit;
  // 0: a classic poll, the field left out as released SDKs do (poll_now sends an explicit 0).
  if (wait.count() > 0) request.wait_timeout_us = static_cast<uint64_t>(wait.count());
  return request;
}

protocol::Bytes request_frame(const protocol::Request& request) {
  protocol::Bytes frame;
  const Status status = protocol::encode_request_frame(request, frame);
  EXPECT_TRUE(status.ok()) << error_name(status.error());
  return frame;
}

// RawConnection.

bool RawConnection::connect(const std::string& address) {
  close();
  const size_t colon = address.rfind(':');
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(std::stoul(address.substr(colon + 1))));
  if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &target.sin_addr) != 1) {
    ADD_FAILURE() << "not an IPv4 address: " << address;
    return false;
  }
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
    ADD_FAILURE() << "connect to " << address << ": " << std::strerror(errno);
    close();
    return false;
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

bool RawConnection::connect_and_login(const std::string& address, const std::string& username,
                                      const std::string& password) {
  if (!connect(address)) return false;
  const protocol::Bytes login = request_frame(protocol::LoginUserRequest{
      .username = username, .password = password, .version = {}, .context = {}});
  const std::optional<RawResponse> response = exchange(login);
  if (!response || response->status != 0) {
    ADD_FAILURE() << "login failed: " << (response ? response->status : 0u);
    return false;
  }
  return true;
}

bool RawConnection::send(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) {
      ADD_FAILURE() << "send: " << std::strerror(errno);
      return false;
    }
    bytes = bytes.subspan(static_cast<size_t>(sent));
  }
  return true;
}

bool RawConnection::read_exact(std::span<std::byte> buffer, SteadyClock::time_point deadline) {
  while (!buffer.empty()) {
    pollfd readable{.fd = fd_, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&readable, 1, milliseconds_until(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t got = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buffer = buffer.subspan(static_cast<size_t>(got));
  }
  return true;
}

std::optional<RawResponse> RawConnection::read_response(SteadyClock::time_point deadline) {
  std::array<std::byte, protocol::response_header_size> header{};
  if (fd_ < 0 || !read_exact(header, deadline)) return std::nullopt;
  RawResponse response;
  response.status = load_u32(header, 0);
  response.payload.resize(load_u32(header, 4));
  if (!read_exact(response.payload, deadline)) return std::nullopt;
  return response;
}

std::optional<RawResponse> RawConnection::exchange(std::span<const std::byte> frame,
                                                   std::chrono::milliseconds timeout) {
  if (!send(frame)) return std::nullopt;
  return read_response(SteadyClock::now() + timeout);
}

bool RawConnection::readable_now() const {
  pollfd readable{.fd = fd_, .events = POLLIN, .revents = 0};
  return ::poll(&readable, 1, 0) > 0;
}

bool RawConnection::closed_by_peer(SteadyClock::time_point deadline) {
  while (true) {
    pollfd readable{.fd = fd_, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&readable, 1, milliseconds_until(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    std::byte byte{};
    const ssize_t got = ::recv(fd_, &byte, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    return got == 0 || (got < 0 && errno == ECONNRESET);
  }
}

void RawConnection::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void RawConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

PollOutcome poll_outcome(const std::optional<RawResponse>& response) {
  PollOutcome outcome;
  outcome.answered_at = SteadyClock::now();
  if (!response) return outcome;
  outcome.answered = true;
  outcome.status = response->status;
  if (response->status != 0) {
    EXPECT_TRUE(response->payload.empty()) << "an error response carries no payload";
    return outcome;
  }
  Result<protocol::Decoded<protocol::PollMessagesResponse>> decoded =
      protocol::decode_payload<protocol::PollMessagesResponse>(response->payload);
  EXPECT_TRUE(decoded.ok()) << "undecodable poll response: " << error_name(decoded.error());
  if (!decoded.ok()) return outcome;
  EXPECT_EQ(decoded->trailing_bytes, 0u);
  outcome.header = decoded->value.header;
  outcome.offsets = offsets_of(decoded->value.messages);
  outcome.payloads = payloads_of(decoded->value.messages);
  return outcome;
}

// AsyncPoll.

AsyncPoll::AsyncPoll(const std::string& address, const protocol::PollMessagesRequest& request)
    : connection_(own_connection_) {
  if (!connection_.connect_and_login(address)) {
    finish();
    return;
  }
  send(request);
}

AsyncPoll::AsyncPoll(RawConnection& connection, const protocol::PollMessagesRequest& request)
    : connection_(connection) {
  send(request);
}

void AsyncPoll::send(const protocol::PollMessagesRequest& request) {
  // The thread gives up well after the poll's own wait (harkd answers at the wait's end), or
  // after an hour for a wait beyond that (harkd clamps it to its max_wait, 30 s by default).
  const uint64_t wait_us =
      std::min<uint64_t>(request.wait_timeout_us.value_or(0), 3'600'000'000ull);
  const auto answer_within = std::chrono::ceil<std::chrono::milliseconds>(
                                 std::chrono::microseconds(static_cast<int64_t>(wait_us))) +
                             30s;
  const protocol::Bytes frame = request_frame(request);
  sent_at_ = SteadyClock::now();
  if (!connection_.send(frame)) {
    finish();
    return;
  }
  thread_ = std::thread([this, answer_within] {
    outcome_ = poll_outcome(connection_.read_response(sent_at_ + answer_within));
    finish();
  });
}

AsyncPoll::~AsyncPoll() {
  if (!answered()) connection_.shutdown();
  if (thread_.joinable()) thread_.join();
}

const PollOutcome& AsyncPoll::wait(std::chrono::milliseconds timeout) {
  {
    std::unique_lock lock(mutex_);
    finished_cv_.wait_for(lock, timeout, [this] { return answered(); });
  }
  // The thread reads until well after the poll's wait; a shorter wait is enforced by shutting
  // the socket down, which ends the read with "not answered".
  if (!answered()) connection_.shutdown();
  if (thread_.joinable()) thread_.join();
  return outcome_;
}

void AsyncPoll::finish() {
  std::lock_guard lock(mutex_);
  finished_.store(true, std::memory_order_release);
  finished_cv_.notify_all();
}

// HarkdTest.

HarkdProcess::Options HarkdTest::harkd_options() const {
  HarkdProcess::Options options;
  options.harkd_path = harkd_path();
  options.shards_count = shards_count;
  return options;
}

void HarkdTest::SetUp() {
  ASSERT_TRUE(harkd_.start(harkd_options())) << harkd_.error_text() << "\nharkd stderr:\n"
                                             << harkd_.stderr_tail();
  admin_ = connect_client();
  ASSERT_NE(admin_, nullptr);
}

void HarkdTest::TearDown() {
  // Every test ends with a clean stop: a crash, a sanitizer report (they abort) or a hang in
  // harkd during the test shows up here even when the test's own answers looked right.
  admin_.reset();
  if (harkd_.running()) {
    const ProcessExit exit = harkd_.stop();
    EXPECT_TRUE(exit.clean()) << "harkd " << describe(exit);
  }
  if (HasFailure()) {
    std::cerr << "---- harkd stderr (last 40 lines) ----\n"
              << harkd_.stderr_tail() << "---- end of harkd stderr ----\n";
  }
}

std::unique_ptr<client::Client> HarkdTest::connect_client() {
  auto client = std::make_unique<client::Client>(client_options());
  const Status connected = client->connect(address());
  EXPECT_TRUE(connected.ok()) << error_name(connected.error());
  if (!connected.ok()) return nullptr;
  const auto login = client->login("iggy", "iggy");
  EXPECT_TRUE(login.ok()) << error_name(login.error());
  if (!login.ok()) return nullptr;
  return client;
}

HarkdStats HarkdTest::harkd_stats() {
  const std::optional<HarkdStats> stats = harkd_.stats();
  EXPECT_TRUE(stats.has_value()) << "no readable stats line after SIGUSR1";
  if (!stats.has_value()) return {};
  EXPECT_EQ(stats->by_shard.size(), shards_count) << *stats;
  return *stats;
}

size_t HarkdTest::harkd_open_files() const {
  size_t count = 0;
  const std::filesystem::path fds = "/proc/" + std::to_string(harkd_.pid()) + "/fd";
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator(fds, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    count++;
  }
  return count;
}

uint32_t HarkdTest::create_user(const std::string& username,
                                std::optional<protocol::Permissions> permissions, uint8_t status) {
  const auto created = admin_->create_user(
      {.username = username, .password = "secret", .status = status, .permissions = permissions});
  EXPECT_TRUE(created.ok()) << error_name(created.error());
  return created.ok() ? created->user.id : UINT32_MAX;
}

void HarkdTest::create_stream_and_topic(uint32_t partitions) {
  const auto stream = admin_->create_stream({.name = "s"});
  ASSERT_TRUE(stream.ok()) << error_name(stream.error());
  ASSERT_EQ(stream->id, 0u);
  protocol::CreateTopicRequest topic;
  topic.stream_id = protocol::Identifier::numeric(0);
  topic.partitions_count = partitions;
  topic.name = "t";
  const auto created = admin_->create_topic(topic);
  ASSERT_TRUE(created.ok()) << error_name(created.error());
  ASSERT_EQ(created->topic.id, 0u);
  ASSERT_EQ(created->partitions.size(), partitions);
}

Status HarkdTest::send_text(client::Client& client, const protocol::Partitioning& partitioning,
                            std::string_view payload) {
  return send_text_to(client, partitioning, payload);
}

Status send_text_to(client::Client& client, const protocol::Partitioning& partitioning,
                    std::string_view payload) {
  const protocol::Bytes bytes = bytes_of(payload);
  const protocol::OutgoingMessage message{.payload = bytes};
  const protocol::SendTarget target{.stream_id = protocol::Identifier::numeric(0),
                                    .topic_id = protocol::Identifier::numeric(0),
                                    .partitioning = partitioning};
  return client.send_messages(target, {&message, 1});
}

Status send_to_partition(client::Client& client, uint32_t partition, std::string_view payload) {
  return send_text_to(client, protocol::Partitioning::partition(partition), payload);
}
Status HarkdTest::send_text(uint32_t partition, std::string_view payload) {
  return send_text(*admin_, protocol::Partitioning::partition(partition), payload);
}

PollOutcome HarkdTest::poll_now(protocol::PollMessagesRequest request) {
  request.wait_timeout_us = 0;
  request.auto_commit = false;
  RawConnection connection;
  if (!connection.connect_and_login(address())) return {};
  return poll_outcome(connection.exchange(request_frame(request)));
}

}  // namespace hark::test
