#include "hark/server/server.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <sys/socket.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/clock.h"
#include "hark/core/base/log.h"

namespace hark::server {

namespace {

// A cluster view on its way to one shard: posted from the coordination thread, run (and
// freed) on the shard. Control plane: one per shard per membership change.
// Server::open_to_clients's task on each shard.
class OpenDelivery final : public io::Task {
 public:
  explicit OpenDelivery(ShardServer& shard) : shard_(shard) {}
  void run() override {
    shard_.accept_clients();
    delete this;
  }

 private:
  ShardServer& shard_;
};

class ViewDelivery final : public io::Task {
 public:
  ViewDelivery(ShardServer& shard, Ref<const cluster::ClusterView> view)
      : shard_(shard), view_(std::move(view)) {}
  void run() override {
    shard_.set_cluster_view(std::move(view_));
    delete this;
  }

 private:
  ShardServer& shard_;
  Ref<const cluster::ClusterView> view_;
};

// True if nobody listens on `address`: a socket without SO_REUSEPORT binds (SO_REUSEADDR lets
// it past connections in TIME_WAIT) but is never listened on, so it can accept no client.
bool port_free(const io::SocketAddress& address) {
  const int fd = ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;  // listen_tcp() reports it.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool bound =
      ::bind(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) == 0;
  const int error = errno;
  ::close(fd);
  return bound || error != EADDRINUSE;
}

// Waits (bounded) until nobody listens on `address`. InstanceLock already refused a live
// harkd on this port, so a listener here is one of a harkd killed a moment ago, which the
// kernel closes shortly after the process is gone (io_uring tears a dead ring down in the
// background), or another program's. Without this wait, SO_REUSEPORT would join the dying
// listeners' group and the kernel would hand them clients that are then reset.
Status wait_for_port(const io::SocketAddress& address) {
  constexpr auto patience = std::chrono::seconds(5);
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (!port_free(address)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      HARK_LOG_ERROR("%s is in use by another program (no harkd holds this port)",
                     address.to_string());
      return Error::cannot_bind_to_socket;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ok_status();
}

}  // namespace

Result<std::vector<int>> open_listeners(const io::SocketAddress& address, uint32_t count,
                                        int backlog) {
  HARK_ASSERT(count > 0);
  if (address.port() != 0) HARK_TRY(wait_for_port(address));
  std::vector<int> listeners;
  listeners.reserve(count);
  io::SocketAddress shared = address;
  for (uint32_t i = 0; i < count; i++) {
    Result<int> listener = io::listen_tcp(shared, /*reuse_port=*/true, backlog);
    if (!listener.ok()) {
      for (const int fd : listeners) ::close(fd);
      return listener.error();
    }
    listeners.push_back(*listener);
    if (i == 0) {
      // Port 0 was resolved by the first bind: every other shard binds that same port.
      Result<io::SocketAddress> bound = io::local_address(*listener);
      if (!bound.ok()) {
        HARK_LOG_ERROR("cannot read the address of the listener on %s", address.to_string());
        ::close(*listener);
        return bound.error();
      }
      shared = *bound;
    }
  }
  return listeners;
}

Server::Server(const ServerOptions& options, std::vector<int> listeners,
               std::unique_ptr<UserStore> users, std::unique_ptr<TlsContext> tls,
               std::unique_ptr<LinkShared> links)
    : shared_(options, std::move(users), std::move(tls)),
      listeners_(std::move(listeners)),
      shards_(listeners_.size()) {
  shared_.links = std::move(links);
  HARK_ASSERT(!listeners_.empty());
  HARK_ASSERT(shared_.users != nullptr);
  shared_.shards.resize(listeners_.size(), nullptr);
  shared_.started_at = SystemClock().realtime_now();
  // One node's users are loaded (root made) before the server exists; a cluster's come from
  // the journal once the node follows etcd, so main() opens the doors then.
  shared_.open_to_clients.store(options.etcd_endpoints.empty(), std::memory_order_relaxed);
}

Server::~Server() {
  shared_.auth.stop();
  shards_.clear();
  for (const int fd : listeners_) {
    if (fd >= 0) ::close(fd);
  }
}

std::vector<uint32_t> Server::connections_per_shard() const {
  return shared_.clients.count_by_shard(static_cast<uint32_t>(shards_.size()));
}

std::string Server::connections_by_shard() const {
  std::string text;
  for (const uint32_t count : connections_per_shard()) {
    if (!text.empty()) text += '/';
    text += std::to_string(count);
  }
  return text;
}

Status Server::on_start(core::Broker& broker, io::Reactor& reactor) {
  const uint32_t index = reactor.id().value();
  if (index >= listeners_.size() || listeners_[index] < 0) {
    HARK_LOG_ERROR("shard %u has no listener (%u were opened)", index, listeners_.size());
    return Error::invalid_configuration;
  }
  const int listener = listeners_[index];
  listeners_[index] = -1;  // create() owns it now, failed or not.
  HARK_TRY_ASSIGN(shards_[index], ShardServer::create(reactor, broker, listener, shared_));
  shared_.shards[index] = shards_[index].get();
  return ok_status();
}

void Server::on_stop(io::Reactor& reactor) {
  const std::unique_ptr<ShardServer>& shard = shards_[reactor.id().value()];
  if (shard != nullptr) shard->stop();
}

void Server::on_abort(io::Reactor& reactor) {
  const std::unique_ptr<ShardServer>& shard = shards_[reactor.id().value()];
  if (shard != nullptr) shard->abort();
}

bool Server::busy(io::Reactor& reactor) {
  const std::unique_ptr<ShardServer>& shard = shards_[reactor.id().value()];
  return shard != nullptr && shard->busy();
}

void Server::on_drained(io::Reactor& reactor) {
  const std::unique_ptr<ShardServer>& shard = shards_[reactor.id().value()];
  if (shard != nullptr) shard->drain();
}

void Server::open_to_clients() {
  shared_.open_to_clients.store(true, std::memory_order_release);
  for (ShardServer* shard : shared_.shards) {
    if (shard != nullptr) shard->reactor().post_from_outside(*new OpenDelivery(*shard));
  }
}

void Server::publish_cluster_view(Ref<const cluster::ClusterView> view) {
  if (shared_.links != nullptr) {
    shared_.links->view_assignments.store(view->assignments.size(), std::memory_order_relaxed);
    shared_.links->view_nodes.store(view->nodes.size(), std::memory_order_relaxed);
    shared_.links->view_draining.store(view->draining.size(), std::memory_order_relaxed);
    shared_.links->view_assigned_here.store(
        std::ranges::count_if(view->assignments,
                              [&](const auto& entry) { return entry.second.node == view->self; }),
        std::memory_order_relaxed);
    shared_.links->view_moves.store(view->moves.size(), std::memory_order_relaxed);
    shared_.links->view_controller_here.store(view->controller == view->self,
                                              std::memory_order_relaxed);
    shared_.links->view_revision.store(view->revision, std::memory_order_relaxed);
  }
  for (ShardServer* shard : shared_.shards) {
    if (shard != nullptr) shard->reactor().post_from_outside(*new ViewDelivery(*shard, view));
  }
}

}  // namespace hark::server
