#include "server/connection.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

#include "core/base/assert.h"
#include "core/base/log.h"
#include "io/buffer_ring.h"
#include "io/socket.h"
#include "protocol/command.h"
#include "server/shard_server.h"

namespace hark::server {
namespace {

// What a client may send ahead of an unanswered request: one more frame of the largest kind.
// Iggy's clients keep one request in flight; more than this is closed, not buffered forever.
size_t ahead_max_of(const protocol::FrameLimits& limits) {
  return protocol::request_header_size + std::max(limits.control_max, limits.send_max);
}

}  // namespace

Connection::Connection(ShardServer& shard, int fd, uint32_t client_id, std::string peer)
    : Connection(shard, ConnectionState{.fd = fd,
                                        .client_id = client_id,
                                        .peer = std::move(peer),
                                        .requests = RequestBuffer(
                                            shard.options().frame_limits,
                                            ahead_max_of(shard.options().frame_limits))}) {}

Connection::Connection(ShardServer& shard, ConnectionState state)
    : shard_(shard),
      fd_(state.fd),
      client_id_(state.client_id),
      peer_(std::move(state.peer)),
      sender_(shard.ring()),
      requests_(std::move(state.requests)),
      user_id_(state.user_id),
      authenticated_(state.authenticated),
      migration_decided_(state.migration_decided) {}

Connection::~Connection() {
  // Freed only once closed (ShardServer::collect) or abandoned at teardown (drain).
  HARK_ASSERT(!op_busy_);
  HARK_ASSERT(!commit_busy_);
  HARK_ASSERT(!leave_busy_);
  HARK_ASSERT(!user_busy_);
  if (registered_) shard_.clients().remove(client_id_);
  if (fd_ >= 0) ::close(fd_);
}

void Connection::start() {
  io::set_no_delay(fd_);
  registered_ = true;  // ShardServer::accept_connection listed it in the registry.
  arm_recv();
}

void Connection::resume() {
  // Listed in the registry since it connected on the first shard.
  shard_.clients().set_shard(client_id_, shard_.id().value());
  registered_ = true;
  arm_recv();
  next_request();
}

void Connection::close_when_idle() { begin_close(); }

void Connection::abort() {
  // The broker has answered every parked poll before teardown and its peers may be gone:
  // no broker.cancel() here, only the ring operations of this shard.
  peer_gone_ = true;
  poll_cancelled_ = true;
  closing_ = true;
  if (sender_.busy()) shard_.ring().cancel(sender_);
  begin_close();
}

void Connection::Receive::complete(int32_t result, uint32_t flags) {
  connection_.shard_.collect();
  connection_.recv_complete(result, flags);
}

void Connection::arm_recv() {
  HARK_ASSERT(!recv_armed_);
  HARK_ASSERT(!closing_);
  recv_armed_ = true;
  shard_.ring().recv_multishot(fd_, shard_.buffers().group(), receive_);
}

void Connection::recv_complete(int32_t result, uint32_t flags) {
  if ((flags & IORING_CQE_F_MORE) == 0) recv_armed_ = false;
  if (result > 0) {
    io::BufferRing& buffers = shard_.buffers();
    received(buffers.take(flags, static_cast<uint32_t>(result)));
    buffers.recycle(io::BufferRing::buffer_id(flags));
  } else if (result == -ENOBUFS) {
    // Every ring buffer was in use: the multishot ended; nothing was lost. Re-armed below.
  } else if (result != -ECANCELED) {
    // Closed by the peer (0) or failed: nobody is left to answer.
    if (result < 0 && result != -ECONNRESET) {
      HARK_LOG_DEBUG("connection %s: recv failed: %s", peer_, strerror(-result));
    }
    peer_gone_ = true;
    begin_close();
  }
  if (!recv_armed_ && !closing_ && !migrating_) arm_recv();
  close_if_idle();
  migrate_if_ready();
}

void Connection::received(std::span<const std::byte> bytes) {
  // After a rejected frame the rest of it (up to the size it announced) is not stored: the
  // connection closes once the error is written.
  if (closing_ || close_after_response_) return;
  if (!requests_.append(bytes)) {
    HARK_LOG_WARN("connection %s: over %u bytes sent ahead of an unanswered request; closing",
                  peer_, ahead_max_of(shard_.options().frame_limits));
    peer_gone_ = true;
    begin_close();
    return;
  }
  if (!request_active_ && !migrating_) next_request();
}

void Connection::next_request() {
  HARK_ASSERT(!request_active_);
  if (closing_) return;
  protocol::FrameScan scan = requests_.next();
  switch (scan.state) {
    case protocol::FrameState::need_more: return;
    case protocol::FrameState::rejected:
      // The frame is too large to buffer (or malformed): answer, then close, because the
      // bytes that follow cannot be trusted to start a frame (docs/wire.md §10).
      HARK_LOG_WARN("connection %s: %s frame of %u bytes rejected (%s); closing", peer_,
                    protocol::command_name(scan.code), scan.frame_size, error_name(scan.error));
      request_active_ = true;
      code_ = scan.code;
      close_after_response_ = true;
      respond_error(scan.error);
      return;
    case protocol::FrameState::ready: start_request(scan.code, scan.payload); return;
  }
  HARK_UNREACHABLE();
}

void Connection::start_request(uint32_t code, std::span<const std::byte> payload) {
  request_active_ = true;
  code_ = code;
  auto_commit_ = false;
  if (protocol::command_known(code) && !authenticated_ &&
      !protocol::command_allowed_before_login(static_cast<protocol::Command>(code))) {
    respond_error(Error::unauthenticated);
    return;
  }
  Result<protocol::DecodedRequest> decoded = protocol::decode_request(code, payload);
  if (!decoded.ok()) {
    HARK_LOG_DEBUG("connection %s: %s (%u) does not decode: %s", peer_,
                   protocol::command_name(code), code, error_name(decoded.error()));
    respond_error(decoded.error());
    return;
  }
  if (decoded->trailing_bytes > 0) {
    HARK_LOG_WARN("connection %s: %s request has %u trailing bytes (ignored)", peer_,
                  protocol::command_name(code), decoded->trailing_bytes);
  }
  if (authenticated_ && current_user() == nullptr) {
    // The user was deleted since the login: its sessions end (as 0.8.0 drops its clients).
    respond_error(Error::unauthenticated);
    return;
  }
  const Status status = std::visit(
      [this](auto& request) -> Status {
        HARK_TRY(authorize_request(request));
        return handle(request);
      },
      decoded->request);
  if (!status.ok()) respond_error(status.error());
}

void Connection::submit(core::Operation& op) {
  HARK_ASSERT(!op_busy_);
  op_busy_ = true;  // Before submit(): done() may run before it returns.
  shard_.broker().submit(op);
}

void Connection::op_done() {
  HARK_ASSERT(op_busy_);
  op_busy_ = false;
  if (migration_candidate_) decide_migration();
  if (peer_gone_) {
    close_if_idle();
    return;
  }
  respond_to_op();
}

void Connection::send_done(Result<uint64_t> result) {
  shard_.collect();
  if (!result.ok()) {
    // A short or failed send: the client has no whole response, so no offset is stored.
    HARK_LOG_DEBUG("connection %s: response to %s not written: %s", peer_,
                   protocol::command_name(code_), error_name(result.error()));
    peer_gone_ = true;
    begin_close();
    return;
  }
  if (std::holds_alternative<ConnectionOp<core::Poll>>(op_)) {
    poll_sent();
    return;
  }
  finish_request();
}

void Connection::poll_sent() {
  const auto& poll = std::get<ConnectionOp<core::Poll>>(op_);
  if (!auto_commit_ || !poll.status().ok() || poll.result.messages.empty()) {
    finish_request();
    return;
  }
  if (shard_.stopping()) {
    // The broker is shutting down and may not run another operation: the client may see
    // these messages again after a restart (at least once), never lose them.
    HARK_LOG_DEBUG("connection %s: shutting down, offset %u not auto-committed", peer_,
                   poll.result.messages.last().value());
    finish_request();
    return;
  }
  if (commit_busy_) {
    // The previous auto-commit has not come back: store this one after it, and read the next
    // request only then, so the next poll still sees it.
    commit_waiting_ = true;
    return;
  }
  store_polled_offset();
  finish_request();
}

void Connection::store_polled_offset() {
  const auto& poll = std::get<ConnectionOp<core::Poll>>(op_);
  HARK_ASSERT(!commit_busy_);
  HARK_ASSERT(!poll.result.messages.empty());
  commit_.consumer = poll.consumer;
  commit_.group = poll.group;
  commit_.stream = poll.stream;
  commit_.topic = poll.topic;
  commit_.partition = poll.result.partition_id;
  commit_.offset = poll.result.messages.last().value();
  commit_busy_ = true;  // Before submit(): done() may run before it returns.
  shard_.broker().submit(commit_);
}

void Connection::commit_done() {
  HARK_ASSERT(commit_busy_);
  commit_busy_ = false;
  if (!commit_.status().ok()) {
    HARK_LOG_WARN("connection %s: auto-commit of offset %u failed: %s", peer_, commit_.offset,
                  error_name(commit_.status().error()));
  }
  if (commit_waiting_) {
    commit_waiting_ = false;
    store_polled_offset();
    finish_request();
    return;
  }
  close_if_idle();
  migrate_if_ready();
}

void Connection::finish_request() {
  HARK_ASSERT(request_active_);
  HARK_ASSERT(!op_busy_);
  op_.emplace<std::monostate>();  // Drops a poll's ReadView: the messages are written.
  if (requests_.pinned()) requests_.release();
  if (out_.capacity() > RequestBuffer::keep_bytes_max) protocol::Bytes().swap(out_);
  request_active_ = false;
  if (close_after_response_) {
    begin_close();
    return;
  }
  if (closing_) {
    close_if_idle();
    return;
  }
  if (migrate_to_.has_value()) {
    begin_migration();
    return;
  }
  next_request();
}

void Connection::begin_close() {
  closing_ = true;
  if (recv_armed_ && !recv_cancelled_) {
    recv_cancelled_ = true;
    shard_.ring().cancel(receive_);
  }
  if (peer_gone_ && op_busy_ && !poll_cancelled_ &&
      std::holds_alternative<ConnectionOp<core::Poll>>(op_)) {
    // A parked poll of a client that went away: cancel it (done() follows, maybe at once).
    poll_cancelled_ = true;
    shard_.broker().cancel(std::get<ConnectionOp<core::Poll>>(op_));
  }
  close_if_idle();
}

void Connection::leave_done() {
  HARK_ASSERT(leave_busy_);
  leave_busy_ = false;
  if (!leave_.status().ok()) {
    HARK_LOG_WARN("connection %s: leaving its consumer groups failed: %s", peer_,
                  error_name(leave_.status().error()));
  }
  close_if_idle();
}

void Connection::close_if_idle() {
  if (!closing_ || closed_) return;
  if (recv_armed_ || sender_.busy() || op_busy_ || commit_busy_ || commit_waiting_ || leave_busy_ ||
      user_busy_) {
    return;
  }
  if (joined_group_ && !shard_.stopping()) {
    // A member that goes away leaves its groups, so their partitions are dealt to the members
    // left. The connection stays until the broker is done with it. (At shutdown the broker
    // takes no more operations; members are not persisted anyway.)
    joined_group_ = false;
    leave_.member = client_id_;
    leave_busy_ = true;  // Before submit(): done() may run before it returns.
    shard_.broker().submit(leave_);
    return;
  }
  if (registered_) {
    shard_.clients().remove(client_id_);
    registered_ = false;
  }
  if (migrating_) shard_.migration_refused();
  closed_ = true;
  ::close(fd_);
  fd_ = -1;
  HARK_LOG_DEBUG("connection %s closed", peer_);
  shard_.retire(*this);
}

void Connection::decide_migration() {
  migration_candidate_ = false;
  const Status* status = nullptr;
  std::optional<ShardId> owner;
  if (const auto* append = std::get_if<ConnectionOp<core::Append>>(&op_)) {
    status = &append->status();
    owner = append->owner_shard;
  } else if (const auto* poll = std::get_if<ConnectionOp<core::Poll>>(&op_)) {
    status = &poll->status();
    owner = poll->result.owner_shard;
  }
  // A failed request (no such partition yet) decides nothing: the next one may.
  if (status == nullptr || !status->ok() || !owner.has_value()) return;
  migration_decided_ = true;
  // A group member's partitions change with every rebalance: it stays where it is.
  if (*owner == shard_.id() || joined_group_ || !shard_.options().migrate_connections) return;
  migrate_to_ = owner;
}

void Connection::begin_migration() {
  HARK_ASSERT(!request_active_);
  migrating_ = true;
  // Bytes already received come with it; the kernel keeps the rest in the socket until the
  // new shard receives.
  if (recv_armed_ && !recv_cancelled_) {
    recv_cancelled_ = true;
    shard_.ring().cancel(receive_);
  }
  migrate_if_ready();
}

void Connection::migrate_if_ready() {
  // A close (the peer went, the server stops) wins over a migration under way.
  if (!migrating_ || closing_ || closed_) return;
  if (recv_armed_ || sender_.busy() || op_busy_ || commit_busy_ || commit_waiting_ || leave_busy_ ||
      user_busy_) {
    return;
  }
  ConnectionState state{.fd = fd_,
                        .client_id = client_id_,
                        .peer = peer_,
                        .requests = std::move(requests_),
                        .authenticated = authenticated_,
                        .user_id = user_id_,
                        .migration_decided = true};
  const ShardId target = *migrate_to_;
  fd_ = -1;
  registered_ = false;  // The target shard updates the registry's entry.
  closed_ = true;
  HARK_LOG_DEBUG("connection %s: migrating from shard %u to shard %u", peer_, shard_.id().value(),
                 target.value());
  shard_.retire(*this);
  shard_.send_away(target, std::move(state));
}

}  // namespace hark::server
