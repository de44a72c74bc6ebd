#pragma once

// How the rows of commands.inc become code. The HARK_COMMAND_* macros below expand a row by its
// `kind` (reply, op, op_result) into the handler declarations and the operation slot's size
// (connection.h) and its dispatch (connection_commands.cc); applied_by_shard_zero() is the
// `applied` column; fill_ids() is for handlers. (server/users/permissioner.cc expands the `access`
// column.)
#include <cstddef>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/server/dispatch.h"

namespace hark::server {

// The handler declarations of a row, inside class Connection.
#define HARK_COMMAND_DECLARE_reply(name, request, operation) \
  Status name(const protocol::request##Request&);
#define HARK_COMMAND_DECLARE_op(name, request, operation) \
  Status name(const protocol::request##Request&, core::operation&);
#define HARK_COMMAND_DECLARE_op_result(name, request, operation) \
  HARK_COMMAND_DECLARE_op(name, request, operation) void respond_##name(const core::operation&);

// The bytes (and alignment) a row's operation takes in the connection's operation slot.
#define HARK_COMMAND_SIZE_reply(operation) \
  size_t { 0 }
#define HARK_COMMAND_SIZE_op(operation) sizeof(ConnectionOp<core::operation>)
#define HARK_COMMAND_SIZE_op_result(operation) HARK_COMMAND_SIZE_op(operation)
#define HARK_COMMAND_ALIGN_reply(operation) \
  size_t { 1 }
#define HARK_COMMAND_ALIGN_op(operation) alignof(ConnectionOp<core::operation>)
#define HARK_COMMAND_ALIGN_op_result(operation) HARK_COMMAND_ALIGN_op(operation)

// True for the commands the broker applies on shard 0 (the `applied` column).
constexpr bool applied_by_shard_zero(protocol::Command command) {
  constexpr bool shard_zero = true;
  constexpr bool here = false;
  switch (command) {
#define HARK_COMMAND(name, request, kind, operation, access, applied) \
  case protocol::Command::name: return applied;
#include "hark/server/commands.inc"
#undef HARK_COMMAND
    default: return here;
  }
}

// For handlers: what `request` names, into the fields of `op` that mean the same, as far as both
// have them: consumer (fill_consumer), stream_id → stream, topic_id → topic, group_id → group
// (name_or_id), partition_id → partition. Errors: those of name_or_id().
template <typename Request, typename Operation>
Status fill_ids(const Request& request, Operation& op) {
  if constexpr (requires { fill_consumer(request.consumer, op.consumer, op.group); }) {
    HARK_TRY(fill_consumer(request.consumer, op.consumer, op.group));
  }
  if constexpr (requires { op.stream = *name_or_id(request.stream_id); }) {
    HARK_TRY_ASSIGN(op.stream, name_or_id(request.stream_id));
  }
  if constexpr (requires { op.topic = *name_or_id(request.topic_id); }) {
    HARK_TRY_ASSIGN(op.topic, name_or_id(request.topic_id));
  }
  if constexpr (requires { op.group = *name_or_id(request.group_id); }) {
    HARK_TRY_ASSIGN(op.group, name_or_id(request.group_id));
  }
  if constexpr (requires { op.partition = request.partition_id; }) {
    op.partition = request.partition_id;
  }
  return ok_status();
}

}  // namespace hark::server
