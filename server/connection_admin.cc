// Connection's handlers for the rest of Iggy 0.8.0's commands, one per row of commands.inc: ping,
// updates of the catalog, partitions and segments, flush, offset deletion, consumer groups,
// clients, stats and cluster metadata. Control plane: these allocate freely (responses are
// small and rare).
#include <cstdint>
#include <vector>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/group_responses.h"
#include "hark/protocol/system_responses.h"
#include "hark/server/command_table.h"
#include "hark/server/connection.h"
#include "hark/server/dispatch.h"
#include "hark/server/process_stats.h"
#include "hark/server/shard_server.h"

namespace hark::server {

Status Connection::ping(const protocol::PingRequest& /*request*/) {
  respond_ok();
  return ok_status();
}

Status Connection::update_stream(const protocol::UpdateStreamRequest& request,
                                 core::UpdateStream& op) {
  HARK_TRY(fill_ids(request, op));
  op.name = request.name;
  return ok_status();
}

// In cluster mode a topic keeps the replication factor it was created with: its partitions'
// replicas were placed for it (docs/cluster.md §Replication factor).
Status Connection::update_topic(const protocol::UpdateTopicRequest& request,
                                core::UpdateTopic& op) {
  HARK_TRY(fill_update_topic(request, op));
  if (shard_.options().etcd_endpoints.empty()) return ok_status();
  HARK_TRY_ASSIGN(const core::TopicSettings current,
                  shard_.broker().topic_settings(op.stream, op.topic));
  if (request.replication_factor > 1 && request.replication_factor != current.replication_factor) {
    HARK_LOG_WARN(
        "cluster: UpdateTopic %s keeps replication factor %u (asked %u): changing a "
        "topic's factor is not built",
        request.name, current.replication_factor, request.replication_factor);
  }
  op.settings.replication_factor = current.replication_factor;
  return ok_status();
}

Status Connection::create_partitions(const protocol::CreatePartitionsRequest& request,
                                     core::CreatePartitions& op) {
  HARK_TRY(fill_ids(request, op));
  op.count = request.partitions_count;
  return ok_status();
}

Status Connection::delete_partitions(const protocol::DeletePartitionsRequest& request,
                                     core::DeletePartitions& op) {
  HARK_TRY(fill_ids(request, op));
  op.count = request.partitions_count;
  return ok_status();
}

Status Connection::delete_segments(const protocol::DeleteSegmentsRequest& request,
                                   core::DeleteSegments& op) {
  HARK_TRY(fill_ids(request, op));
  op.count = request.segments_count;
  return ok_status();
}

Status Connection::flush_unsaved_buffer(const protocol::FlushUnsavedBufferRequest& request,
                                        core::FlushUnsavedBuffer& op) {
  HARK_TRY(fill_ids(request, op));
  op.fsync = request.fsync;
  return ok_status();
}

Status Connection::delete_consumer_offset(const protocol::DeleteConsumerOffsetRequest& request,
                                          core::DeleteOffset& op) {
  return fill_ids(request, op);
}

Status Connection::create_consumer_group(const protocol::CreateConsumerGroupRequest& request,
                                         core::CreateConsumerGroup& op) {
  HARK_TRY(fill_ids(request, op));
  op.name = request.name;
  return ok_status();
}

void Connection::respond_create_consumer_group(const core::CreateConsumerGroup& op) {
  respond_encoded(group_response(op.group));
}

Status Connection::delete_consumer_group(const protocol::DeleteConsumerGroupRequest& request,
                                         core::DeleteConsumerGroup& op) {
  return fill_ids(request, op);
}

Status Connection::get_consumer_group(const protocol::GetConsumerGroupRequest& request,
                                      core::GetConsumerGroup& op) {
  return fill_ids(request, op);
}

void Connection::respond_get_consumer_group(const core::GetConsumerGroup& op) {
  // A missing group is OK with an empty payload, as in Iggy 0.8.0.
  if (op.result) {
    respond_encoded(group_details_response(*op.result));
  } else {
    respond_ok();
  }
}

Status Connection::get_consumer_groups(const protocol::GetConsumerGroupsRequest& request,
                                       core::GetConsumerGroups& op) {
  return fill_ids(request, op);
}

void Connection::respond_get_consumer_groups(const core::GetConsumerGroups& op) {
  respond_encoded(groups_response(op.groups));
}

Status Connection::join_consumer_group(const protocol::JoinConsumerGroupRequest& request,
                                       core::JoinConsumerGroup& op) {
  HARK_TRY(fill_ids(request, op));
  op.member = client_id_;
  // Set before the answer: a join that fails makes the leave at close a harmless no-op.
  joined_group_ = true;
  return ok_status();
}

Status Connection::leave_consumer_group(const protocol::LeaveConsumerGroupRequest& request,
                                        core::LeaveConsumerGroup& op) {
  HARK_TRY(fill_ids(request, op));
  op.member = client_id_;
  return ok_status();
}

Status Connection::get_stats(const protocol::GetStatsRequest& /*request*/, core::GetStats& /*op*/) {
  return ok_status();
}

void Connection::respond_get_stats(const core::GetStats& op) {
  const StatsContext context{.started_at = shard_.started_at(),
                             .now = shard_.realtime_now(),
                             .clients_count = shard_.clients().count(),
                             .threads_count = shard_.broker().shards_count(),
                             .data_directory = shard_.options().data_directory};
  respond_encoded(stats_response(op.stats, context));
}

Status Connection::get_me(const protocol::GetMeRequest& /*request*/, core::GetMemberGroups& op) {
  clients_.clear();
  ClientInfo me = shard_.clients().find(client_id_).value_or(ClientInfo{});
  me.client_id = client_id_;
  clients_.push_back(std::move(me));
  op.member = client_id_;
  return ok_status();
}

void Connection::respond_get_me(const core::GetMemberGroups& op) { respond_client_details(op); }

Status Connection::get_client(const protocol::GetClientRequest& request,
                              core::GetMemberGroups& op) {
  clients_.clear();
  std::optional<ClientInfo> client = shard_.clients().find(request.client_id);
  // An unknown client: OK with an empty payload, as in Iggy 0.8.0 (respond_client_details).
  if (client) clients_.push_back(std::move(*client));
  op.member = request.client_id;
  return ok_status();
}

void Connection::respond_get_client(const core::GetMemberGroups& op) { respond_client_details(op); }

void Connection::respond_client_details(const core::GetMemberGroups& op) {
  HARK_ASSERT(clients_.size() <= 1);
  if (clients_.empty()) {
    respond_ok();
  } else {
    respond_encoded(client_details_response(clients_.front(), op.memberships));
  }
  clients_.clear();
}

Status Connection::get_clients(const protocol::GetClientsRequest& /*request*/,
                               core::GetMemberGroups& op) {
  clients_ = shard_.clients().list();
  op.member.reset();
  return ok_status();
}

void Connection::respond_get_clients(const core::GetMemberGroups& op) {
  respond_encoded(clients_response(clients_, op.memberships));
  clients_.clear();
}

Status Connection::get_cluster_metadata(const protocol::GetClusterMetadataRequest& /*request*/) {
  respond_encoded(cluster_metadata_response(shard_.options(), shard_.cluster_view()));
  return ok_status();
}

}  // namespace hark::server
