#include "hark/server/shard_server.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

#include <sys/socket.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/io/socket.h"
#include "hark/protocol/framing.h"
#include "hark/server/config.h"
#include "hark/server/users/login_throttle.h"

namespace hark::server {
namespace {

// The buffer-ring group id of harkd's receives (one ring per shard, so any id will do).
constexpr uint16_t receive_group = 1;
// After an accept error other than EMFILE/ENFILE (ENOMEM, say) accepting resumes after this
// pause rather than spinning on the same error.
constexpr Duration accept_retry_delay = std::chrono::milliseconds(100);

// Iggy's client ids: unique in the process, over all shards, from 1; in cluster mode unique in
// the cluster too (cluster::client_id_of: the node's id in the top bits).
std::atomic<uint32_t> next_client_id{1};

// A node's members leave every group (ShardServer::set_cluster_view); control plane, owned by
// the broker from submit to done.
class MembersCleanup final : public core::LeaveMembersInRange {
 public:
  explicit MembersCleanup(uint32_t node) : node_(node) {
    first = cluster::first_client_id(node);
    last = cluster::last_client_id(node);
  }
  void done() override {
    if (!status().ok()) {
      HARK_LOG_WARN("cluster: members of node %u not removed from their groups: %s", node_,
                    error_name(status().error()));
    }
    delete this;
  }

 private:
  uint32_t node_;
};

// This shard's share of limits.unauthenticated_max, itself capped at 3/4 of
// limits.connections_max so that logged-in clients always have room (at least 1).
uint32_t unauthenticated_share_of(const ServerOptions& options) {
  const uint32_t total = std::max<uint32_t>(
      1,
      std::min(options.unauthenticated_max, options.connections_max - options.connections_max / 4));
  return std::max<uint32_t>(1, total / std::max<uint32_t>(1, options.shards_count));
}

std::string peer_of(int fd) {
  io::SocketAddress address;
  address.length = sizeof address.storage;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return "fd " + std::to_string(fd);
  }
  return address.to_string();
}

}  // namespace

Result<std::unique_ptr<ShardServer>> ShardServer::create(io::Reactor& reactor, core::Broker& broker,
                                                         int listen_fd, ServerShared& shared) {
  const ServerOptions& options = shared.options;
  HARK_ASSERT(listen_fd >= 0);
  Result<std::unique_ptr<io::BufferRing>> buffers = io::BufferRing::create(
      reactor.ring(), receive_group, options.receive_buffers_count, options.receive_buffer_bytes);
  if (!buffers.ok()) {
    HARK_LOG_ERROR("shard %u: no receive buffer ring (%u × %u bytes): %s", reactor.id().value(),
                   options.receive_buffers_count, options.receive_buffer_bytes,
                   error_name(buffers.error()));
    ::close(listen_fd);
    return buffers.error();
  }
  auto shard = std::unique_ptr<ShardServer>(
      new ShardServer(reactor, broker, listen_fd, shared, std::move(buffers).value()));
  shard->arm_accept();
  if (shared.links != nullptr) {
    // Cluster mode: every shard dials its own links; shard 0 also accepts them.
    const bool first = reactor.id().value() == 0;
    shard->links_ =
        std::make_unique<LinkHub>(*shard, *shared.links, first ? shared.links->listen_fd : -1);
    if (first) {
      shard->move_copies_ = std::make_unique<MoveCopies>(*shard);
      shard->replication_ = std::make_unique<Replication>(*shard);
    }
  }
  return shard;
}

ShardServer::ShardServer(io::Reactor& reactor, core::Broker& broker, int listen_fd,
                         ServerShared& shared, std::unique_ptr<io::BufferRing> buffers)
    : reactor_(reactor),
      broker_(broker),
      shared_(shared),
      listen_fd_(listen_fd),
      buffers_(std::move(buffers)),
      unauthenticated_share_(unauthenticated_share_of(shared.options)),
      spare_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

void ShardServer::set_cluster_view(Ref<const cluster::ClusterView> view) {
  if (cluster_view_ && view->version <= cluster_view_->version) return;
  Ref<const cluster::ClusterView> previous = std::exchange(cluster_view_, std::move(view));
  host_assigned();
  // Taken out first: a connection that still waits puts itself back.
  IntrusiveList<Connection, ViewWaitTag> waiting;
  waiting.splice_back(view_waiters_);
  while (Connection* connection = waiting.pop_front()) connection->view_changed();
  if (id() != ShardId(0) || stopping_) return;
  if (move_copies_ != nullptr) move_copies_->on_view(*cluster_view_);
  if (replication_ != nullptr) replication_->on_view(*cluster_view_);
  // Members are journaled with ids that name their node: a node that left (its lease lapsed)
  // takes its members with it, and a restarted node drops those of its previous run, so no
  // group keeps dealing partitions to a member nobody polls for.
  const cluster::ClusterView& now = *cluster_view_;
  if (now.registered && !std::exchange(members_cleaned_, true)) {
    broker_.submit(*new MembersCleanup(now.self));
  }
  if (!previous) return;
  for (const cluster::NodeInfo& node : previous->nodes) {
    if (node.id != now.self && now.node(node.id) == nullptr) {
      HARK_LOG_INFO("cluster: node %u left; its members leave their consumer groups", node.id);
      broker_.submit(*new MembersCleanup(node.id));
    }
  }
}

// This shard's broker hosts the partitions the view assigns to this node and those a move
// copies to it (docs/cluster.md §Moves); a move's fence stays only on the partitions moving off.
void ShardServer::host_assigned() {
  if (!broker_.options().hosted_only) return;
  const cluster::ClusterView& view = *cluster_view_;
  std::vector<core::PartitionKey> hosted;
  std::vector<core::PartitionKey> moving;
  std::vector<core::HostedPlace> places;
  for (const auto& [key, assignment] : view.assignments) {
    // A replicated partition is open on each of its replicas, in its place (docs/cluster.md
    // §Replication, The data path).
    if (const auto place = assignment.place_of(view.self)) {
      hosted.push_back(key);
      places.push_back({.key = key, .place = *place});
    } else if (assignment.node == view.self) {
      hosted.push_back(key);
    }
  }
  for (const auto& [key, move] : view.moves) {
    if (move.to == view.self) hosted.push_back(key);
    if (move.from == view.self) moving.push_back(key);
  }
  const Status status = broker_.host(hosted, moving, places);
  if (!status.ok()) {
    HARK_LOG_ERROR("cluster: shard %u could not open every partition assigned to it (%s)",
                   reactor_.id().value(), std::string(error_name(status.error())));
  }
}

ShardServer::~ShardServer() {
  // Runs after the broker and the shard's reactor are gone, so nothing can call back now.
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (spare_fd_ >= 0) ::close(spare_fd_);
  collect();
  while (Connection* connection = live_.pop_front()) {
    // The broker never finished its operation: leave the object rather than guess.
    if (connection->broker_busy()) continue;
    std::unique_ptr<Connection> owned(connection);
  }
  // Without drain() (the shard never ran) or with connections left, the ring may be gone or
  // still use the buffers: leave them.
  (void)buffers_.release();
}

void ShardServer::arm_accept() {
  if (stopping_ || accept_armed_ || !shared_.open_to_clients.load(std::memory_order_acquire))
    return;
  accept_armed_ = true;
  reactor_.ring().accept_multishot(listen_fd_, *this);
}

void ShardServer::complete(int32_t result, uint32_t flags) {
  collect();
  if ((flags & IORING_CQE_F_MORE) == 0) accept_armed_ = false;
  if (result >= 0) {
    accept_connection(result);
  } else if ((result == -EMFILE || result == -ENFILE) && !stopping_) {
    refuse_without_files();
  } else if (result != -ECANCELED && !stopping_) {
    HARK_LOG_WARN("shard %u: accept failed: %s", id().value(), strerror(-result));
    if (!accept_armed_) {
      reactor_.timers().add(retry_timer_, reactor_.clock().monotonic_now() + accept_retry_delay);
      return;
    }
  }
  if (!accept_armed_ && !stopping_ && !retry_timer_.armed()) arm_accept();
}

void ShardServer::accept_connection(int fd) {
  if (stopping_) {
    ::close(fd);
    return;
  }
  // The limits are the process's, each checked and taken in one step: connections migrate
  // between shards, so no shard has a share of them.
  const uint32_t client_id = cluster::client_id_of(
      options().node_id, next_client_id.fetch_add(1, std::memory_order_relaxed));
  std::string peer = peer_of(fd);
  if (!unauthenticated_hosts().add_within(host_of(peer),
                                          options().unauthenticated_per_address_max)) {
    note_refusal(Refusal::per_address, peer);
    refuse(fd);
    return;
  }
  if (!clients().add_within({.client_id = client_id, .shard = id().value(), .address = peer},
                            options().connections_max)) {
    HARK_LOG_WARN(
        "%u connections open, the most harkd takes (limits.connections_max); "
        "refusing a new one",
        options().connections_max);
    unauthenticated_hosts().remove(host_of(peer));
    refuse(fd);
    return;
  }
  std::unique_ptr<TlsSession> tls;
  if (shared_.tls != nullptr && (tls = TlsSession::accept(*shared_.tls)) == nullptr) {
    HARK_LOG_WARN("no memory for a TLS session: refusing %s with status 9", peer);
    clients().remove(client_id);
    unauthenticated_hosts().remove(host_of(peer));
    refuse(fd);
    return;
  }
  auto connection =
      std::make_unique<Connection>(*this, fd, client_id, std::move(peer), std::move(tls));
  HARK_LOG_DEBUG("shard %u: client %u (%s) connected", id().value(), client_id, connection->peer());
  Connection& adopted = *connection.release();  // Owned by the lists until collect().
  live_.push_back(adopted);
  open_connections_.store(live_.size(), std::memory_order_relaxed);
  adopted.start();
}

void ShardServer::refuse(int fd) {
  // Told why before the close: a client reading its first response sees
  // CannotEstablishConnection (9). The socket's buffer is empty, so 8 bytes go at once.
  const auto refusal = protocol::error_response(Error::cannot_establish_connection);
  (void)!::send(fd, refusal.data(), refusal.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::close(fd);
}

void ShardServer::refuse_without_files() {
  // The newcomer stays in the backlog (the kernel takes a descriptor before it dequeues a
  // connection): free the spare, take the newcomer on it, answer, and take the spare back.
  // The listener is non-blocking, so an empty backlog costs one EAGAIN.
  if (spare_fd_ >= 0) ::close(spare_fd_);
  const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) {
    note_refusal(Refusal::no_files, peer_of(fd));
    refuse(fd);
  }
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void ShardServer::note_refusal(Refusal refusal, const std::string& peer) {
  shared_.counters.add(refusal);
  switch (refusal) {
    case Refusal::per_address:
      HARK_LOG_WARN(
          "%s has %u unauthenticated connections, the most one address may hold "
          "(limits.unauthenticated_per_address_max); refusing a new one",
          host_of(peer), options().unauthenticated_per_address_max);
      return;
    case Refusal::evicted:
      HARK_LOG_WARN(
          "shard %u holds %u unauthenticated connections (its share of "
          "limits.unauthenticated_max); closing the oldest, %s",
          id().value(), unauthenticated_share_, peer);
      return;
    case Refusal::login_timeout:
      HARK_LOG_INFO("connection %s: not logged in within %s (limits.login_timeout); closing", peer,
                    format_duration(options().login_timeout));
      return;
    case Refusal::write_timeout:
      HARK_LOG_WARN(
          "connection %s: took none of a response for %s (limits.write_timeout); "
          "closing",
          peer, format_duration(options().write_timeout));
      return;
    case Refusal::no_files:
      HARK_LOG_WARN("out of file descriptors (RLIMIT_NOFILE): refusing %s with status 9", peer);
      return;
    case Refusal::heartbeat:
      HARK_LOG_INFO(
          "connection %s: sent nothing for %s (heartbeat.interval %s x 1.2, no ping); closing",
          peer, format_duration(options().heartbeat_interval * 6 / 5),
          format_duration(options().heartbeat_interval));
      return;
    case Refusal::tls_failure: return;  // The connection logs OpenSSL's reason.
  }
}

void ShardServer::unauthenticated_joined(Connection& connection) {
  unauthenticated_.push_back(connection);
  // Evicting the oldest, not refusing the newest, means idle sockets cannot hold the door
  // shut: a client that logs in promptly gets through however many are held open.
  if (unauthenticated_.size() > unauthenticated_share_) unauthenticated_.front().evict();
}

void ShardServer::unauthenticated_left(Connection& connection) {
  unauthenticated_.remove(connection);
  unauthenticated_hosts().remove(host_of(connection.peer()));
}

void ShardServer::retire(Connection& connection) {
  HARK_ASSERT(connection.closed());
  live_.remove(connection);
  open_connections_.store(live_.size(), std::memory_order_relaxed);
  retired_.push_back(connection);
}

bool ShardServer::migration_keeps_balance(ShardId owner) const {
  const ShardServer* target = shared_.shards[owner.value()];
  return target != nullptr &&
         target->open_connections() + 2 <= open_connections() + migration_slack;  // After the move.
}

void ShardServer::send_away(ShardId target, ConnectionState state) {
  HARK_ASSERT(!stopping_);
  auto* migration = new Migration(shared_, target, std::move(state));
  reactor_.post(target, *migration);  // Owned by the task until adopt() (or its close).
}

void ShardServer::adopt(std::unique_ptr<Migration> migration) {
  ConnectionState& state = migration->state;
  if (stopping_) {
    // Shutting down: it would be closed here at once. ~Migration closes the socket.
    HARK_LOG_DEBUG("shard %u: client %u arrived while stopping; closing", id().value(),
                   state.client_id);
    clients().remove(state.client_id);
    migration_refused();
    return;
  }
  const uint32_t client_id = state.client_id;
  auto connection = std::make_unique<Connection>(*this, std::move(state));
  state.fd = -1;  // The connection owns the socket now.
  HARK_LOG_DEBUG("shard %u: client %u (%s) migrated here", id().value(), client_id,
                 connection->peer());
  shared_.migrations.fetch_add(1, std::memory_order_relaxed);
  Connection& adopted = *connection.release();  // Owned by the lists until collect().
  live_.push_back(adopted);
  open_connections_.store(live_.size(), std::memory_order_relaxed);
  adopted.resume();
}

void ShardServer::collect() {
  while (Connection* connection = retired_.pop_front()) {
    std::unique_ptr<Connection> owned(connection);
  }
  if (links_ != nullptr) links_->collect();
  if (move_copies_ != nullptr) move_copies_->collect();
  if (replication_ != nullptr) replication_->collect();
}

void ShardServer::stop() {
  if (stopping_) return;
  stopping_ = true;
  reactor_.timers().cancel(retry_timer_);
  // The armed accept holds its own reference to the socket until the cancel lands; a client
  // accepted meanwhile is closed in accept_connection().
  if (accept_armed_) reactor_.ring().cancel(*this);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  if (move_copies_ != nullptr) move_copies_->stop();
  if (replication_ != nullptr) replication_->stop();
  // Requests forwarded from here fail (a poll answers empty), so the connections can close.
  if (links_ != nullptr) links_->stop();
  HARK_LOG_DEBUG("shard %u: stopping, %u connections open", id().value(), live_.size());
  live_.for_each([](Connection& connection) { connection.close_when_idle(); });
}

void ShardServer::abort() {
  stop();
  live_.for_each([](Connection& connection) { connection.abort(); });
}

bool ShardServer::busy() {
  // Closed connections and links, stopped copies and fetchers leave their lists here, not when
  // they finish: without it, one that finished after the last completion would count forever.
  collect();
  // The broker's count covers the requests of connections and links, including those of links
  // already closed (LinkHub::link_closed cancelled them) and auto-commits.
  return !live_.empty() || accept_armed_ || (links_ != nullptr && links_->busy()) ||
         (move_copies_ != nullptr && move_copies_->busy()) ||
         (replication_ != nullptr && replication_->busy()) || broker_.operations_in_flight() > 0;
}

void ShardServer::drain() {
  abort();
  if (busy()) {
    // The group's drain_timeout passed: the kernel or the broker may still complete something.
    // Keep the objects (the connections are freed by the destructor, once the broker is
    // gone) and the buffers the kernel may still fill.
    HARK_LOG_WARN(
        "shard %u: still busy at shutdown (%u connections, %u broker operations); leaving them",
        id().value(), live_.size(), broker_.operations_in_flight());
    live_.for_each([&](const Connection& connection) {
      HARK_LOG_WARN("shard %u: connection %s still waits for its %s", id().value(),
                    connection.peer(), connection.broker_busy_with());
    });
    (void)move_copies_.release();
    (void)replication_.release();
    (void)links_.release();
    (void)buffers_.release();
    return;
  }
  replication_.reset();
  move_copies_.reset();
  links_.reset();  // Its links cancel their timers: while the reactor lives.
  buffers_.reset();
}

}  // namespace hark::server
