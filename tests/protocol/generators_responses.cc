#include "hark/tests/protocol/generators.h"

namespace rc {
namespace {

namespace p = hark::protocol;
using hark::protocol::test::gen_bytes;
using hark::protocol::test::gen_float;
using hark::protocol::test::gen_name;
using hark::protocol::test::gen_optional;
using hark::protocol::test::gen_text;

// Lists stay short so nested responses stay fast to generate.
template <typename T>
Gen<std::vector<T>> gen_list() {
  return gen::resize(10, gen::container<std::vector<T>>(gen::arbitrary<T>()));
}

}  // namespace

Gen<p::StreamResponse> Arbitrary<p::StreamResponse>::arbitrary() {
  return gen::build<p::StreamResponse>(
      gen::set(&p::StreamResponse::id), gen::set(&p::StreamResponse::created_at),
      gen::set(&p::StreamResponse::topics_count), gen::set(&p::StreamResponse::size_bytes),
      gen::set(&p::StreamResponse::messages_count), gen::set(&p::StreamResponse::name, gen_name()));
}

Gen<p::TopicResponse> Arbitrary<p::TopicResponse>::arbitrary() {
  return gen::build<p::TopicResponse>(
      gen::set(&p::TopicResponse::id), gen::set(&p::TopicResponse::created_at),
      gen::set(&p::TopicResponse::partitions_count), gen::set(&p::TopicResponse::message_expiry),
      gen::set(&p::TopicResponse::compression_algorithm),
      gen::set(&p::TopicResponse::max_topic_size), gen::set(&p::TopicResponse::replication_factor),
      gen::set(&p::TopicResponse::size_bytes), gen::set(&p::TopicResponse::messages_count),
      gen::set(&p::TopicResponse::name, gen_name()));
}

Gen<p::PartitionResponse> Arbitrary<p::PartitionResponse>::arbitrary() {
  return gen::build<p::PartitionResponse>(
      gen::set(&p::PartitionResponse::id), gen::set(&p::PartitionResponse::created_at),
      gen::set(&p::PartitionResponse::segments_count),
      gen::set(&p::PartitionResponse::current_offset), gen::set(&p::PartitionResponse::size_bytes),
      gen::set(&p::PartitionResponse::messages_count));
}

Gen<p::StreamDetailsResponse> Arbitrary<p::StreamDetailsResponse>::arbitrary() {
  return gen::apply(
      [](p::StreamResponse stream, std::vector<p::TopicResponse> topics) {
        stream.topics_count = static_cast<uint32_t>(topics.size());
        return p::StreamDetailsResponse{std::move(stream), std::move(topics)};
      },
      gen::arbitrary<p::StreamResponse>(), gen_list<p::TopicResponse>());
}

Gen<p::StreamsResponse> Arbitrary<p::StreamsResponse>::arbitrary() {
  return gen::build<p::StreamsResponse>(
      gen::set(&p::StreamsResponse::streams, gen_list<p::StreamResponse>()));
}

Gen<p::TopicDetailsResponse> Arbitrary<p::TopicDetailsResponse>::arbitrary() {
  return gen::apply(
      [](p::TopicResponse topic, std::vector<p::PartitionResponse> partitions) {
        topic.partitions_count = static_cast<uint32_t>(partitions.size());
        return p::TopicDetailsResponse{std::move(topic), std::move(partitions)};
      },
      gen::arbitrary<p::TopicResponse>(), gen_list<p::PartitionResponse>());
}

Gen<p::TopicsResponse> Arbitrary<p::TopicsResponse>::arbitrary() {
  return gen::build<p::TopicsResponse>(
      gen::set(&p::TopicsResponse::topics, gen_list<p::TopicResponse>()));
}

Gen<p::ConsumerGroupResponse> Arbitrary<p::ConsumerGroupResponse>::arbitrary() {
  return gen::build<p::ConsumerGroupResponse>(
      gen::set(&p::ConsumerGroupResponse::id),
      gen::set(&p::ConsumerGroupResponse::partitions_count),
      gen::set(&p::ConsumerGroupResponse::members_count),
      gen::set(&p::ConsumerGroupResponse::name, gen_name()));
}

Gen<p::ConsumerGroupMember> Arbitrary<p::ConsumerGroupMember>::arbitrary() {
  return gen::build<p::ConsumerGroupMember>(gen::set(&p::ConsumerGroupMember::id),
                                            gen::set(&p::ConsumerGroupMember::partitions));
}

Gen<p::ConsumerGroupDetailsResponse> Arbitrary<p::ConsumerGroupDetailsResponse>::arbitrary() {
  return gen::apply(
      [](p::ConsumerGroupResponse group, std::vector<p::ConsumerGroupMember> members) {
        group.members_count = static_cast<uint32_t>(members.size());
        return p::ConsumerGroupDetailsResponse{std::move(group), std::move(members)};
      },
      gen::arbitrary<p::ConsumerGroupResponse>(), gen_list<p::ConsumerGroupMember>());
}

Gen<p::ConsumerGroupsResponse> Arbitrary<p::ConsumerGroupsResponse>::arbitrary() {
  return gen::build<p::ConsumerGroupsResponse>(
      gen::set(&p::ConsumerGroupsResponse::groups, gen_list<p::ConsumerGroupResponse>()));
}

Gen<p::ConsumerOffsetResponse> Arbitrary<p::ConsumerOffsetResponse>::arbitrary() {
  return gen::build<p::ConsumerOffsetResponse>(gen::set(&p::ConsumerOffsetResponse::partition_id),
                                               gen::set(&p::ConsumerOffsetResponse::current_offset),
                                               gen::set(&p::ConsumerOffsetResponse::stored_offset));
}

Gen<p::IdentityResponse> Arbitrary<p::IdentityResponse>::arbitrary() {
  return gen::build<p::IdentityResponse>(gen::set(&p::IdentityResponse::user_id));
}

Gen<p::ClientResponse> Arbitrary<p::ClientResponse>::arbitrary() {
  return gen::build<p::ClientResponse>(gen::set(&p::ClientResponse::client_id),
                                       gen::set(&p::ClientResponse::user_id),
                                       gen::set(&p::ClientResponse::transport),
                                       gen::set(&p::ClientResponse::address, gen_text(0, 300)),
                                       gen::set(&p::ClientResponse::consumer_groups_count));
}

Gen<p::ConsumerGroupInfo> Arbitrary<p::ConsumerGroupInfo>::arbitrary() {
  return gen::build<p::ConsumerGroupInfo>(gen::set(&p::ConsumerGroupInfo::stream_id),
                                          gen::set(&p::ConsumerGroupInfo::topic_id),
                                          gen::set(&p::ConsumerGroupInfo::group_id));
}

Gen<p::ClientDetailsResponse> Arbitrary<p::ClientDetailsResponse>::arbitrary() {
  return gen::apply(
      [](p::ClientResponse client, std::vector<p::ConsumerGroupInfo> groups) {
        client.consumer_groups_count = static_cast<uint32_t>(groups.size());
        return p::ClientDetailsResponse{std::move(client), std::move(groups)};
      },
      gen::arbitrary<p::ClientResponse>(), gen_list<p::ConsumerGroupInfo>());
}

Gen<p::ClientsResponse> Arbitrary<p::ClientsResponse>::arbitrary() {
  return gen::build<p::ClientsResponse>(
      gen::set(&p::ClientsResponse::clients, gen_list<p::ClientResponse>()));
}

Gen<p::CacheMetric> Arbitrary<p::CacheMetric>::arbitrary() {
  return gen::build<p::CacheMetric>(
      gen::set(&p::CacheMetric::stream_id), gen::set(&p::CacheMetric::topic_id),
      gen::set(&p::CacheMetric::partition_id), gen::set(&p::CacheMetric::hits),
      gen::set(&p::CacheMetric::misses), gen::set(&p::CacheMetric::hit_ratio, gen_float()));
}

Gen<p::StatsResponse> Arbitrary<p::StatsResponse>::arbitrary() {
  using S = p::StatsResponse;
  return gen::build<S>(
      gen::set(&S::process_id), gen::set(&S::cpu_usage, gen_float()),
      gen::set(&S::total_cpu_usage, gen_float()), gen::set(&S::memory_usage),
      gen::set(&S::total_memory), gen::set(&S::available_memory), gen::set(&S::run_time),
      gen::set(&S::start_time), gen::set(&S::read_bytes), gen::set(&S::written_bytes),
      gen::set(&S::messages_size_bytes), gen::set(&S::streams_count), gen::set(&S::topics_count),
      gen::set(&S::partitions_count), gen::set(&S::segments_count), gen::set(&S::messages_count),
      gen::set(&S::clients_count), gen::set(&S::consumer_groups_count),
      gen::set(&S::hostname, gen_text(0, 64)), gen::set(&S::os_name, gen_text(0, 64)),
      gen::set(&S::os_version, gen_text(0, 64)), gen::set(&S::kernel_version, gen_text(0, 64)),
      gen::set(&S::server_version, gen_text(0, 64)), gen::set(&S::server_semver),
      gen::set(&S::cache_metrics, gen_list<p::CacheMetric>()), gen::set(&S::threads_count),
      gen::set(&S::free_disk_space), gen::set(&S::total_disk_space));
}

Gen<p::ClusterNode> Arbitrary<p::ClusterNode>::arbitrary() {
  return gen::build<p::ClusterNode>(
      gen::set(&p::ClusterNode::name, gen_text(0, 64)),
      gen::set(&p::ClusterNode::ip, gen_text(0, 64)), gen::set(&p::ClusterNode::tcp_port),
      gen::set(&p::ClusterNode::quic_port), gen::set(&p::ClusterNode::http_port),
      gen::set(&p::ClusterNode::websocket_port), gen::set(&p::ClusterNode::role),
      gen::set(&p::ClusterNode::status));
}

Gen<p::ClusterMetadataResponse> Arbitrary<p::ClusterMetadataResponse>::arbitrary() {
  return gen::build<p::ClusterMetadataResponse>(
      gen::set(&p::ClusterMetadataResponse::name, gen_text(0, 64)),
      gen::set(&p::ClusterMetadataResponse::nodes, gen_list<p::ClusterNode>()));
}

Gen<p::SnapshotResponse> Arbitrary<p::SnapshotResponse>::arbitrary() {
  return gen::build<p::SnapshotResponse>(gen::set(&p::SnapshotResponse::data, gen_bytes(4096)));
}

Gen<p::UserResponse> Arbitrary<p::UserResponse>::arbitrary() {
  return gen::build<p::UserResponse>(
      gen::set(&p::UserResponse::id), gen::set(&p::UserResponse::created_at),
      gen::set(&p::UserResponse::status), gen::set(&p::UserResponse::username, gen_name()));
}

Gen<p::UserDetailsResponse> Arbitrary<p::UserDetailsResponse>::arbitrary() {
  return gen::build<p::UserDetailsResponse>(
      gen::set(&p::UserDetailsResponse::user),
      gen::set(&p::UserDetailsResponse::permissions,
               gen_optional(gen::arbitrary<p::Permissions>())));
}

Gen<p::UsersResponse> Arbitrary<p::UsersResponse>::arbitrary() {
  return gen::build<p::UsersResponse>(
      gen::set(&p::UsersResponse::users, gen_list<p::UserResponse>()));
}

Gen<p::RawPersonalAccessTokenResponse> Arbitrary<p::RawPersonalAccessTokenResponse>::arbitrary() {
  return gen::build<p::RawPersonalAccessTokenResponse>(
      gen::set(&p::RawPersonalAccessTokenResponse::token, gen_name()));
}

Gen<p::PersonalAccessTokenInfo> Arbitrary<p::PersonalAccessTokenInfo>::arbitrary() {
  return gen::build<p::PersonalAccessTokenInfo>(
      gen::set(&p::PersonalAccessTokenInfo::name, gen_name()),
      gen::set(&p::PersonalAccessTokenInfo::expiry_at));
}

Gen<p::PersonalAccessTokensResponse> Arbitrary<p::PersonalAccessTokensResponse>::arbitrary() {
  return gen::build<p::PersonalAccessTokensResponse>(
      gen::set(&p::PersonalAccessTokensResponse::tokens, gen_list<p::PersonalAccessTokenInfo>()));
}

}  // namespace rc
