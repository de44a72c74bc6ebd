// Connection's request handlers and responses: each decoded request becomes an Operation
// (or an immediate answer), and each finished Operation becomes a response frame.
#include <cstdint>
#include <type_traits>
#include <variant>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/system_responses.h"
#include "hark/server/classic_wait.h"
#include "hark/server/connection.h"
#include "hark/server/dispatch.h"
#include "hark/server/shard_server.h"

namespace hark::server {

Status Connection::handle(const protocol::PingRequest& /*request*/) {
  respond_ok();
  return ok_status();
}

Status Connection::handle(const protocol::CreateStreamRequest& request) {
  auto& op = start_op<core::CreateStream>();
  op.name = request.name;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetStreamRequest& request) {
  auto& op = start_op<core::GetStream>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetStreamsRequest& /*request*/) {
  submit(start_op<core::GetStreams>());
  return ok_status();
}

Status Connection::handle(const protocol::DeleteStreamRequest& request) {
  auto& op = start_op<core::DeleteStream>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::PurgeStreamRequest& request) {
  auto& op = start_op<core::PurgeStream>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::CreateTopicRequest& request) {
  auto& op = start_op<core::CreateTopic>();
  HARK_TRY(fill_create_topic(request, op));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetTopicRequest& request) {
  auto& op = start_op<core::GetTopic>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetTopicsRequest& request) {
  auto& op = start_op<core::GetTopics>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::DeleteTopicRequest& request) {
  auto& op = start_op<core::DeleteTopic>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::PurgeTopicRequest& request) {
  auto& op = start_op<core::PurgeTopic>();
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::SendMessagesRequest& request) {
  // The messages stay in the pinned request frame until the append's done().
  if (largest_payload(request.messages) > shard_.options().message_payload_max) {
    return Error::too_big_message_payload;
  }
  auto& op = start_op<core::Append>();
  HARK_TRY(fill_append(request, op));
  migration_candidate_ = !migration_decided_ &&
                         request.partitioning.kind() == protocol::PartitioningKind::partition_id;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::PollMessagesRequest& request) {
  auto& op = start_op<core::Poll>();
  HARK_TRY(fill_poll(request, client_id_,
                     classic_poll_wait(shard_.options(), shard_.broker(), current_user(), request),
                     op));
  auto_commit_ = request.auto_commit;
  poll_cancelled_ = false;
  migration_candidate_ = !migration_decided_ && request.partition_id.has_value() &&
                         request.consumer.kind == protocol::ConsumerKind::consumer;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::GetConsumerOffsetRequest& request) {
  auto& op = start_op<core::GetOffset>();
  HARK_TRY(fill_consumer(request.consumer, op.consumer, op.group));
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  op.partition = request.partition_id;
  submit(op);
  return ok_status();
}

Status Connection::handle(const protocol::StoreConsumerOffsetRequest& request) {
  auto& op = start_op<core::StoreOffset>();
  HARK_TRY(fill_consumer(request.consumer, op.consumer, op.group));
  HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  op.partition = request.partition_id;
  op.offset = request.offset;
  submit(op);
  return ok_status();
}

void Connection::respond_to_op() {
  const Status* status = std::visit(
      [](const auto& op) -> const Status* {
        if constexpr (std::is_same_v<std::decay_t<decltype(op)>, std::monostate>) {
          return nullptr;
        } else {
          return &op.status();
        }
      },
      op_);
  HARK_ASSERT(status != nullptr);
  if (!status->ok()) {
    respond_error(status->error());
    return;
  }
  std::visit(
      [this](const auto& op) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(op)>, std::monostate>) {
          respond_done(op);
        }
      },
      op_);
}

void Connection::respond_done(const ConnectionOp<core::CreateStream>& op) {
  respond_encoded(stream_response(op.stream));
}

void Connection::respond_done(const ConnectionOp<core::GetStream>& op) {
  // A missing stream is OK with an empty payload, as in Iggy 0.8.0.
  if (op.result) {
    respond_encoded(stream_details_response(*op.result));
  } else {
    respond_ok();
  }
}

void Connection::respond_done(const ConnectionOp<core::GetStreams>& op) {
  respond_encoded(streams_response(op.streams));
}

void Connection::respond_done(const ConnectionOp<core::CreateTopic>& op) {
  respond_encoded(topic_details_response(op.topic));
}

void Connection::respond_done(const ConnectionOp<core::GetTopic>& op) {
  if (op.result) {
    respond_encoded(topic_details_response(*op.result));
  } else {
    respond_ok();
  }
}

void Connection::respond_done(const ConnectionOp<core::GetTopics>& op) {
  respond_encoded(topics_response(op.topics));
}

void Connection::respond_done(const ConnectionOp<core::Poll>& op) { respond_poll(op.result); }

void Connection::respond_done(const ConnectionOp<core::GetOffset>& op) {
  // Nothing stored: OK with an empty payload, as in Iggy 0.8.0.
  if (op.stored) {
    respond_encoded(consumer_offset_response(op));
  } else {
    respond_ok();
  }
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
  HARK_ASSERT(!peer_gone_);
  HARK_ASSERT(parts_count <= parts_.size());
  sender_.send(fd_, std::span<const std::span<const std::byte>>(parts_.data(), parts_count), *this);
}

}  // namespace hark::server
