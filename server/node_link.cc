#include "hark/server/node_link.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <absl/strings/str_format.h>
#include <sys/socket.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/io/buffer_ring.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/command.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/message_requests.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/send_messages.h"
#include "hark/server/dispatch.h"
#include "hark/server/shard_server.h"

namespace hark::server {
namespace {

// A dial that failed is not tried again before this (doubling, up to the maximum): requests to
// an owner that cannot be reached fail at once meanwhile.
constexpr Duration dial_backoff_min = std::chrono::milliseconds(50);
constexpr Duration dial_backoff_max = std::chrono::seconds(2);

cluster::LinkIdentity identity_of(const LinkShared& shared) {
  return {.secret = shared.secret,
          .cluster = shared.cluster,
          .node = shared.node,
          .incarnation = shared.incarnation};
}

void add(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

std::string LinkShared::format() const {
  const auto get = [](const std::atomic<uint64_t>& value) {
    return value.load(std::memory_order_relaxed);
  };
  return absl::StrFormat(
      "links_up=%u link_handshakes_refused=%u link_tls_failures=%u links_dropped=%u forwarded=%u "
      "forwarded_executed=%u forwarded_replayed=%u forwarded_forgotten=%u forward_unavailable=%u "
      "forwarded_not_hosted=%u rerouted=%u view_assignments=%u view_nodes=%u",
      get(links_up), get(handshakes_refused), get(tls_failures), get(links_dropped), get(forwarded),
      get(executed), get(replayed), get(refused_forgotten), get(unavailable), get(not_hosted),
      get(rerouted), get(view_assignments), get(view_nodes));
}

// LinkSocket.

LinkSocket::LinkSocket(ShardServer& shard)
    : shard_(shard), sender_(shard.ring(), shard.options().write_timeout) {}

LinkSocket::~LinkSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool LinkSocket::attach(int fd, bool dialer) {
  HARK_ASSERT(fd_ < 0 && !busy());
  fd_ = fd;
  closing_ = false;
  authenticated_ = false;
  in_.clear();
  queued_.clear();
  io::set_no_delay(fd_);
  if (const TlsContext* tls = shard_.links()->shared().tls.get()) {
    tls_ = dialer ? TlsSession::connect(*tls) : TlsSession::accept(*tls);
    if (tls_ == nullptr) {
      tls_failed("no TLS session (OpenSSL could not allocate one)");
      return false;
    }
  }
  recv_armed_ = true;
  shard_.ring().recv_multishot(fd_, shard_.buffers().group(), receive_);
  // The client end speaks first: its first read() makes its hello.
  return tls_ == nullptr || !dialer || decrypt();
}

void LinkSocket::flush() {
  if (closing_ || fd_ < 0 || sender_.busy()) return;
  writing_.clear();
  if (tls_ == nullptr) {
    writing_.swap(queued_);
  } else if (!tls_->established() || queued_.empty()) {
    tls_->take_output(writing_);  // The TLS handshake's records: frames wait for its end.
  } else {
    const std::array<std::span<const std::byte>, 1> frames{queued_};
    if (!tls_->encrypt(frames, writing_)) {
      tls_failed(tls_->failure());
      return;
    }
    queued_.clear();
  }
  if (writing_.empty()) return;
  parts_[0] = writing_;
  sender_.send(fd_, parts_, *this);
}

bool LinkSocket::decrypt() {
  const std::span<std::byte> plaintext = shard_.tls_plaintext();
  for (;;) {
    const TlsSession::ReadResult read = tls_->read(plaintext);
    if (read.state == TlsSession::ReadState::data) {
      in_.append(plaintext.first(read.bytes));
      continue;
    }
    if (read.state == TlsSession::ReadState::more) break;
    if (read.state == TlsSession::ReadState::closed) {
      shut("TLS close_notify from the peer");
    } else {
      tls_failed(tls_->failure());
    }
    return false;
  }
  if (tls_->output_overflow()) {
    tls_failed("over " + std::to_string(TlsSession::output_pending_max) +
               " bytes of TLS answers it does not read");
    return false;
  }
  flush();
  return true;
}

void LinkSocket::tls_failed(const std::string& why) {
  LinkShared& shared = shard_.links()->shared();
  add(shared.tls_failures);
  if (!authenticated_) add(shared.handshakes_refused);
  HARK_LOG_WARN("link %s: %s (cluster.tls_ca signed both nodes' cluster.tls_cert?)", peer_, why);
  // The alert OpenSSL made tells the peer why (its log then names the reason too): a few
  // bytes, sent without waiting, when no write is under way.
  if (tls_ != nullptr && fd_ >= 0 && !sender_.busy() && tls_->output_pending() != 0) {
    writing_.clear();
    tls_->take_output(writing_);
    [[maybe_unused]] const ssize_t sent =
        ::send(fd_, writing_.data(), writing_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    writing_.clear();
  }
  shut("a TLS failure");
}

void LinkSocket::shut(const char* why) {
  if (closing_ || fd_ < 0) return;
  HARK_LOG_INFO("link %s: closing: %s", peer_, why);
  closing_ = true;
  if (recv_armed_) shard_.ring().cancel(receive_);
  if (sender_.busy()) shard_.ring().cancel(sender_);
  close_if_idle();
}

void LinkSocket::close_if_idle() {
  if (!closing_ || busy()) return;
  ::close(fd_);
  fd_ = -1;
  closing_ = false;
  tls_.reset();
  queued_.clear();
  in_.clear();
  on_closed();
}

void LinkSocket::Receive::complete(int32_t result, uint32_t flags) {
  link_.shard_.collect();
  link_.recv_complete(result, flags);
}

void LinkSocket::recv_complete(int32_t result, uint32_t flags) {
  if ((flags & IORING_CQE_F_MORE) == 0) recv_armed_ = false;
  if (result > 0) {
    io::BufferRing& buffers = shard_.buffers();
    const std::span<const std::byte> bytes = buffers.take(flags, static_cast<uint32_t>(result));
    if (!closing_ && tls_ != nullptr) {
      tls_->feed(bytes);  // Copied: the buffer goes back to the ring below.
    } else if (!closing_) {
      in_.append(bytes);
    }
    buffers.recycle(io::BufferRing::buffer_id(flags));
    if (!closing_ && (tls_ == nullptr || decrypt())) take_frames();
  } else if (result != -ENOBUFS && result != -ECANCELED) {
    shut(result == 0 ? "closed by the peer" : strerror(-result));
  }
  if (!recv_armed_ && !closing_ && fd_ >= 0) {
    recv_armed_ = true;  // Buffers ran out (-ENOBUFS): nothing was lost; receive again.
    shard_.ring().recv_multishot(fd_, shard_.buffers().group(), receive_);
  }
  close_if_idle();
}

void LinkSocket::take_frames() {
  while (!closing_) {
    const cluster::LinkFrame frame = in_.next(authenticated_);
    if (frame.state == cluster::LinkScanState::need_more) break;
    if (frame.state == cluster::LinkScanState::rejected) {
      if (!authenticated_) add(shard_.links()->shared().handshakes_refused);
      shut("a malformed or oversized frame");
      return;
    }
    if (!on_frame(frame)) {
      shut("a frame out of turn or malformed");
      return;
    }
  }
  in_.compact();
}

void LinkSocket::send_done(Result<uint64_t> result) {
  shard_.collect();
  writing_.clear();
  if (!result.ok()) {
    shut("a write failed");
  } else {
    flush();
  }
  close_if_idle();
}

// OutboundLink.

OutboundLink::OutboundLink(ShardServer& shard, LinkHub& hub, uint32_t node)
    : LinkSocket(shard), hub_(hub), node_(node) {
  peer_ = "to node " + std::to_string(node);
}

OutboundLink::~OutboundLink() {
  shard_.reactor().timers().cancel(backoff_);
  if (dial_fd_ >= 0 && !attached()) ::close(dial_fd_);
  while (pending_.pop_front() != nullptr) {
  }
}

void OutboundLink::submit(Forward& forward) {
  forward.header.id = next_id_++;
  forward.written = false;
  pending_.push_back(forward);
  add(hub_.shared().forwarded);
  if (state_ == State::up) {
    write(forward);
    flush();
  } else if (state_ == State::down && !backoff_.armed()) {
    dial();
  } else if (state_ == State::down) {
    fail_all();  // Dialled and failed a moment ago: the owner is unreachable.
  }
}

void OutboundLink::cancel(Forward& forward) {
  pending_.remove(forward);
  if (state_ == State::up && forward.written) {
    cluster::append_link_cancel(forward.header.id, queue());
    flush();
  }
}

void OutboundLink::stop() {
  stopped_ = true;
  shard_.reactor().timers().cancel(backoff_);
  if (connecting_) shard_.ring().cancel(connect_);
  fail_all();
  shut("stopping");
}

void OutboundLink::write(Forward& forward) {
  forward.header.answered_below = pending_.front().header.id;
  forward.header.wait_us = 0;
  if (forward.deadline) {
    const Instant now = shard_.monotonic_now();
    const Duration left = *forward.deadline > now ? *forward.deadline - now : Duration(0);
    forward.header.wait_us =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(left).count());
  }
  forward.header.payload = forward.payload;
  cluster::append_link_request(forward.header, queue());
  forward.written = true;
}

void OutboundLink::dial() {
  if (stopped_ || state_ != State::down || attached() || busy()) return;
  const cluster::ClusterView* view = shard_.cluster_view();
  const cluster::NodeInfo* info = view != nullptr ? view->node(node_) : nullptr;
  if (info == nullptr || info->link_address.empty()) {
    dial_failed("not a live member with a link address");
    return;
  }
  Result<io::SocketAddress> address = io::parse_address(info->link_address);
  if (!address.ok()) {
    dial_failed("its link address " + info->link_address + " does not parse");
    return;
  }
  address_ = *address;
  dial_fd_ = ::socket(address_.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (dial_fd_ < 0) {
    dial_failed(std::string("socket: ") + strerror(errno));
    return;
  }
  state_ = State::connecting;
  connecting_ = true;
  shard_.ring().connect(dial_fd_, reinterpret_cast<const sockaddr*>(&address_.storage),
                        address_.length, connect_);
}

void OutboundLink::Connect::complete(int32_t result, uint32_t /*flags*/) {
  link_.shard_.collect();
  link_.connected(result);
}

void OutboundLink::connected(int32_t result) {
  connecting_ = false;
  if (result < 0 || stopped_) {
    ::close(dial_fd_);
    dial_fd_ = -1;
    state_ = State::down;
    if (stopped_) return;
    dial_failed(std::string("connect to ") + address_.to_string() + ": " + strerror(-result));
    return;
  }
  const int fd = std::exchange(dial_fd_, -1);
  state_ = State::handshaking;
  dialer_.emplace(identity_of(hub_.shared()), shard_.id().value(), node_, cluster::random_nonce());
  if (!attach(fd, true)) return;
  dialer_->hello(queue());
  flush();
}

void OutboundLink::dial_failed(const std::string& why) {
  state_ = State::down;
  HARK_LOG_WARN("link to node %u: %s; its requests fail (%s)", node_, why,
                error_name(Error::shard_communication_error));
  shard_.reactor().timers().add(backoff_, shard_.monotonic_now() + delay_);
  delay_ = std::min(delay_ * 2, dial_backoff_max);
  fail_all();
}

bool OutboundLink::on_frame(const cluster::LinkFrame& frame) {
  if (state_ == State::handshaking) {
    const Result<cluster::LinkPeer> peer = dialer_->on_challenge(frame, queue());
    if (!peer.ok()) {
      add(hub_.shared().handshakes_refused);
      HARK_LOG_WARN(
          "link to node %u: handshake refused: %s (same cluster.secret_file and "
          "cluster.name on both nodes?)",
          node_, error_name(peer.error()));
      return false;
    }
    set_authenticated();
    handshake_done(*peer);
    return true;
  }
  if (state_ != State::up || frame.kind != cluster::LinkKind::response) return false;
  const Result<cluster::LinkResponse> response = cluster::parse_link_response(frame.body);
  if (!response.ok()) return false;
  answer(*response);
  return true;
}

void OutboundLink::handshake_done(const cluster::LinkPeer& peer) {
  state_ = State::up;
  delay_ = dial_backoff_min;
  add(hub_.shared().links_up);
  hub_.shared().peers_up[node_].fetch_add(1, std::memory_order_relaxed);
  const bool same_owner = owner_incarnation_ == 0 || owner_incarnation_ == peer.incarnation;
  HARK_LOG_INFO("link to node %u up (%s incarnation)", node_, same_owner ? "same" : "a new");
  owner_incarnation_ = peer.incarnation;
  // Written to an owner that restarted since: it may have run them, and its table is gone.
  IntrusiveList<Forward> failed;
  pending_.for_each([&](Forward& forward) {
    if (!same_owner && forward.written) {
      pending_.remove(forward);
      failed.push_back(forward);
    }
  });
  pending_.for_each([&](Forward& forward) { write(forward); });
  flush();
  while (Forward* forward = failed.pop_front()) {
    forward->forward_done(Error::shard_communication_error);
  }
}

void OutboundLink::answer(const cluster::LinkResponse& response) {
  Forward* found = nullptr;
  pending_.for_each([&](Forward& forward) {
    if (forward.header.id == response.id) found = &forward;
  });
  if (found == nullptr) return;  // Cancelled meanwhile.
  pending_.remove(*found);
  found->forward_done(response.response);
}

void OutboundLink::fail_all() {
  while (Forward* forward = pending_.pop_front()) {
    forward->forward_done(Error::shard_communication_error);
  }
}

void OutboundLink::on_closed() {
  const State was = state_;
  state_ = State::down;
  dialer_.reset();
  if (was == State::up) {
    add(hub_.shared().links_dropped);
    hub_.shared().peers_up[node_].fetch_sub(1, std::memory_order_relaxed);
  }
  if (stopped_) {
    fail_all();
    return;
  }
  // A handshake (TLS or the secret's) that failed fails again at once: back off as after a
  // failed connect, failing what waits, instead of dialling in a loop.
  if (was == State::handshaking) {
    dial_failed("closed before its handshake completed (the log line above says why)");
    return;
  }
  // Re-send what is unanswered, if the owner is still the same process (handshake_done).
  if (!pending_.empty()) dial();
}

// Executed and InboundLink.

void Executed::done() { hub_.finished(*this); }

InboundLink::InboundLink(ShardServer& shard, LinkHub& hub, int fd)
    : LinkSocket(shard), hub_(hub), acceptor_(identity_of(hub.shared()), cluster::random_nonce()) {
  io::SocketAddress address;
  address.length = sizeof address.storage;
  peer_ = ::getpeername(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) == 0
              ? "from " + address.to_string()
              : "from fd " + std::to_string(fd);
  shard_.reactor().timers().add(deadline_, shard_.monotonic_now() + handshake_timeout);
  attach(fd, false);
}

InboundLink::~InboundLink() {
  shard_.reactor().timers().cancel(deadline_);
  HARK_ASSERT(running_.empty());
}

void InboundLink::HandshakeDeadline::expire() {
  if (link_.authenticated()) return;
  add(link_.hub_.shared().handshakes_refused);
  link_.shut("no handshake within the deadline");
}

bool InboundLink::on_frame(const cluster::LinkFrame& frame) {
  if (!linked_.has_value() && frame.kind == cluster::LinkKind::hello) {
    const Status status = acceptor_.on_hello(frame, queue());
    if (!status.ok()) {
      add(hub_.shared().handshakes_refused);
      HARK_LOG_WARN("link %s: hello refused: %s", peer_, error_name(status.error()));
      return false;
    }
    flush();
    return true;
  }
  if (!authenticated()) {
    const Result<cluster::LinkPeer> peer = acceptor_.on_proof(frame);
    if (!peer.ok()) {
      add(hub_.shared().handshakes_refused);
      HARK_LOG_WARN(
          "link %s: handshake refused: %s (same cluster.secret_file and cluster.name "
          "on both nodes?)",
          peer_, error_name(peer.error()));
      return false;
    }
    set_authenticated();
    shard_.reactor().timers().cancel(deadline_);
    linked_ = *peer;
    hub_.link_up(*this, *peer);
    return true;
  }
  switch (frame.kind) {
    case cluster::LinkKind::request: return on_request(frame);
    case cluster::LinkKind::cancel: {
      const Result<uint64_t> id = cluster::parse_link_cancel(frame.body);
      if (!id.ok()) return false;
      hub_.cancel(*this, *id);
      return true;
    }
    default: return false;  // Only its own frame kinds; never a client command.
  }
}

bool InboundLink::on_request(const cluster::LinkFrame& frame) {
  const Result<cluster::LinkRequest> request = cluster::parse_link_request(frame.body);
  if (!request.ok()) return false;
  hub_.execute(*this, *linked_, *request);
  return true;
}

void InboundLink::send_answer(uint64_t id, std::span<const std::byte> answer) {
  if (!attached()) return;
  cluster::append_link_response(id, answer, queue());
  flush();
}

void InboundLink::on_closed() {
  closed_ = true;
  shard_.reactor().timers().cancel(deadline_);
  if (authenticated()) add(hub_.shared().links_dropped);
  hub_.link_closed(*this);
}

}  // namespace hark::server
