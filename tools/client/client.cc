#include "hark/tools/client/client.h"

#include <algorithm>
#include <chrono>

#include "hark/core/base/clock.h"
#include "hark/protocol/codec.h"

namespace hark::client {

// The client is a thin layer over protocol/: nearly every line names one of its types.
using namespace protocol;

namespace {

Instant now() { return SystemClock::instance().monotonic_now(); }

template <typename Response>
Result<Response> decode_response(Result<Bytes> payload) {
  if (!payload.ok()) return payload.error();
  Result<Decoded<Response>> decoded = decode_payload<Response>(*payload);
  if (!decoded.ok()) return Error::invalid_bytes_response;
  return std::move(decoded->value);
}

template <typename Response>
Result<std::optional<Response>> decode_optional_response(Result<Bytes> payload) {
  if (!payload.ok()) return payload.error();
  Result<std::optional<Response>> decoded = decode_optional_payload<Response>(*payload);
  if (!decoded.ok()) return Error::invalid_bytes_response;
  return std::move(*decoded);
}

Status empty_response(Result<Bytes> payload) {
  if (!payload.ok()) return payload.error();
  return ok_status();
}

}  // namespace

Status Client::connect(std::string_view host_port) {
  connection_.set_cancel_fd(options_.cancel_fd);
  connection_.set_tls(options_.tls);
  return connection_.open(host_port, saturating_add(now(), options_.connect_timeout));
}

Result<Bytes> Client::exchange(std::span<const std::byte> frame, Duration timeout) {
  if (!connection_.is_open()) return Error::not_connected;
  const Instant deadline = saturating_add(now(), timeout);
  HARK_TRY(connection_.send_all(frame, deadline));
  return connection_.read_response(deadline, options_.response_payload_max);
}

Result<Bytes> Client::call(const Request& request, Duration timeout) {
  frame_.clear();
  HARK_TRY(encode_request_frame(request, frame_));
  return exchange(frame_, timeout);
}

Duration Client::waiting_timeout(uint64_t wait_us) const {
  if (wait_us == 0) return options_.command_timeout;
  const Duration wait =
      std::chrono::microseconds(std::min<uint64_t>(wait_us, uint64_t{INT64_MAX} / 1000));
  return std::max(options_.command_timeout, wait + options_.poll_margin);
}

// Every command below is one call(): encode, exchange, decode the expected response shape.

Result<IdentityResponse> Client::login(std::string_view username, std::string_view password) {
  const LoginUserRequest request{.username = std::string(username),
                                 .password = std::string(password),
                                 .version = {},
                                 .context = {}};
  return decode_response<IdentityResponse>(call(request, options_.command_timeout));
}

Result<IdentityResponse> Client::login_with_token(std::string_view token) {
  const LoginWithPersonalAccessTokenRequest request{.token = std::string(token)};
  return decode_response<IdentityResponse>(call(request, options_.command_timeout));
}

Status Client::logout() {
  return empty_response(call(LogoutUserRequest{}, options_.command_timeout));
}
Status Client::ping() { return empty_response(call(PingRequest{}, options_.command_timeout)); }

Result<StatsResponse> Client::get_stats() {
  return decode_response<StatsResponse>(call(GetStatsRequest{}, options_.command_timeout));
}

Result<ClusterMetadataResponse> Client::get_cluster_metadata() {
  return decode_response<ClusterMetadataResponse>(
      call(GetClusterMetadataRequest{}, options_.command_timeout));
}

Result<SnapshotResponse> Client::get_snapshot(const GetSnapshotRequest& request) {
  return decode_response<SnapshotResponse>(call(request, options_.command_timeout));
}

Result<ClientDetailsResponse> Client::get_me() {
  return decode_response<ClientDetailsResponse>(call(GetMeRequest{}, options_.command_timeout));
}

Result<std::optional<ClientDetailsResponse>> Client::get_client(const GetClientRequest& request) {
  return decode_optional_response<ClientDetailsResponse>(call(request, options_.command_timeout));
}

Result<ClientsResponse> Client::get_clients() {
  return decode_response<ClientsResponse>(call(GetClientsRequest{}, options_.command_timeout));
}

Result<std::optional<UserDetailsResponse>> Client::get_user(const GetUserRequest& request) {
  return decode_optional_response<UserDetailsResponse>(call(request, options_.command_timeout));
}

Result<UsersResponse> Client::get_users() {
  return decode_response<UsersResponse>(call(GetUsersRequest{}, options_.command_timeout));
}

Result<UserDetailsResponse> Client::create_user(const CreateUserRequest& request) {
  return decode_response<UserDetailsResponse>(call(request, options_.command_timeout));
}

Status Client::delete_user(const DeleteUserRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::update_user(const UpdateUserRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::update_permissions(const UpdatePermissionsRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::change_password(const ChangePasswordRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Result<PersonalAccessTokensResponse> Client::get_personal_access_tokens() {
  return decode_response<PersonalAccessTokensResponse>(
      call(GetPersonalAccessTokensRequest{}, options_.command_timeout));
}

Result<RawPersonalAccessTokenResponse> Client::create_personal_access_token(
    const CreatePersonalAccessTokenRequest& request) {
  return decode_response<RawPersonalAccessTokenResponse>(call(request, options_.command_timeout));
}

Status Client::delete_personal_access_token(const DeletePersonalAccessTokenRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Result<std::optional<StreamDetailsResponse>> Client::get_stream(const GetStreamRequest& request) {
  return decode_optional_response<StreamDetailsResponse>(call(request, options_.command_timeout));
}

Result<StreamsResponse> Client::get_streams() {
  return decode_response<StreamsResponse>(call(GetStreamsRequest{}, options_.command_timeout));
}

Result<StreamResponse> Client::create_stream(const CreateStreamRequest& request) {
  return decode_response<StreamResponse>(call(request, options_.command_timeout));
}

Status Client::delete_stream(const DeleteStreamRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::update_stream(const UpdateStreamRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::purge_stream(const PurgeStreamRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Result<std::optional<TopicDetailsResponse>> Client::get_topic(const GetTopicRequest& request) {
  return decode_optional_response<TopicDetailsResponse>(call(request, options_.command_timeout));
}

Result<TopicsResponse> Client::get_topics(const GetTopicsRequest& request) {
  return decode_response<TopicsResponse>(call(request, options_.command_timeout));
}

Result<TopicDetailsResponse> Client::create_topic(const CreateTopicRequest& request) {
  return decode_response<TopicDetailsResponse>(call(request, options_.command_timeout));
}

Status Client::delete_topic(const DeleteTopicRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::update_topic(const UpdateTopicRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::purge_topic(const PurgeTopicRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::create_partitions(const CreatePartitionsRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::delete_partitions(const DeletePartitionsRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::delete_segments(const DeleteSegmentsRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::send_messages(const SendTarget& target, std::span<const OutgoingMessage> messages) {
  frame_.clear();
  HARK_TRY(encode_send_messages(target, messages, frame_));
  return empty_response(exchange(frame_, options_.command_timeout));
}

Result<PolledMessages> Client::poll_messages(const PollMessagesRequest& request) {
  HARK_TRY_ASSIGN(Bytes payload,
                  call(request, waiting_timeout(request.wait_timeout_us.value_or(0))));
  Result<Decoded<PollMessagesResponse>> decoded = decode_payload<PollMessagesResponse>(payload);
  if (!decoded.ok()) return Error::invalid_bytes_response;
  // The views point into `payload`'s heap buffer, which moving the vector does not move.
  return PolledMessages(std::move(payload), decoded->value);
}

Result<WaitForMessagesResponse> Client::wait_for_messages(const WaitForMessagesRequest& request) {
  return decode_response<WaitForMessagesResponse>(
      call(request, waiting_timeout(request.wait_timeout_us)));
}

Result<std::optional<WaitForLagResponse>> Client::wait_for_lag(const WaitForLagRequest& request) {
  return decode_optional_response<WaitForLagResponse>(
      call(request, waiting_timeout(request.wait_timeout_us)));
}

Result<WaitForConditionResponse> Client::wait_for_condition(
    const WaitForConditionRequest& request) {
  return decode_response<WaitForConditionResponse>(
      call(request, waiting_timeout(request.wait_timeout_us)));
}

Status Client::flush_unsaved_buffer(const FlushUnsavedBufferRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Result<std::optional<ConsumerOffsetResponse>> Client::get_consumer_offset(
    const GetConsumerOffsetRequest& request) {
  return decode_optional_response<ConsumerOffsetResponse>(call(request, options_.command_timeout));
}

Status Client::store_consumer_offset(const StoreConsumerOffsetRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::delete_consumer_offset(const DeleteConsumerOffsetRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Result<std::optional<ConsumerGroupDetailsResponse>> Client::get_consumer_group(
    const GetConsumerGroupRequest& request) {
  return decode_optional_response<ConsumerGroupDetailsResponse>(
      call(request, options_.command_timeout));
}

Result<ConsumerGroupsResponse> Client::get_consumer_groups(
    const GetConsumerGroupsRequest& request) {
  return decode_response<ConsumerGroupsResponse>(call(request, options_.command_timeout));
}

Result<ConsumerGroupResponse> Client::create_consumer_group(
    const CreateConsumerGroupRequest& request) {
  return decode_response<ConsumerGroupResponse>(call(request, options_.command_timeout));
}

Status Client::delete_consumer_group(const DeleteConsumerGroupRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::join_consumer_group(const JoinConsumerGroupRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

Status Client::leave_consumer_group(const LeaveConsumerGroupRequest& request) {
  return empty_response(call(request, options_.command_timeout));
}

}  // namespace hark::client
