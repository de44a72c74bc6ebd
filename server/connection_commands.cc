// The glue between a request frame and its row of commands.inc, written once for every command:
// code → decode → authorize → handler; for the rows with an operation: fill, submit, answer
// (connection.h; command_table.h).
#include <cstdint>
#include <span>

#include "hark/core/base/log.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/command.h"
#include "hark/protocol/request.h"
#include "hark/server/command_table.h"
#include "hark/server/connection.h"
#include "hark/server/shard_server.h"

namespace hark::server {

// What a row's kind runs once its request is decoded and authorized (inside Connection, so the
// handlers' privacy holds).
#define HARK_COMMAND_RUN_reply(name, operation) \
  [this](const auto& request) { return name(request); }
#define HARK_COMMAND_RUN_op(name, operation)                                              \
  [this](const auto& request) {                                                           \
    return start_op<core::operation>(                                                     \
        request, &Connection::name,                                                       \
        [](Connection& connection, const core::Operation&) { connection.respond_ok(); }); \
  }
#define HARK_COMMAND_RUN_op_result(name, operation)                                         \
  [this](const auto& request) {                                                             \
    return start_op<core::operation>(                                                       \
        request, &Connection::name, [](Connection& connection, const core::Operation& op) { \
          connection.respond_##name(static_cast<const core::operation&>(op));               \
        });                                                                                 \
  }

// The requests cluster mode may forward to a partition's owner (connection_forward.cc).
template <typename Request>
constexpr bool forwardable = std::is_same_v<Request, protocol::SendMessagesRequest> ||
                             std::is_same_v<Request, protocol::PollMessagesRequest> ||
                             std::is_same_v<Request, protocol::StoreConsumerOffsetRequest> ||
                             std::is_same_v<Request, protocol::GetConsumerOffsetRequest> ||
                             std::is_same_v<Request, protocol::DeleteConsumerOffsetRequest> ||
                             std::is_same_v<Request, protocol::WaitForMessagesRequest> ||
                             std::is_same_v<Request, protocol::WaitForLagRequest> ||
                             std::is_same_v<Request, protocol::WaitForConditionRequest>;

template <typename Request, typename Handler>
Status Connection::run(std::span<const std::byte> payload, Handler handler) {
  Result<protocol::Decoded<Request>> decoded = protocol::decode_payload<Request>(payload);
  const Status status = decoded.ok() ? ok_status() : Status(decoded.error());
  HARK_TRY(this->decoded(code_, status, decoded.ok() ? decoded->trailing_bytes : 0));
  HARK_TRY(authorize_request(decoded->value));
  if constexpr (forwardable<Request>) {
    // Cluster mode only (a view exists): one pointer check on one node.
    if (shard_.cluster_view() != nullptr) {
      HARK_TRY_ASSIGN(const bool routed, route(decoded->value));
      if (routed) return ok_status();
    }
  }
  return handler(decoded->value);
}

Status Connection::run_unlisted(uint32_t code, std::span<const std::byte> payload) {
  // Unknown codes fail to decode (invalid_command); known ones decode, as 0.8.0 checks them.
  const Result<protocol::DecodedRequest> decoded = protocol::decode_request(code, payload);
  const Status status = decoded.ok() ? ok_status() : Status(decoded.error());
  HARK_TRY(this->decoded(code, status, decoded.ok() ? decoded->trailing_bytes : 0));
  return Error::feature_unavailable;
}

Status Connection::decoded(uint32_t code, const Status& status, size_t trailing_bytes) {
  if (!status.ok()) {
    HARK_LOG_DEBUG("connection %s: %s (%u) does not decode: %s", peer_,
                   protocol::command_name(code), code, error_name(status.error()));
    return status;
  }
  if (trailing_bytes > 0) {
    HARK_LOG_WARN("connection %s: %s request has %u trailing bytes (ignored)", peer_,
                  protocol::command_name(code), trailing_bytes);
  }
  if (authenticated() && current_user() == nullptr) {
    // The user was deleted since the login: its sessions end (as 0.8.0 drops its clients).
    return Error::unauthenticated;
  }
  return ok_status();
}

template <typename Operation, typename Request>
Status Connection::start_op(const Request& request,
                            Status (Connection::*fill)(const Request&, Operation&),
                            OpSlot::Answer answer) {
  HARK_ASSERT(!op_busy_);
  ConnectionOp<Operation>& op = op_.emplace<Operation>(*this, answer);
  wait_cancelled_ = false;  // A new operation: a disconnect from here cancels it if it waits.
  HARK_TRY((this->*fill)(request, op));
  submit(op);
  return ok_status();
}

void Connection::respond_to_op() {
  HARK_ASSERT(!op_.empty());
  if (!op_.status().ok()) {
    respond_error(op_.status().error());
    return;
  }
  op_.answer(*this);
}

Status Connection::dispatch(uint32_t code, std::span<const std::byte> payload) {
  switch (code) {
#define HARK_COMMAND(name, request, kind, operation, access, applied) \
  case protocol::command_code(protocol::Command::name):               \
    return run<protocol::request##Request>(payload, HARK_COMMAND_RUN_##kind(name, operation));
#include "hark/server/commands.inc"
#undef HARK_COMMAND
    default: return run_unlisted(code, payload);
  }
}

}  // namespace hark::server
