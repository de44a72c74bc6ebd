#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/protocol/group_responses.h"
#include "hark/protocol/notify_responses.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/request.h"
#include "hark/protocol/stream_responses.h"
#include "hark/protocol/system_responses.h"
#include "hark/protocol/user_responses.h"
#include "hark/tools/client/connection.h"

namespace hark::client {

struct ClientOptions {
  Duration connect_timeout = std::chrono::seconds(5);
  // Deadline of every command but a waiting poll.
  Duration command_timeout = std::chrono::seconds(30);
  // A poll with wait_timeout_us > 0 gets max(command_timeout, wait + poll_margin), so the
  // client never cuts a long poll short: the server answers at the wait's end at the latest.
  Duration poll_margin = std::chrono::seconds(5);
  uint32_t response_payload_max = 256 * 1024 * 1024;
  // A descriptor that becomes readable to cancel whatever the client is waiting for (the read
  // end of a pipe a signal handler writes to), or -1. Must outlive the Client. See
  // Connection::set_cancel_fd.
  int cancel_fd = -1;
  // TLS on the connection (docs/cli.md: --tls, --tls-ca, --tls-server-name).
  TlsOptions tls;
};

// A poll's answer. Owns the response bytes; messages() are views into them (move-only, so the
// views stay valid).
class PolledMessages {
 public:
  PolledMessages(protocol::Bytes payload, protocol::PollMessagesResponse response)
      : payload_(std::move(payload)), response_(response) {}
  PolledMessages(PolledMessages&&) = default;
  PolledMessages& operator=(PolledMessages&&) = default;

  const protocol::PollResponseHeader& header() const { return response_.header; }
  const protocol::MessageBatchView& messages() const { return response_.messages; }

 private:
  protocol::Bytes payload_;
  protocol::PollMessagesResponse response_;
};

// A blocking client for the Iggy classic TCP protocol (server 0.8.0, and harkd with its
// wait_timeout_us extension): one TCP connection, one request in flight, one method per
// command. Shared by tests, the CLI and the bench driver.
//
// A server's error comes back as its code (print error_name(e) and error_code(e)); transport
// problems as Connection's errors (the connection is then closed: connect() again); a response
// that does not decode as expected → invalid_bytes_response (303). Getters that 0.8.0 answers
// with an empty payload for "not found" return nullopt. Not thread-safe: one thread per
// Client. Control plane: allocates.
class Client {
 public:
  explicit Client(ClientOptions options = {}) : options_(std::move(options)) {}

  Status connect(std::string_view host_port);
  void close() { connection_.close(); }
  bool connected() const { return connection_.is_open(); }

  Result<protocol::IdentityResponse> login(std::string_view username, std::string_view password);
  Result<protocol::IdentityResponse> login_with_token(std::string_view token);
  Status logout();
  Status ping();

  Result<protocol::StatsResponse> get_stats();
  Result<protocol::ClusterMetadataResponse> get_cluster_metadata();
  Result<protocol::SnapshotResponse> get_snapshot(const protocol::GetSnapshotRequest& request);
  Result<protocol::ClientDetailsResponse> get_me();
  Result<std::optional<protocol::ClientDetailsResponse>> get_client(
      const protocol::GetClientRequest& request);
  Result<protocol::ClientsResponse> get_clients();

  Result<std::optional<protocol::UserDetailsResponse>> get_user(
      const protocol::GetUserRequest& request);
  Result<protocol::UsersResponse> get_users();
  Result<protocol::UserDetailsResponse> create_user(const protocol::CreateUserRequest& request);
  Status delete_user(const protocol::DeleteUserRequest& request);
  Status update_user(const protocol::UpdateUserRequest& request);
  Status update_permissions(const protocol::UpdatePermissionsRequest& request);
  Status change_password(const protocol::ChangePasswordRequest& request);
  Result<protocol::PersonalAccessTokensResponse> get_personal_access_tokens();
  Result<protocol::RawPersonalAccessTokenResponse> create_personal_access_token(
      const protocol::CreatePersonalAccessTokenRequest& request);
  Status delete_personal_access_token(const protocol::DeletePersonalAccessTokenRequest& request);

  Result<std::optional<protocol::StreamDetailsResponse>> get_stream(
      const protocol::GetStreamRequest& request);
  Result<protocol::StreamsResponse> get_streams();
  Result<protocol::StreamResponse> create_stream(const protocol::CreateStreamRequest& request);
  Status delete_stream(const protocol::DeleteStreamRequest& request);
  Status update_stream(const protocol::UpdateStreamRequest& request);
  Status purge_stream(const protocol::PurgeStreamRequest& request);

  Result<std::optional<protocol::TopicDetailsResponse>> get_topic(
      const protocol::GetTopicRequest& request);
  Result<protocol::TopicsResponse> get_topics(const protocol::GetTopicsRequest& request);
  Result<protocol::TopicDetailsResponse> create_topic(const protocol::CreateTopicRequest& request);
  Status delete_topic(const protocol::DeleteTopicRequest& request);
  Status update_topic(const protocol::UpdateTopicRequest& request);
  Status purge_topic(const protocol::PurgeTopicRequest& request);
  Status create_partitions(const protocol::CreatePartitionsRequest& request);
  Status delete_partitions(const protocol::DeletePartitionsRequest& request);
  Status delete_segments(const protocol::DeleteSegmentsRequest& request);

  // Builds the frame from `messages` (ids 0 are assigned by the server).
  Status send_messages(const protocol::SendTarget& target,
                       std::span<const protocol::OutgoingMessage> messages);
  // Waits up to request.wait_timeout_us on a server that supports it (see ClientOptions).
  Result<PolledMessages> poll_messages(const protocol::PollMessagesRequest& request);
  Status flush_unsaved_buffer(const protocol::FlushUnsavedBufferRequest& request);

  Result<std::optional<protocol::ConsumerOffsetResponse>> get_consumer_offset(
      const protocol::GetConsumerOffsetRequest& request);
  Status store_consumer_offset(const protocol::StoreConsumerOffsetRequest& request);
  Status delete_consumer_offset(const protocol::DeleteConsumerOffsetRequest& request);

  Result<std::optional<protocol::ConsumerGroupDetailsResponse>> get_consumer_group(
      const protocol::GetConsumerGroupRequest& request);
  Result<protocol::ConsumerGroupsResponse> get_consumer_groups(
      const protocol::GetConsumerGroupsRequest& request);
  Result<protocol::ConsumerGroupResponse> create_consumer_group(
      const protocol::CreateConsumerGroupRequest& request);
  Status delete_consumer_group(const protocol::DeleteConsumerGroupRequest& request);
  Status join_consumer_group(const protocol::JoinConsumerGroupRequest& request);
  Status leave_consumer_group(const protocol::LeaveConsumerGroupRequest& request);

  // hark's notifications (docs/wire.md §11): block until the condition holds or the request's
  // wait_timeout_us passes (deadline as a waiting poll's, see ClientOptions). A timeout is an
  // answer with no partitions (wait_for_lag: nullopt). A server without them (Iggy) answers
  // invalid_command (3).
  Result<protocol::WaitForMessagesResponse> wait_for_messages(
      const protocol::WaitForMessagesRequest& request);
  Result<std::optional<protocol::WaitForLagResponse>> wait_for_lag(
      const protocol::WaitForLagRequest& request);
  Result<protocol::WaitForConditionResponse> wait_for_condition(
      const protocol::WaitForConditionRequest& request);

  // Sends any request and returns the raw response payload, within `timeout`.
  Result<protocol::Bytes> call(const protocol::Request& request, Duration timeout);

 private:
  // The deadline of a request that may wait `wait_us` on the server.
  Duration waiting_timeout(uint64_t wait_us) const;

  Result<protocol::Bytes> exchange(std::span<const std::byte> frame, Duration timeout);

  ClientOptions options_;
  Connection connection_;
  protocol::Bytes frame_;  // Reused for every request.
};

}  // namespace hark::client
