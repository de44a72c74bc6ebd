#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Responses of the system and client commands, as 0.8.0 sends them (docs/wire.md §Responses).

// login_user and login_with_personal_access_token: [user_id u32].
struct IdentityResponse {
  uint32_t user_id = 0;
  bool operator==(const IdentityResponse&) const = default;
};

// 17 + address bytes: [client_id u32][user_id u32 (UINT32_MAX before login)][transport u8:
// 1 tcp, 2 quic, 3 http, 4 websocket][address: len u32 + "ip:port"][consumer_groups_count u32].
struct ClientResponse {
  uint32_t client_id = 0;
  uint32_t user_id = 0;
  uint8_t transport = 1;
  std::string address;
  uint32_t consumer_groups_count = 0;
  bool operator==(const ClientResponse&) const = default;
};

// [stream_id u32][topic_id u32][group_id u32].
struct ConsumerGroupInfo {
  uint32_t stream_id = 0;
  uint32_t topic_id = 0;
  uint32_t group_id = 0;
  bool operator==(const ConsumerGroupInfo&) const = default;
};

// get_client, get_me: the client, then client.consumer_groups_count ConsumerGroupInfos.
// get_client on an unknown id answers an empty payload (decode_optional_payload).
struct ClientDetailsResponse {
  ClientResponse client;
  std::vector<ConsumerGroupInfo> consumer_groups;
  bool operator==(const ClientDetailsResponse&) const = default;
};

// get_clients: ClientResponses to the end. consumer_groups_count is filled in but no
// ConsumerGroupInfo follows any of them (0.8.0 quirk).
struct ClientsResponse {
  std::vector<ClientResponse> clients;
  bool operator==(const ClientsResponse&) const = default;
};

struct CacheMetric {
  uint32_t stream_id = 0;
  uint32_t topic_id = 0;
  uint32_t partition_id = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  float hit_ratio = 0;
  bool operator==(const CacheMetric&) const = default;
};

// get_stats: a 108-byte numeric part (0.8.0's source comment says 104; the fields sum to 108),
// five [len u32][UTF-8] strings, [server_semver u32 (0 = none; 0.8.0 → 8000)]
// [cache_metrics_count u32][32 B each][threads_count u32][free_disk u64][total_disk u64].
struct StatsResponse {
  uint32_t process_id = 0;
  float cpu_usage = 0;
  float total_cpu_usage = 0;
  uint64_t memory_usage = 0;
  uint64_t total_memory = 0;
  uint64_t available_memory = 0;
  uint64_t run_time = 0;
  uint64_t start_time = 0;
  uint64_t read_bytes = 0;
  uint64_t written_bytes = 0;
  uint64_t messages_size_bytes = 0;
  uint32_t streams_count = 0;
  uint32_t topics_count = 0;
  uint32_t partitions_count = 0;
  uint32_t segments_count = 0;
  uint64_t messages_count = 0;
  uint32_t clients_count = 0;
  uint32_t consumer_groups_count = 0;
  std::string hostname;
  std::string os_name;
  std::string os_version;
  std::string kernel_version;
  std::string server_version;
  uint32_t server_semver = 0;
  std::vector<CacheMetric> cache_metrics;
  uint32_t threads_count = 0;
  uint64_t free_disk_space = 0;
  uint64_t total_disk_space = 0;
  bool operator==(const StatsResponse&) const = default;
};

// [name: len u32 + bytes][ip: len u32 + bytes][tcp u16][quic u16][http u16][websocket u16]
// [role u8: 0 leader, 1 follower][status u8: 0 healthy … 5 unknown].
struct ClusterNode {
  std::string name;
  std::string ip;
  uint16_t tcp_port = 0;
  uint16_t quic_port = 0;
  uint16_t http_port = 0;
  uint16_t websocket_port = 0;
  uint8_t role = 0;
  uint8_t status = 0;
  bool operator==(const ClusterNode&) const = default;
};

// get_cluster_metadata: [name: len u32 + bytes][nodes_count u32][ClusterNode × nodes_count].
struct ClusterMetadataResponse {
  std::string name;
  std::vector<ClusterNode> nodes;
  bool operator==(const ClusterMetadataResponse&) const = default;
};

// get_snapshot_file: the raw archive bytes, no framing of their own.
struct SnapshotResponse {
  Bytes data;
  bool operator==(const SnapshotResponse&) const = default;
};

void encode(const IdentityResponse& response, Writer& writer);
Status decode(Reader& reader, IdentityResponse& response);
void encode(const ClientResponse& response, Writer& writer);
Status decode(Reader& reader, ClientResponse& response);
void encode(const ConsumerGroupInfo& info, Writer& writer);
Status decode(Reader& reader, ConsumerGroupInfo& info);
void encode(const ClientDetailsResponse& response, Writer& writer);
Status decode(Reader& reader, ClientDetailsResponse& response);
void encode(const ClientsResponse& response, Writer& writer);
Status decode(Reader& reader, ClientsResponse& response);
void encode(const CacheMetric& metric, Writer& writer);
Status decode(Reader& reader, CacheMetric& metric);
void encode(const StatsResponse& response, Writer& writer);
Status decode(Reader& reader, StatsResponse& response);
void encode(const ClusterNode& node, Writer& writer);
Status decode(Reader& reader, ClusterNode& node);
void encode(const ClusterMetadataResponse& response, Writer& writer);
Status decode(Reader& reader, ClusterMetadataResponse& response);
void encode(const SnapshotResponse& response, Writer& writer);
Status decode(Reader& reader, SnapshotResponse& response);

}  // namespace hark::protocol
