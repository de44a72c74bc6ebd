#include "hark/server/connection.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/io/buffer_ring.h"
#include "hark/io/socket.h"
#include "hark/protocol/command.h"
#include "hark/server/shard_server.h"
#include "hark/server/users/login_throttle.h"

namespace hark::server {
namespace {

bool transition_allowed(Phase from, Phase to) {
  switch (from) {
    case Phase::awaiting_login:
      return to == Phase::serving || to == Phase::closing || to == Phase::dropping;
    case Phase::serving:
      return to == Phase::awaiting_login || to == Phase::migrating || to == Phase::closing ||
             to == Phase::dropping;
    case Phase::migrating:
      return to == Phase::closing || to == Phase::dropping || to == Phase::closed;
    case Phase::closing: return to == Phase::dropping || to == Phase::closed;
    case Phase::dropping: return to == Phase::closed;
    case Phase::closed: return false;
  }
  return false;
}

}  // namespace

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::awaiting_login: return "awaiting_login";
    case Phase::serving: return "serving";
    case Phase::migrating: return "migrating";
    case Phase::closing: return "closing";
    case Phase::dropping: return "dropping";
    case Phase::closed: return "closed";
  }
  return "?";
}

Connection::Connection(ShardServer& shard, int fd, uint32_t client_id, std::string peer,
                       std::unique_ptr<TlsSession> tls)
    : Connection(shard, ConnectionState{.fd = fd,
                                        .client_id = client_id,
                                        .peer = std::move(peer),
                                        .requests = RequestBuffer(shard.options().frame_limits,
                                                                  shard.options().read_ahead_bytes),
                                        .tls = std::move(tls)}) {}

Connection::Connection(ShardServer& shard, ConnectionState state)
    : shard_(shard),
      fd_(state.fd),
      client_id_(state.client_id),
      peer_(std::move(state.peer)),
      // Only logged-in connections migrate (a send or a poll decides it).
      phase_(state.authenticated ? Phase::serving : Phase::awaiting_login),
      migration_(state.migration_decided ? MigrationState::staying : MigrationState::undecided),
      sender_(shard.ring(), shard.options().write_timeout),
      requests_(std::move(state.requests)),
      user_id_(state.user_id),
      tls_(std::move(state.tls)) {
  HARK_ASSERT(state.authenticated == (user_id_ != UINT32_MAX));
}

Connection::~Connection() {
  // Freed only once closed (ShardServer::collect) or abandoned at teardown (drain).
  HARK_ASSERT(!broker_busy());
  HARK_ASSERT(phase_ != Phase::awaiting_login);  // Left at close (its count and timer).
  if (registered_) shard_.clients().remove(client_id_);
  if (fd_ >= 0) ::close(fd_);
}

void Connection::start() {
  HARK_ASSERT(phase_ == Phase::awaiting_login);
  io::set_no_delay(fd_);
  registered_ = true;      // ShardServer::accept_connection listed it in the registry.
  begin_login_deadline();  // Its address was counted by ShardServer::accept_connection.
  begin_heartbeat();
  update_receive();
}

void Connection::resume() {
  HARK_ASSERT(phase_ == Phase::serving);
  // Listed in the registry since it connected on the first shard.
  shard_.clients().set_shard(client_id_, shard_.id().value());
  registered_ = true;
  begin_heartbeat();
  update_receive();
  next_request();
}

void Connection::close_when_idle() { begin_close(); }

void Connection::abort() {
  // Every shard still runs its tasks (ShardServer::abort), so a poll or notify still in the
  // broker is cancelled like a client's that went away, and the connection closes once its
  // done() came.
  drop();
}

void Connection::evict() {
  shard_.note_refusal(Refusal::evicted, peer_);
  drop();  // Nothing to answer: it sent no complete login.
}

void Connection::enter(Phase next) {
  if (!transition_allowed(phase_, next)) {
    HARK_LOG_ERROR("connection %s: phase %s -> %s", peer_, phase_name(phase_), phase_name(next));
  }
  HARK_ASSERT(transition_allowed(phase_, next));
  const Phase previous = std::exchange(phase_, next);
  if (previous == Phase::awaiting_login) end_login_deadline();
  if (next != Phase::awaiting_login && next != Phase::serving) {
    shard_.reactor().timers().cancel(heartbeat_);  // Only open connections can be silent.
  }
  if (next == Phase::awaiting_login) {
    // A logout: counted like a newcomer, but not refused (it is already in).
    shard_.unauthenticated_hosts().add(host_of(peer_));
    begin_login_deadline();
  }
}

void Connection::begin_login_deadline() {
  shard_.reactor().timers().add(login_deadline_,
                                shard_.monotonic_now() + shard_.options().login_timeout);
  shard_.unauthenticated_joined(*this);  // May evict the shard's oldest unauthenticated one.
}

void Connection::end_login_deadline() {
  shard_.reactor().timers().cancel(login_deadline_);
  shard_.unauthenticated_left(*this);
}

void Connection::login_deadline_passed() {
  HARK_ASSERT(phase_ == Phase::awaiting_login);
  shard_.note_refusal(Refusal::login_timeout, peer_);
  // A request in flight (a login being hashed, say) is answered first: finish_request()
  // closes then unless it logged in (login_overdue()).
  if (request_ == RequestState::idle) begin_close();
}

bool Connection::login_overdue() const {
  // The deadline timer is armed for as long as the phase lasts, unless it expired.
  return phase_ == Phase::awaiting_login && !login_deadline_.armed();
}

void Connection::begin_heartbeat() {
  if (!shard_.options().heartbeat_enabled) return;
  heard_at_ = shard_.monotonic_now();
  shard_.reactor().timers().add(heartbeat_,
                                heard_at_ + shard_.options().heartbeat_interval * 6 / 5);
}

void Connection::heard() {
  if (shard_.options().heartbeat_enabled) heard_at_ = shard_.monotonic_now();
}

void Connection::heartbeat_due() {
  const Instant now = shard_.monotonic_now();
  // A request being answered (a parked poll, a login being hashed) is the client waiting for
  // harkd, not a silent client.
  if (request_ != RequestState::idle) heard_at_ = now;
  const Instant due = heard_at_ + shard_.options().heartbeat_interval * 6 / 5;
  if (now < due) {
    shard_.reactor().timers().add(heartbeat_, due);
    return;
  }
  shard_.note_refusal(Refusal::heartbeat, peer_);
  drop();  // Nothing is in flight to answer.
}

void Connection::logged_out() {
  user_id_ = UINT32_MAX;
  shard_.clients().set_user(client_id_, UINT32_MAX);
  if (phase_ == Phase::serving) enter(Phase::awaiting_login);
}

void Connection::Receive::complete(int32_t result, uint32_t flags) {
  connection_.shard_.collect();
  connection_.recv_complete(result, flags);
}

void Connection::Hangup::complete(int32_t result, uint32_t /*flags*/) {
  connection_.shard_.collect();
  connection_.hangup_complete(result);
}

void Connection::update_receive() {
  const bool open = phase_ == Phase::awaiting_login || phase_ == Phase::serving;
  const bool receiving = recv_armed_ && !recv_cancelled_;
  if (open && (receiving ? !requests_.ahead_full() : requests_.ahead_low())) {
    stop_hangup();
    // A recv whose cancel is under way is re-armed at its last CQE (recv_complete).
    if (!recv_armed_) arm_recv();
    return;
  }
  stop_recv();
  if (!open) {
    stop_hangup();
  } else if (!recv_armed_ && !hangup_armed_) {
    arm_hangup();  // Paused: the client's bytes wait in the socket.
  }
}

void Connection::arm_recv() {
  HARK_ASSERT(!recv_armed_);
  recv_armed_ = true;
  shard_.ring().recv_multishot(fd_, shard_.buffers().group(), receive_);
}

void Connection::stop_recv() {
  if (!recv_armed_ || recv_cancelled_) return;
  recv_cancelled_ = true;
  shard_.ring().cancel(receive_);
}

void Connection::arm_hangup() {
  HARK_ASSERT(!hangup_armed_);
  hangup_armed_ = true;
  shard_.note_receive_paused();
  shard_.ring().poll(fd_, POLLRDHUP | POLLHUP | POLLERR, hangup_);
}

void Connection::stop_hangup() {
  if (!hangup_armed_ || hangup_cancelled_) return;
  hangup_cancelled_ = true;
  shard_.ring().cancel(hangup_);
}

void Connection::hangup_complete(int32_t result) {
  hangup_armed_ = false;
  hangup_cancelled_ = false;
  // While receiving again the recv sees the close itself, after the bytes before it.
  if (result > 0 && !recv_armed_ && phase_ != Phase::closed) {
    HARK_LOG_DEBUG("connection %s: hung up while its receive was paused", peer_);
    drop();
  }
  update_receive();
  close_if_idle();
  migrate_if_ready();
}

void Connection::recv_complete(int32_t result, uint32_t flags) {
  if ((flags & IORING_CQE_F_MORE) == 0) {
    recv_armed_ = false;
    recv_cancelled_ = false;
  }
  if (result > 0) {
    io::BufferRing& buffers = shard_.buffers();
    const std::span<const std::byte> bytes = buffers.take(flags, static_cast<uint32_t>(result));
    if (tls_ != nullptr) {
      received_tls(bytes);
    } else {
      received(bytes);
    }
    buffers.recycle(io::BufferRing::buffer_id(flags));
  } else if (result == -ENOBUFS) {
    // Every ring buffer was in use: the multishot ended; nothing was lost. Re-armed below.
  } else if (result != -ECANCELED) {
    // Closed by the peer (0) or failed: nobody is left to answer.
    if (result < 0 && result != -ECONNRESET) {
      HARK_LOG_DEBUG("connection %s: recv failed: %s", peer_, strerror(-result));
    }
    drop();
  }
  update_receive();
  close_if_idle();
  migrate_if_ready();
}

void Connection::received(std::span<const std::byte> bytes) {
  // After a rejected frame the rest of it (up to the size it announced) is not stored: the
  // connection closes once the error is written.
  if (ending() || request_ == RequestState::answering_last) return;
  heard();
  // Past the read-ahead bound only what the kernel delivered before the recv's cancel landed
  // (update_receive() pauses it).
  requests_.append(bytes);
  if (request_ == RequestState::idle && phase_ != Phase::migrating) next_request();
}

void Connection::next_request() {
  HARK_ASSERT(request_ == RequestState::idle);
  if (ending()) return;
  protocol::FrameScan scan = requests_.next();
  switch (scan.state) {
    case protocol::FrameState::need_more: return;
    case protocol::FrameState::rejected:
      // The frame is too large to buffer (or malformed): answer, then close, because the
      // bytes that follow cannot be trusted to start a frame (docs/wire.md §10).
      HARK_LOG_WARN("connection %s: %s frame of %u bytes rejected (%s); closing", peer_,
                    protocol::command_name(scan.code), scan.frame_size, error_name(scan.error));
      request_ = RequestState::answering_last;
      code_ = scan.code;
      respond_error(scan.error);
      return;
    case protocol::FrameState::ready: start_request(scan.code, scan.payload); return;
  }
  HARK_UNREACHABLE();
}

void Connection::start_request(uint32_t code, std::span<const std::byte> payload) {
  request_ = RequestState::answering;
  code_ = code;
  payload_ = payload;
  routing_ = Routing{};
  auto_commit_ = false;
  leg_commit_due_ = false;
  Status status = ok_status();
  if (protocol::command_known(code) && !authenticated() &&
      !protocol::command_allowed_before_login(static_cast<protocol::Command>(code))) {
    status = Error::unauthenticated;
  } else {
    status = dispatch(code, payload);
  }
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
  if (migration_ == MigrationState::deciding) decide_migration();
  if (phase_ == Phase::dropping) {
    close_if_idle();
    return;
  }
  if (refused_here()) {
    // Its partition moved away from this node: routed again (connection_forward.cc).
    not_run(shard_.cluster_view()->self, true);
    return;
  }
  respond_to_op();
}

void Connection::send_done(Result<uint64_t> result) {
  shard_.collect();
  if (!result.ok()) {
    // A short or failed send: the client has no whole response, so no offset is stored.
    if (result.error() == Error::task_timeout && !ending()) {
      // Not cancelled by a close: the client took nothing for limits.write_timeout.
      shard_.note_refusal(Refusal::write_timeout, peer_);
    } else {
      HARK_LOG_DEBUG("connection %s: response to %s not written: %s", peer_,
                     protocol::command_name(code_), error_name(result.error()));
    }
    drop();
    return;
  }
  if (std::exchange(tls_flushing_, false)) {
    tls_flushed();
    return;
  }
  if (leg_commit_due_) {
    commit_leg();  // A member's poll answered by another node (connection_group.cc).
    return;
  }
  if (op_.get_if<core::Poll>() != nullptr) {
    poll_sent();
    return;
  }
  finish_request();
}

void Connection::poll_sent() {
  const core::Poll& poll = *op_.get_if<core::Poll>();
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
  const core::Poll& poll = *op_.get_if<core::Poll>();
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
  HARK_ASSERT(request_ != RequestState::idle);
  HARK_ASSERT(!op_busy_);
  op_.reset();  // Drops a poll's ReadView: the messages are written.
  if (requests_.pinned()) requests_.release();
  if (out_.capacity() > RequestBuffer::keep_bytes_max) protocol::Bytes().swap(out_);
  if (tls_out_.capacity() > RequestBuffer::keep_bytes_max) protocol::Bytes().swap(tls_out_);
  const RequestState finished = std::exchange(request_, RequestState::idle);
  heard();  // The client's silence starts once it has its answer.
  if (finished == RequestState::answering_last || login_overdue()) {
    begin_close();
    return;
  }
  if (ending()) {
    close_if_idle();
    return;
  }
  if (migration_ == MigrationState::moving) {
    begin_migration();
    return;
  }
  next_request();
  update_receive();  // Resumes a paused receive once the bytes ahead were taken.
}

void Connection::end_as(Phase next) {
  HARK_ASSERT(next == Phase::closing || next == Phase::dropping);
  // Dropping wins over closing, and a close over a migration under way.
  if (phase_ != Phase::closed && phase_ != Phase::dropping && phase_ != next) {
    if (phase_ == Phase::migrating) shard_.migration_refused();
    enter(next);
    update_receive();
    if (next == Phase::dropping) cancel_in_flight();
  }
  close_if_idle();
}

void Connection::cancel_in_flight() {
  // Nobody reads the response under way: cancel it, so its memory goes now, not when (if ever)
  // the client reads. (Closing lets it finish, bounded by limits.write_timeout.)
  if (sender_.busy()) shard_.ring().cancel(sender_);
  cancel_forward();
  cancel_figures();
  if (!op_busy_ || wait_cancelled_) return;
  // A parked poll or notify of a client that went away: cancel it (done() follows, maybe at
  // once).
  if (core::Poll* const poll = op_.get_if<core::Poll>()) {
    wait_cancelled_ = true;
    shard_.broker().cancel(*poll);
  } else if (core::Notify* const notify = op_.get_if<core::Notify>()) {
    wait_cancelled_ = true;
    shard_.broker().cancel(*notify);
  }
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
  if ((phase_ != Phase::closing && phase_ != Phase::dropping) || busy()) return;
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
  enter(Phase::closed);
  ::close(fd_);
  fd_ = -1;
  HARK_LOG_DEBUG("connection %s closed", peer_);
  shard_.retire(*this);
}

void Connection::may_decide_migration(bool names_one_partition) {
  if (names_one_partition && migration_ == MigrationState::undecided) {
    migration_ = MigrationState::deciding;
  }
}

void Connection::decide_migration() {
  const Status* status = nullptr;
  std::optional<ShardId> owner;
  if (const core::Append* append = op_.get_if<core::Append>()) {
    status = &append->status();
    owner = append->owner_shard;
  } else if (const core::Poll* poll = op_.get_if<core::Poll>()) {
    status = &poll->status();
    owner = poll->result.owner_shard;
  }
  // A failed request (no such partition yet) decides nothing: the next one may.
  migration_ = MigrationState::undecided;
  if (status == nullptr || !status->ok() || !owner.has_value()) return;
  migration_ = MigrationState::staying;
  // A group member's partitions change with every rebalance: it stays where it is.
  if (*owner == shard_.id() || joined_group_ || !shard_.options().migrate_connections ||
      !shard_.migration_keeps_balance(*owner)) {
    return;
  }
  migration_ = MigrationState::moving;
  migrate_to_ = *owner;
}

void Connection::begin_migration() {
  HARK_ASSERT(request_ == RequestState::idle);
  enter(Phase::migrating);
  // Bytes already received come with it; the kernel keeps the rest in the socket until the
  // new shard receives.
  update_receive();
  migrate_if_ready();
}

void Connection::migrate_if_ready() {
  // A close (the peer went, the server stops) wins over a migration under way.
  if (phase_ != Phase::migrating || busy()) return;
  ConnectionState state{.fd = fd_,
                        .client_id = client_id_,
                        .peer = peer_,
                        .requests = std::move(requests_),
                        .authenticated = authenticated(),
                        .user_id = user_id_,
                        .migration_decided = true,
                        .tls = std::move(tls_)};
  const ShardId target = migrate_to_;
  fd_ = -1;
  registered_ = false;  // The target shard updates the registry's entry.
  enter(Phase::closed);
  HARK_LOG_DEBUG("connection %s: migrating from shard %u to shard %u", peer_, shard_.id().value(),
                 target.value());
  shard_.retire(*this);
  shard_.send_away(target, std::move(state));
}

}  // namespace hark::server
