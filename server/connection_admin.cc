// Connection's handlers for the rest of Iggy 0.8.0's commands: updates of the catalog,
// partitions and segments, flush, offset deletion, consumer groups, clients, stats and cluster
// metadata. Control plane: these allocate freely (responses are small and rare).
#include <cstdint>
#include <vector>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/group_responses.h"
#include "hark/protocol/system_responses.h"
#include "hark/server/connection.h"
#include "hark/server/dispatch.h"
#include "hark/server/process_stats.h"
#include "hark/server/shard_server.h"

namespace hark::server {

Status Connection::handle(const protocol::UpdateStreamRequest& request) {
  auto& op = start_op<core::UpdateStream>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  op.name = request.name;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::UpdateTopicRequest& request) {
  auto& op = start_op<core::UpdateTopic>();
  HARK_TRY(fill_update_topic(request, op));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::CreatePartitionsRequest& request) {
  auto& op = start_op<core::CreatePartitions>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  op.count = request.partitions_count;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::DeletePartitionsRequest& request) {
  auto& op = start_op<core::DeletePartitions>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  op.count = request.partitions_count;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::DeleteSegmentsRequest& request) {
  auto& op = start_op<core::DeleteSegments>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  op.partition = request.partition_id;
  op.count = request.segments_count;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::FlushUnsavedBufferRequest& request) {
  auto& op = start_op<core::FlushUnsavedBuffer>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  op.partition = request.partition_id;
  op.fsync = request.fsync;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::DeleteConsumerOffsetRequest& request) {
  auto& op = start_op<core::DeleteOffset>();
  HARK_TRY(fill_consumer(request.consumer, op.consumer, op.group));
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  op.partition = request.partition_id;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::CreateConsumerGroupRequest& request) {
  auto& op = start_op<core::CreateConsumerGroup>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  op.name = request.name;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::DeleteConsumerGroupRequest& request) {
  auto& op = start_op<core::DeleteConsumerGroup>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  HARK_TRY_ASSIGN(op.group, name_or_id(request.group_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetConsumerGroupRequest& request) {
  auto& op = start_op<core::GetConsumerGroup>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  HARK_TRY_ASSIGN(op.group, name_or_id(request.group_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetConsumerGroupsRequest& request) {
  auto& op = start_op<core::GetConsumerGroups>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::JoinConsumerGroupRequest& request) {
  auto& op = start_op<core::JoinConsumerGroup>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  HARK_TRY_ASSIGN(op.group, name_or_id(request.group_id));
  op.member = client_id_;
  // Set before the answer: a join that fails makes the leave at close a harmless no-op.
  joined_group_ = true;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::LeaveConsumerGroupRequest& request) {
  auto& op = start_op<core::LeaveConsumerGroup>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  HARK_TRY_ASSIGN(op.group, name_or_id(request.group_id));
  op.member = client_id_;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetStatsRequest& /*request*/) {
  submit(start_op<core::GetStats>());
  return ok_status();
}

Status Connection::handle(const protocol::GetMeRequest& /*request*/) {
  clients_.clear();
  ClientInfo me = shard_.clients().find(client_id_).value_or(ClientInfo{});
  me.client_id = client_id_;
  clients_.push_back(std::move(me));
  auto& op = start_op<core::GetMemberGroups>();
  op.member = client_id_;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetClientRequest& request) {
  clients_.clear();
  std::optional<ClientInfo> client = shard_.clients().find(request.client_id);
  if (!client) {
    respond_ok();  // An unknown client: OK with an empty payload, as in Iggy 0.8.0.
    return ok_status();
  }
  clients_.push_back(std::move(*client));
  auto& op = start_op<core::GetMemberGroups>();
  op.member = request.client_id;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetClientsRequest& /*request*/) {
  clients_ = shard_.clients().list();
  auto& op = start_op<core::GetMemberGroups>();
  op.member.reset();
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetClusterMetadataRequest& /*request*/) {
  respond_encoded(cluster_metadata_response(shard_.options()));
  return ok_status();
}

void Connection::respond_done(const ConnectionOp<core::CreateConsumerGroup>& op) {
  respond_encoded(group_response(op.group));
}

void Connection::respond_done(const ConnectionOp<core::GetConsumerGroup>& op) {
  // A missing group is OK with an empty payload, as in Iggy 0.8.0.
  if (op.result) {
    respond_encoded(group_details_response(*op.result));
  } else {
    respond_ok();
  }
}

void Connection::respond_done(const ConnectionOp<core::GetConsumerGroups>& op) {
  respond_encoded(groups_response(op.groups));
}

void Connection::respond_done(const ConnectionOp<core::GetStats>& op) {
  const StatsContext context{.started_at = shard_.started_at(),
                             .now = shard_.realtime_now(),
                             .clients_count = shard_.clients().count(),
                             .threads_count = shard_.broker().shards_count(),
                             .data_directory = shard_.options().data_directory};
  respond_encoded(stats_response(op.stats, context));
}

void Connection::respond_done(const ConnectionOp<core::GetMemberGroups>& op) {
  if (code_ == protocol::command_code(protocol::Command::get_clients)) {
    respond_encoded(clients_response(clients_, op.memberships));
  } else {
    HARK_ASSERT(clients_.size() == 1);
    respond_encoded(client_details_response(clients_.front(), op.memberships));
  }
  clients_.clear();
}

}  // namespace hark::server
