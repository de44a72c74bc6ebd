#include "server/server.h"

#include <unistd.h>

#include "core/base/assert.h"
#include "core/base/clock.h"
#include "core/base/log.h"

namespace hark::server {

Result<std::vector<int>> open_listeners(const io::SocketAddress& address, uint32_t count,
                                        int backlog) {
  HARK_ASSERT(count > 0);
  if (address.port() != 0) {
    // SO_REUSEPORT would let a second harkd (same user) bind the port too and silently take
    // part of the connections: make sure nobody listens there first, with a plain socket.
    Result<int> probe = io::listen_tcp(address, /*reuse_port=*/false, 1);
    if (!probe.ok()) {
      HARK_LOG_ERROR("%s is in use (another harkd?)", address.to_string());
      return probe.error();
    }
    ::close(*probe);
  }
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
               std::unique_ptr<UserStore> users)
    : shared_(options, std::move(users)),
      listeners_(std::move(listeners)),
      shards_(listeners_.size()) {
  HARK_ASSERT(!listeners_.empty());
  HARK_ASSERT(shared_.users != nullptr);
  shared_.shards.resize(listeners_.size(), nullptr);
  shared_.started_at = SystemClock().realtime_now();
}

Server::~Server() {
  shared_.auth.stop();
  shards_.clear();
  for (const int fd : listeners_) {
    if (fd >= 0) ::close(fd);
  }
}

std::string Server::connections_by_shard() const {
  std::string text;
  for (const uint32_t count :
       shared_.clients.count_by_shard(static_cast<uint32_t>(shards_.size()))) {
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

void Server::on_drained(io::Reactor& reactor) {
  const std::unique_ptr<ShardServer>& shard = shards_[reactor.id().value()];
  if (shard != nullptr) shard->drain();
}

}  // namespace hark::server
