#include "hark/server/dispatch.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <string_view>

#include <absl/container/flat_hash_map.h>

#include "hark/protocol/hash.h"
#include "hark/server/cluster/cluster_view.h"

namespace hark::server {
namespace {

constexpr size_t username_size_min = 3;
constexpr size_t username_size_max = 50;
constexpr size_t password_size_min = 3;
constexpr size_t password_size_max = 100;
constexpr size_t token_name_size_min = 3;
constexpr size_t token_name_size_max = 30;
constexpr uint8_t client_transport_tcp = 1;
constexpr uint8_t cluster_role_leader = 0;
constexpr uint8_t cluster_role_follower = 1;
constexpr std::string_view single_node_cluster_name = "single-node";
constexpr uint8_t cluster_status_healthy = 0;

core::PollFrom poll_from(protocol::PollingKind kind) {
  switch (kind) {
    case protocol::PollingKind::offset: return core::PollFrom::offset;
    case protocol::PollingKind::timestamp: return core::PollFrom::timestamp;
    case protocol::PollingKind::first: return core::PollFrom::first;
    case protocol::PollingKind::last: return core::PollFrom::last;
    case protocol::PollingKind::next: return core::PollFrom::next;
  }
  HARK_UNREACHABLE();
}

protocol::PartitionResponse partition_response(const core::PartitionInfo& partition) {
  protocol::PartitionResponse response;
  response.id = partition.id;
  response.created_at = partition.created_at;
  response.segments_count = partition.segments_count;
  response.current_offset = partition.current_offset;
  response.size_bytes = partition.size_bytes;
  response.messages_count = partition.messages_count;
  return response;
}

}  // namespace

Duration wait_of(uint64_t wait_timeout_us) {
  constexpr uint64_t us_max =
      static_cast<uint64_t>(std::numeric_limits<Duration::rep>::max() / 1000);
  if (wait_timeout_us > us_max) return Duration::max();
  return std::chrono::microseconds(static_cast<int64_t>(wait_timeout_us));
}

Status check_username(std::string_view username) {
  if (username.size() < username_size_min || username.size() > username_size_max) {
    return Error::invalid_username;
  }
  return ok_status();
}

Status check_password(std::string_view password) {
  if (password.size() < password_size_min || password.size() > password_size_max) {
    return Error::invalid_password;
  }
  return ok_status();
}

Status check_token_name(std::string_view name) {
  if (name.size() < token_name_size_min || name.size() > token_name_size_max) {
    return Error::invalid_personal_access_token_name;
  }
  return ok_status();
}

Result<core::NameOrId> name_or_id(const protocol::Identifier& id) {
  if (id.is_numeric()) return core::NameOrId::id(id.number());
  return core::NameOrId::name(id.name());
}

Status fill_consumer(const protocol::Consumer& consumer, core::ConsumerRef& ref,
                     core::NameOrId& group) {
  if (consumer.kind == protocol::ConsumerKind::group) {
    ref.kind = core::ConsumerRef::Kind::group;
    ref.id = consumer.id.number();
    HARK_TRY_ASSIGN(group, name_or_id(consumer.id));
    return ok_status();
  }
  ref.kind = core::ConsumerRef::Kind::consumer;
  ref.id = consumer.id.is_numeric() ? consumer.id.number()
                                    : protocol::consumer_id_of_name(consumer.id.name());
  return ok_status();
}

core::Partitioning partitioning(const protocol::Partitioning& partitioning) {
  core::Partitioning result;
  switch (partitioning.kind()) {
    case protocol::PartitioningKind::balanced:
      result.kind = core::Partitioning::Kind::balanced;
      break;
    case protocol::PartitioningKind::partition_id:
      result.kind = core::Partitioning::Kind::partition;
      result.value = partitioning.partition_id();
      break;
    case protocol::PartitioningKind::messages_key:
      result.kind = core::Partitioning::Kind::key_hash;
      result.value = protocol::xxh32(partitioning.key());
      break;
  }
  return result;
}

Status fill_poll(const protocol::PollMessagesRequest& request, uint32_t client_id,
                 Duration classic_wait, core::Poll& poll) {
  HARK_TRY_ASSIGN(poll.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(poll.topic, name_or_id(request.topic_id));
  poll.partition = request.partition_id;
  HARK_TRY(fill_consumer(request.consumer, poll.consumer, poll.group));
  poll.member = client_id;
  poll.from = poll_from(request.strategy.kind);
  poll.value = request.strategy.value;
  poll.count = request.count;
  poll.wait = request.wait_timeout_us ? wait_of(*request.wait_timeout_us) : classic_wait;
  poll.min_messages = 1;
  return ok_status();
}

namespace {

template <typename Request>
Status fill_notify(const Request& request, uint32_t client_id, core::Notify& notify) {
  HARK_TRY_ASSIGN(notify.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(notify.topic, name_or_id(request.topic_id));
  notify.partition = request.partition_id;
  HARK_TRY(fill_consumer(request.consumer, notify.consumer, notify.group));
  notify.member = client_id;
  notify.wait = wait_of(request.wait_timeout_us);
  return ok_status();
}

Result<std::optional<uint64_t>> messages_start(const protocol::PollingStrategy& strategy) {
  switch (strategy.kind) {
    case protocol::PollingKind::next: return std::optional<uint64_t>();
    case protocol::PollingKind::offset: return std::optional<uint64_t>(strategy.value);
    case protocol::PollingKind::first: return std::optional<uint64_t>(0);
    case protocol::PollingKind::last:
    case protocol::PollingKind::timestamp: break;
  }
  return Error::feature_unavailable;
}

}  // namespace

Status fill_wait_for_messages(const protocol::WaitForMessagesRequest& request, uint32_t client_id,
                              core::Notify& notify) {
  HARK_TRY(fill_notify(request, client_id, notify));
  HARK_TRY_ASSIGN(const std::optional<uint64_t> offset, messages_start(request.strategy));
  core::wait_for_messages(
      notify, core::MessagesParams{.min_messages = request.min_messages, .offset = offset});
  return ok_status();
}

Status fill_wait_for_lag(const protocol::WaitForLagRequest& request, uint32_t client_id,
                         core::Notify& notify) {
  HARK_TRY(fill_notify(request, client_id, notify));
  const auto direction = request.watch == protocol::LagWatch::above
                             ? core::LagParams::Direction::above
                             : core::LagParams::Direction::below;
  core::wait_for_lag(notify,
                     core::LagParams{.direction = direction, .threshold = request.threshold});
  return ok_status();
}

Status fill_wait_for_condition(const protocol::WaitForConditionRequest& request, uint32_t client_id,
                               core::Notify& notify) {
  HARK_TRY(fill_notify(request, client_id, notify));
  notify.condition = request.name;
  notify.params = request.params;
  return ok_status();
}

protocol::WaitForMessagesResponse wait_for_messages_response(const core::Notify& notify) {
  protocol::WaitForMessagesResponse response;
  for (const core::NotifyAnswer& answer : notify.answers) {
    const std::optional<core::MessagesReady> ready = core::messages_ready(answer);
    if (!ready) continue;
    response.partitions.push_back(protocol::ReadyPartition{.partition_id = ready->partition_id,
                                                           .first_offset = ready->first_readable,
                                                           .next_offset = ready->next_offset});
  }
  return response;
}

std::optional<protocol::WaitForLagResponse> wait_for_lag_response(const core::Notify& notify) {
  if (notify.answers.empty()) return std::nullopt;
  protocol::WaitForLagResponse response{.total_lag = notify.total.value_or(0)};
  for (const core::NotifyAnswer& answer : notify.answers) {
    const std::optional<core::PartitionLag> lag = core::partition_lag(answer);
    if (!lag) continue;
    response.partitions.push_back(protocol::PartitionLag{.partition_id = lag->partition_id,
                                                         .next_offset = lag->next_offset,
                                                         .stored_offset = lag->stored,
                                                         .lag = lag->lag});
  }
  return response;
}

protocol::WaitForConditionResponse wait_for_condition_response(const core::Notify& notify) {
  protocol::WaitForConditionResponse response;
  for (const core::NotifyAnswer& answer : notify.answers) {
    const std::span<const std::byte> bytes = answer.answer();
    response.partitions.push_back(
        protocol::ConditionAnswer{.partition_id = answer.partition_id,
                                  .answer = protocol::Bytes(bytes.begin(), bytes.end())});
  }
  return response;
}

Status fill_append(const protocol::SendMessagesRequest& request, core::Append& append) {
  HARK_TRY_ASSIGN(append.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(append.topic, name_or_id(request.topic_id));
  append.partitioning = partitioning(request.partitioning);
  append.messages = request.messages.bytes();
  append.count = request.messages.count();
  return ok_status();
}

Status fill_create_topic(const protocol::CreateTopicRequest& request, core::CreateTopic& create) {
  HARK_TRY_ASSIGN(create.stream, name_or_id(request.stream_id));
  create.name = request.name;
  create.settings.partitions_count = request.partitions_count;
  create.settings.compression = request.compression_algorithm;
  create.settings.message_expiry_us = request.message_expiry;
  create.settings.max_topic_size = request.max_topic_size;
  create.settings.replication_factor = request.replication_factor;
  return ok_status();
}

Status fill_update_topic(const protocol::UpdateTopicRequest& request, core::UpdateTopic& update) {
  HARK_TRY_ASSIGN(update.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(update.topic, name_or_id(request.topic_id));
  update.name = request.name;
  update.settings.compression = request.compression_algorithm;
  update.settings.message_expiry_us = request.message_expiry;
  update.settings.max_topic_size = request.max_topic_size;
  update.settings.replication_factor = request.replication_factor;
  return ok_status();
}

uint32_t largest_payload(const protocol::MessageBatchView& messages) {
  uint32_t largest = 0;
  for (const protocol::MessageView message : messages) {
    largest = std::max(largest, message.payload_length());
  }
  return largest;
}

protocol::PollResponseHeader poll_header(const core::PollResult& result) {
  protocol::PollResponseHeader header;
  header.partition_id = result.partition_id;
  header.current_offset = result.current_offset;
  header.messages_count = result.messages.count();
  return header;
}

protocol::StreamResponse stream_response(const core::StreamInfo& stream) {
  protocol::StreamResponse response;
  response.id = stream.id;
  response.created_at = stream.created_at;
  response.topics_count = stream.topics_count;
  response.size_bytes = stream.size_bytes;
  response.messages_count = stream.messages_count;
  response.name = stream.name;
  return response;
}

protocol::StreamDetailsResponse stream_details_response(const core::StreamDetails& details) {
  protocol::StreamDetailsResponse response;
  response.stream = stream_response(details.stream);
  // The client checks the count against the topics that follow: state what is sent.
  response.stream.topics_count = static_cast<uint32_t>(details.topics.size());
  response.topics.reserve(details.topics.size());
  for (const core::TopicInfo& topic : details.topics) {
    response.topics.push_back(topic_response(topic));
  }
  return response;
}

protocol::StreamsResponse streams_response(const std::vector<core::StreamInfo>& streams) {
  protocol::StreamsResponse response;
  response.streams.reserve(streams.size());
  for (const core::StreamInfo& stream : streams) {
    response.streams.push_back(stream_response(stream));
  }
  return response;
}

protocol::TopicResponse topic_response(const core::TopicInfo& topic) {
  protocol::TopicResponse response;
  response.id = topic.id;
  response.created_at = topic.created_at;
  response.partitions_count = topic.settings.partitions_count;
  response.message_expiry = topic.settings.message_expiry_us;
  response.compression_algorithm = topic.settings.compression;
  response.max_topic_size = topic.settings.max_topic_size;
  response.replication_factor = topic.settings.replication_factor;
  response.size_bytes = topic.size_bytes;
  response.messages_count = topic.messages_count;
  response.name = topic.name;
  return response;
}

protocol::TopicDetailsResponse topic_details_response(const core::TopicDetails& details) {
  protocol::TopicDetailsResponse response;
  response.topic = topic_response(details.topic);
  // The client checks the count against the partitions that follow: state what is sent.
  response.topic.partitions_count = static_cast<uint32_t>(details.partitions.size());
  response.partitions.reserve(details.partitions.size());
  for (const core::PartitionInfo& partition : details.partitions) {
    response.partitions.push_back(partition_response(partition));
  }
  return response;
}

protocol::TopicsResponse topics_response(const std::vector<core::TopicInfo>& topics) {
  protocol::TopicsResponse response;
  response.topics.reserve(topics.size());
  for (const core::TopicInfo& topic : topics) response.topics.push_back(topic_response(topic));
  return response;
}

protocol::ConsumerGroupResponse group_response(const core::GroupInfo& group) {
  protocol::ConsumerGroupResponse response;
  response.id = group.id;
  response.partitions_count = group.partitions_count;
  response.members_count = group.members_count;
  response.name = group.name;
  return response;
}

protocol::ConsumerGroupDetailsResponse group_details_response(const core::GroupDetails& details) {
  protocol::ConsumerGroupDetailsResponse response;
  response.group = group_response(details.group);
  // The client checks the count against the members that follow: state what is sent.
  response.group.members_count = static_cast<uint32_t>(details.members.size());
  response.members.reserve(details.members.size());
  for (const core::GroupMemberInfo& member : details.members) {
    response.members.push_back({.id = member.id, .partitions = member.partitions});
  }
  return response;
}

protocol::ConsumerGroupsResponse groups_response(const std::vector<core::GroupInfo>& groups) {
  protocol::ConsumerGroupsResponse response;
  response.groups.reserve(groups.size());
  for (const core::GroupInfo& group : groups) response.groups.push_back(group_response(group));
  return response;
}

protocol::ClientDetailsResponse client_details_response(
    const ClientInfo& client, const std::vector<core::GroupMembership>& memberships) {
  protocol::ClientDetailsResponse response;
  response.client = {.client_id = client.client_id,
                     .user_id = client.user_id,
                     .transport = client_transport_tcp,
                     .address = client.address,
                     .consumer_groups_count = 0};
  for (const core::GroupMembership& membership : memberships) {
    if (membership.member != client.client_id) continue;
    response.consumer_groups.push_back({.stream_id = membership.stream_id,
                                        .topic_id = membership.topic_id,
                                        .group_id = membership.group_id});
  }
  response.client.consumer_groups_count = static_cast<uint32_t>(response.consumer_groups.size());
  return response;
}

protocol::ClientsResponse clients_response(const std::vector<ClientInfo>& clients,
                                           const std::vector<core::GroupMembership>& memberships) {
  absl::flat_hash_map<uint32_t, uint32_t> groups_of;
  for (const core::GroupMembership& membership : memberships) groups_of[membership.member]++;
  protocol::ClientsResponse response;
  response.clients.reserve(clients.size());
  for (const ClientInfo& client : clients) {
    const auto found = groups_of.find(client.client_id);
    response.clients.push_back(
        {.client_id = client.client_id,
         .user_id = client.user_id,
         .transport = client_transport_tcp,
         .address = client.address,
         .consumer_groups_count = found == groups_of.end() ? 0 : found->second});
  }
  return response;
}

namespace {

// A node at "HOST:PORT" or "[v6]:PORT": the host is what precedes the last colon, without
// brackets; the port 0 if unreadable.
protocol::ClusterNode node_at(std::string name, const std::string& address) {
  protocol::ClusterNode node;
  node.name = std::move(name);
  const size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  node.ip = host;
  if (colon != std::string::npos) {
    uint32_t port = 0;
    const std::string_view digits = std::string_view(address).substr(colon + 1);
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (error == std::errc() && port <= UINT16_MAX) node.tcp_port = static_cast<uint16_t>(port);
  }
  node.status = cluster_status_healthy;
  return node;
}

// The member code 12 names Leader: this node, unless it drains (docs/cluster.md §Moves); then
// the live member with the lowest id that does not (this node if every one drains).
uint32_t leader_of(const cluster::ClusterView& view) {
  if (!view.is_draining(view.self)) return view.self;
  for (const cluster::NodeInfo& member : view.nodes) {
    if (!view.is_draining(member.id)) return member.id;
  }
  return view.self;
}

// Cluster mode: the live members as etcd lists them, one Leader (leader_of; before this node
// is registered, it alone, so a client is never told to go elsewhere).
protocol::ClusterMetadataResponse members_response(const ServerOptions& options,
                                                   const cluster::ClusterView* view,
                                                   protocol::ClusterNode self) {
  protocol::ClusterMetadataResponse response;
  response.name = options.cluster_name;
  if (view == nullptr || !view->registered) {
    response.nodes.push_back(std::move(self));
    return response;
  }
  const uint32_t leader = leader_of(*view);
  for (const cluster::NodeInfo& member : view->nodes) {
    protocol::ClusterNode node =
        node_at("hark-node-" + std::to_string(member.id), member.client_address);
    node.role = member.id == leader ? cluster_role_leader : cluster_role_follower;
    response.nodes.push_back(std::move(node));
  }
  return response;
}

}  // namespace

protocol::ClusterMetadataResponse cluster_metadata_response(const ServerOptions& options,
                                                            const cluster::ClusterView* view) {
  const std::string& address =
      options.advertised_address.empty() ? options.bound_address : options.advertised_address;
  protocol::ClusterNode node =
      node_at(options.cluster_enabled ? options.cluster_node_name : options.node_name, address);
  node.role = cluster_role_leader;
  if (!options.etcd_endpoints.empty()) {
    node.name = "hark-node-" + std::to_string(options.node_id);
    return members_response(options, view, std::move(node));
  }
  protocol::ClusterMetadataResponse response;
  if (!options.cluster_enabled) {
    // As Iggy 0.8.0 with its cluster disabled: one node, the leader, in "single-node".
    response.name = single_node_cluster_name;
    response.nodes.push_back(std::move(node));
    return response;
  }
  // As Iggy 0.8.0 with its cluster enabled: the configured layout; this node leads.
  response.name = options.cluster_name;
  node.ip = options.cluster_node_ip;
  node.quic_port = options.cluster_node_ports.quic;
  node.http_port = options.cluster_node_ports.http;
  node.websocket_port = options.cluster_node_ports.websocket;
  response.nodes.push_back(std::move(node));
  for (const ClusterPeer& peer : options.cluster_others) {
    response.nodes.push_back({.name = peer.name,
                              .ip = peer.ip,
                              .tcp_port = peer.tcp,
                              .quic_port = peer.ports.quic,
                              .http_port = peer.ports.http,
                              .websocket_port = peer.ports.websocket,
                              .role = cluster_role_follower,
                              .status = cluster_status_healthy});
  }
  return response;
}

protocol::ConsumerOffsetResponse consumer_offset_response(const core::GetOffset& offset) {
  HARK_ASSERT(offset.stored.has_value());
  protocol::ConsumerOffsetResponse response;
  response.partition_id = offset.partition_id;
  response.current_offset = offset.current_offset;
  response.stored_offset = *offset.stored;
  return response;
}

}  // namespace hark::server
