// Connection's handlers for the data plane (messages, offsets) and the streams and topics, one
// per row of commands.inc: each fills its Operation, and each respond_* turns a finished one
// into its response frame. Then the responses' common parts.
#include <cstdint>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/system_responses.h"
#include "hark/server/classic_wait.h"
#include "hark/server/command_table.h"
#include "hark/server/connection.h"
#include "hark/server/dispatch.h"
#include "hark/server/shard_server.h"

namespace hark::server {

Status Connection::create_stream(const protocol::CreateStreamRequest& request,
                                 core::CreateStream& op) {
  op.name = request.name;
  return ok_status();
}

void Connection::respond_create_stream(const core::CreateStream& op) {
  respond_encoded(stream_response(op.stream));
}

Status Connection::get_stream(const protocol::GetStreamRequest& request, core::GetStream& op) {
  return fill_ids(request, op);
}

void Connection::respond_get_stream(const core::GetStream& op) {
  // A missing stream is OK with an empty payload, as in Iggy 0.8.0.
  if (op.result) {
    respond_figures(*op.result, {.stream = op.result->stream.id});
  } else {
    respond_ok();
  }
}

Status Connection::get_streams(const protocol::GetStreamsRequest& /*request*/,
                               core::GetStreams& /*op*/) {
  return ok_status();
}

void Connection::respond_get_streams(const core::GetStreams& op) {
  respond_figures(op.streams, {});
}

Status Connection::delete_stream(const protocol::DeleteStreamRequest& request,
                                 core::DeleteStream& op) {
  return fill_ids(request, op);
}

Status Connection::purge_stream(const protocol::PurgeStreamRequest& request,
                                core::PurgeStream& op) {
  return fill_ids(request, op);
}

// In cluster mode the topic gets its effective replication factor (docs/cluster.md
// §Replication factor); one node keeps the factor it is sent, as Iggy 0.8.0 does.
Status Connection::create_topic(const protocol::CreateTopicRequest& request,
                                core::CreateTopic& op) {
  HARK_TRY(fill_create_topic(request, op));
  if (shard_.options().etcd_endpoints.empty()) return ok_status();
  const cluster::ClusterView* const view = shard_.cluster_view();
  if (view == nullptr) {
    HARK_LOG_WARN("cluster: CreateTopic %s refused: this node has no view of the cluster yet",
                  request.name);
    return Error::feature_unavailable;
  }
  const uint8_t minimum = shard_.options().min_replication_factor_or_default();
  const Result<cluster::EffectiveFactor> factor = cluster::effective_replication_factor(
      request.replication_factor, minimum, view->nodes.size());
  if (!factor.ok()) {
    HARK_LOG_WARN(
        "cluster: CreateTopic %s refused: replication factor %u is above the %u live "
        "nodes",
        request.name, request.replication_factor, view->nodes.size());
    return factor.error();
  }
  if (factor->capped) {
    HARK_LOG_WARN(
        "cluster: topic %s gets replication factor %u, below the minimum %u: only %u "
        "nodes are live",
        request.name, factor->factor, minimum, view->nodes.size());
  }
  op.settings.replication_factor = factor->factor;
  return ok_status();
}

void Connection::respond_create_topic(const core::CreateTopic& op) {
  respond_encoded(topic_details_response(op.topic));
}

Status Connection::get_topic(const protocol::GetTopicRequest& request, core::GetTopic& op) {
  return fill_ids(request, op);
}

void Connection::respond_get_topic(const core::GetTopic& op) {
  if (op.result) {
    const Result<core::Broker::ResolvedIds> ids = shard_.broker().resolve(op.stream, &op.topic);
    respond_figures(*op.result, {.stream = ids.ok() ? std::optional(ids->stream) : std::nullopt,
                                 .topic = op.result->topic.id});
  } else {
    respond_ok();
  }
}

Status Connection::get_topics(const protocol::GetTopicsRequest& request, core::GetTopics& op) {
  return fill_ids(request, op);
}

void Connection::respond_get_topics(const core::GetTopics& op) {
  const Result<core::Broker::ResolvedIds> ids = shard_.broker().resolve(op.stream, nullptr);
  respond_figures(op.topics, {.stream = ids.ok() ? std::optional(ids->stream) : std::nullopt});
}

Status Connection::delete_topic(const protocol::DeleteTopicRequest& request,
                                core::DeleteTopic& op) {
  return fill_ids(request, op);
}

Status Connection::purge_topic(const protocol::PurgeTopicRequest& request, core::PurgeTopic& op) {
  return fill_ids(request, op);
}

Status Connection::send_messages(const protocol::SendMessagesRequest& request, core::Append& op) {
  // The messages stay in the pinned request frame until the append's done().
  if (largest_payload(request.messages) > shard_.options().message_payload_max) {
    return Error::too_big_message_payload;
  }
  HARK_TRY(fill_append(request, op));
  may_decide_migration(request.partitioning.kind() == protocol::PartitioningKind::partition_id);
  return ok_status();
}

Status Connection::poll_messages(const protocol::PollMessagesRequest& request, core::Poll& op) {
  HARK_TRY(fill_poll(request, client_id_,
                     classic_poll_wait(shard_.options(), shard_.broker(), current_user(), request),
                     op));
  auto_commit_ = request.auto_commit;
  may_decide_migration(request.partition_id.has_value() &&
                       request.consumer.kind == protocol::ConsumerKind::consumer);
  return ok_status();
}

void Connection::respond_poll_messages(const core::Poll& op) { respond_poll(op.result); }

Status Connection::wait_for_messages(const protocol::WaitForMessagesRequest& request,
                                     core::Notify& op) {
  return fill_wait_for_messages(request, client_id_, op);
}

void Connection::respond_wait_for_messages(const core::Notify& op) {
  respond_encoded(wait_for_messages_response(op));
}

Status Connection::wait_for_lag(const protocol::WaitForLagRequest& request, core::Notify& op) {
  return fill_wait_for_lag(request, client_id_, op);
}

void Connection::respond_wait_for_lag(const core::Notify& op) {
  const std::optional<protocol::WaitForLagResponse> response = wait_for_lag_response(op);
  if (response) {
    respond_encoded(*response);
  } else {
    respond_ok();  // A timeout: an empty payload.
  }
}

Status Connection::wait_for_condition(const protocol::WaitForConditionRequest& request,
                                      core::Notify& op) {
  return fill_wait_for_condition(request, client_id_, op);
}

void Connection::respond_wait_for_condition(const core::Notify& op) {
  respond_encoded(wait_for_condition_response(op));
}

Status Connection::get_consumer_offset(const protocol::GetConsumerOffsetRequest& request,
                                       core::GetOffset& op) {
  return fill_ids(request, op);
}

void Connection::respond_get_consumer_offset(const core::GetOffset& op) {
  // Nothing stored: OK with an empty payload, as in Iggy 0.8.0.
  if (op.stored) {
    respond_encoded(consumer_offset_response(op));
  } else {
    respond_ok();
  }
}

Status Connection::store_consumer_offset(const protocol::StoreConsumerOffsetRequest& request,
                                         core::StoreOffset& op) {
  HARK_TRY(fill_ids(request, op));
  op.offset = request.offset;
  return ok_status();
}

void Connection::respond_ok() {
  header_ = protocol::ok_response_header(0);
  parts_[0] = header_;
  send(1);
}

void Connection::respond_error(Error error) {
  HARK_ASSERT(error != Error::ok);
  header_ = protocol::error_response(error);
  parts_[0] = header_;
  send(1);
}

void Connection::respond_out(const Status& encoded) {
  if (!encoded.ok()) {
    HARK_LOG_ERROR("connection %s: the %s response does not encode: %s", peer_,
                   protocol::command_name(code_), error_name(encoded.error()));
    respond_error(encoded.error());
    return;
  }
  parts_[0] = out_;
  send(1);
}

void Connection::respond_poll(const core::PollResult& result) {
  const std::span<const std::byte> messages = result.messages.bytes();
  if (messages.size() > UINT32_MAX - protocol::poll_header_size) {
    // The broker caps a poll far below this (poll_bytes_max); a frame cannot say more.
    HARK_LOG_ERROR("connection %s: poll result of %u bytes is too large", peer_, messages.size());
    respond_error(Error::invalid_size_bytes);
    return;
  }
  poll_prefix_ = protocol::poll_response_prefix(poll_header(result), messages.size());
  parts_[0] = poll_prefix_;
  size_t count = 1;
  if (!messages.empty()) parts_[count++] = messages;
  send(count);
}

void Connection::send(size_t parts_count) {
  HARK_ASSERT(phase_ != Phase::dropping);
  HARK_ASSERT(parts_count <= parts_.size());
  if (tls_ != nullptr) {
    send_tls(parts_count);
    return;
  }
  // Plain TCP: the parts as they are (a poll's messages straight from the ReadView).
  sender_.send(fd_, std::span<const std::span<const std::byte>>(parts_.data(), parts_count), *this);
}

}  // namespace hark::server
