#include "hark/protocol/system_responses.h"

#include "hark/protocol/primitives.h"
#include "hark/protocol/response_lists.h"

namespace hark::protocol {
namespace {

// The fixed numeric part of get_stats (108 bytes).
void encode_stats_numbers(const StatsResponse& stats, Writer& writer) {
  writer.u32(stats.process_id);
  writer.f32(stats.cpu_usage);
  writer.f32(stats.total_cpu_usage);
  writer.u64(stats.memory_usage);
  writer.u64(stats.total_memory);
  writer.u64(stats.available_memory);
  writer.u64(stats.run_time);
  writer.u64(stats.start_time);
  writer.u64(stats.read_bytes);
  writer.u64(stats.written_bytes);
  writer.u64(stats.messages_size_bytes);
  writer.u32(stats.streams_count);
  writer.u32(stats.topics_count);
  writer.u32(stats.partitions_count);
  writer.u32(stats.segments_count);
  writer.u64(stats.messages_count);
  writer.u32(stats.clients_count);
  writer.u32(stats.consumer_groups_count);
}

Status decode_stats_numbers(Reader& reader, StatsResponse& stats) {
  HARK_TRY_ASSIGN(stats.process_id, reader.u32());
  HARK_TRY_ASSIGN(stats.cpu_usage, reader.f32());
  HARK_TRY_ASSIGN(stats.total_cpu_usage, reader.f32());
  HARK_TRY_ASSIGN(stats.memory_usage, reader.u64());
  HARK_TRY_ASSIGN(stats.total_memory, reader.u64());
  HARK_TRY_ASSIGN(stats.available_memory, reader.u64());
  HARK_TRY_ASSIGN(stats.run_time, reader.u64());
  HARK_TRY_ASSIGN(stats.start_time, reader.u64());
  HARK_TRY_ASSIGN(stats.read_bytes, reader.u64());
  HARK_TRY_ASSIGN(stats.written_bytes, reader.u64());
  HARK_TRY_ASSIGN(stats.messages_size_bytes, reader.u64());
  HARK_TRY_ASSIGN(stats.streams_count, reader.u32());
  HARK_TRY_ASSIGN(stats.topics_count, reader.u32());
  HARK_TRY_ASSIGN(stats.partitions_count, reader.u32());
  HARK_TRY_ASSIGN(stats.segments_count, reader.u32());
  HARK_TRY_ASSIGN(stats.messages_count, reader.u64());
  HARK_TRY_ASSIGN(stats.clients_count, reader.u32());
  HARK_TRY_ASSIGN(stats.consumer_groups_count, reader.u32());
  return ok_status();
}

Status decode_stats_strings(Reader& reader, StatsResponse& stats) {
  HARK_TRY_ASSIGN(stats.hostname, read_long_string(reader));
  HARK_TRY_ASSIGN(stats.os_name, read_long_string(reader));
  HARK_TRY_ASSIGN(stats.os_version, read_long_string(reader));
  HARK_TRY_ASSIGN(stats.kernel_version, read_long_string(reader));
  HARK_TRY_ASSIGN(stats.server_version, read_long_string(reader));
  return ok_status();
}

}  // namespace

void encode(const IdentityResponse& response, Writer& writer) { writer.u32(response.user_id); }

Status decode(Reader& reader, IdentityResponse& response) {
  HARK_TRY_ASSIGN(response.user_id, reader.u32());
  return ok_status();
}

void encode(const ClientResponse& response, Writer& writer) {
  writer.u32(response.client_id);
  writer.u32(response.user_id);
  writer.u8(response.transport);
  write_long_string(writer, response.address);
  writer.u32(response.consumer_groups_count);
}

Status decode(Reader& reader, ClientResponse& response) {
  HARK_TRY_ASSIGN(response.client_id, reader.u32());
  HARK_TRY_ASSIGN(response.user_id, reader.u32());
  HARK_TRY_ASSIGN(response.transport, reader.u8());
  HARK_TRY_ASSIGN(response.address, read_long_string(reader));
  HARK_TRY_ASSIGN(response.consumer_groups_count, reader.u32());
  return ok_status();
}

void encode(const ConsumerGroupInfo& info, Writer& writer) {
  writer.u32(info.stream_id);
  writer.u32(info.topic_id);
  writer.u32(info.group_id);
}

Status decode(Reader& reader, ConsumerGroupInfo& info) {
  HARK_TRY_ASSIGN(info.stream_id, reader.u32());
  HARK_TRY_ASSIGN(info.topic_id, reader.u32());
  HARK_TRY_ASSIGN(info.group_id, reader.u32());
  return ok_status();
}

void encode(const ClientDetailsResponse& response, Writer& writer) {
  encode(response.client, writer);
  encode_all(response.consumer_groups, writer);
}

Status decode(Reader& reader, ClientDetailsResponse& response) {
  HARK_TRY(decode(reader, response.client));
  return decode_counted(reader, response.client.consumer_groups_count, response.consumer_groups);
}

void encode(const ClientsResponse& response, Writer& writer) {
  encode_all(response.clients, writer);
}

Status decode(Reader& reader, ClientsResponse& response) {
  return decode_run(reader, response.clients);
}

void encode(const CacheMetric& metric, Writer& writer) {
  writer.u32(metric.stream_id);
  writer.u32(metric.topic_id);
  writer.u32(metric.partition_id);
  writer.u64(metric.hits);
  writer.u64(metric.misses);
  writer.f32(metric.hit_ratio);
}

Status decode(Reader& reader, CacheMetric& metric) {
  HARK_TRY_ASSIGN(metric.stream_id, reader.u32());
  HARK_TRY_ASSIGN(metric.topic_id, reader.u32());
  HARK_TRY_ASSIGN(metric.partition_id, reader.u32());
  HARK_TRY_ASSIGN(metric.hits, reader.u64());
  HARK_TRY_ASSIGN(metric.misses, reader.u64());
  HARK_TRY_ASSIGN(metric.hit_ratio, reader.f32());
  return ok_status();
}

void encode(const StatsResponse& response, Writer& writer) {
  encode_stats_numbers(response, writer);
  write_long_string(writer, response.hostname);
  write_long_string(writer, response.os_name);
  write_long_string(writer, response.os_version);
  write_long_string(writer, response.kernel_version);
  write_long_string(writer, response.server_version);
  writer.u32(response.server_semver);
  writer.u32(static_cast<uint32_t>(response.cache_metrics.size()));
  encode_all(response.cache_metrics, writer);
  writer.u32(response.threads_count);
  writer.u64(response.free_disk_space);
  writer.u64(response.total_disk_space);
}

Status decode(Reader& reader, StatsResponse& response) {
  HARK_TRY(decode_stats_numbers(reader, response));
  HARK_TRY(decode_stats_strings(reader, response));
  HARK_TRY_ASSIGN(response.server_semver, reader.u32());
  HARK_TRY_ASSIGN(const uint32_t cache_metrics_count, reader.u32());
  HARK_TRY(decode_counted(reader, cache_metrics_count, response.cache_metrics));
  HARK_TRY_ASSIGN(response.threads_count, reader.u32());
  HARK_TRY_ASSIGN(response.free_disk_space, reader.u64());
  HARK_TRY_ASSIGN(response.total_disk_space, reader.u64());
  return ok_status();
}

void encode(const ClusterNode& node, Writer& writer) {
  write_long_string(writer, node.name);
  write_long_string(writer, node.ip);
  writer.u16(node.tcp_port);
  writer.u16(node.quic_port);
  writer.u16(node.http_port);
  writer.u16(node.websocket_port);
  writer.u8(node.role);
  writer.u8(node.status);
}

Status decode(Reader& reader, ClusterNode& node) {
  HARK_TRY_ASSIGN(node.name, read_long_string(reader));
  HARK_TRY_ASSIGN(node.ip, read_long_string(reader));
  HARK_TRY_ASSIGN(node.tcp_port, reader.u16());
  HARK_TRY_ASSIGN(node.quic_port, reader.u16());
  HARK_TRY_ASSIGN(node.http_port, reader.u16());
  HARK_TRY_ASSIGN(node.websocket_port, reader.u16());
  HARK_TRY_ASSIGN(node.role, reader.u8());
  HARK_TRY_ASSIGN(node.status, reader.u8());
  return ok_status();
}

void encode(const ClusterMetadataResponse& response, Writer& writer) {
  write_long_string(writer, response.name);
  writer.u32(static_cast<uint32_t>(response.nodes.size()));
  encode_all(response.nodes, writer);
}

Status decode(Reader& reader, ClusterMetadataResponse& response) {
  HARK_TRY_ASSIGN(response.name, read_long_string(reader));
  HARK_TRY_ASSIGN(const uint32_t nodes_count, reader.u32());
  return decode_counted(reader, nodes_count, response.nodes);
}

void encode(const SnapshotResponse& response, Writer& writer) { writer.bytes(response.data); }

Status decode(Reader& reader, SnapshotResponse& response) {
  const std::span<const std::byte> data = reader.rest();
  response.data.assign(data.begin(), data.end());
  return ok_status();
}

}  // namespace hark::protocol
