#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/core/broker/broker.h"
#include "hark/io/reactor.h"
#include "hark/io/socket.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/options.h"
#include "hark/server/shard_server.h"

namespace hark::server {

// Opens `count` listening sockets on `address`, all with SO_REUSEPORT and all on ONE port:
// with port 0 the first socket picks a free port and the others bind that one, so the kernel
// spreads connections over every shard. A fixed port someone listens on is waited for (at most
// 5 s: a harkd killed a moment ago leaves listeners the kernel closes shortly after), then an
// error; InstanceLock (instance_lock.h) is what refuses a second live harkd on the port. No
// socket is listened on before the port is free, so no client is ever accepted and dropped.
// The caller owns the fds. Errors (logged): cannot_bind_to_socket, io_error.
Result<std::vector<int>> open_listeners(const io::SocketAddress& address, uint32_t count,
                                        int backlog);

// harkd's ShardHooks: a ShardServer on every broker shard, accepting from its on_start (in
// cluster mode from open_to_clients()). main()
// builds it with the listening sockets (socket i goes to shard i), passes it as
// BrokerOptions::hooks, and destroys it after the broker. Control plane.
class Server final : public core::ShardHooks, public cluster::ViewSink {
 public:
  // Takes ownership of `listeners` (one per shard), `users` and `tls` (null: plain TCP).
  // `options` is copied.
  // `links`: cluster mode's node links (their listener goes to shard 0), or null.
  Server(const ServerOptions& options, std::vector<int> listeners, std::unique_ptr<UserStore> users,
         std::unique_ptr<TlsContext> tls, std::unique_ptr<LinkShared> links = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // ShardHooks, each on its shard's thread.
  Status on_start(core::Broker& broker, io::Reactor& reactor) override;
  void on_stop(io::Reactor& reactor) override;
  void on_abort(io::Reactor& reactor) override;
  bool busy(io::Reactor& reactor) override;
  void on_drained(io::Reactor& reactor) override;

  // Any thread, once the broker has started: hands `view` to every shard through its Inbox
  // (a task per shard); each keeps the newest, so shards read it without a lock.
  void publish_cluster_view(Ref<const cluster::ClusterView> view) override;

  // Any thread, once the broker has started: every shard accepts clients from now on. Needed in
  // cluster mode only (on one node they are accepted from the start): a node is opened once its
  // users can log in, so a client that reaches it (connections wait in the listen backlog
  // meanwhile) never meets a node without root (docs/cluster.md §Metadata).
  void open_to_clients();

  // Before the broker stops: no more hashing; queued logins come back refused.
  void stop_auth() { shared_.auth.stop(); }

  // Open client connections over every shard (any thread).
  uint32_t connections_count() const { return shared_.clients.count(); }
  // Open client connections per shard, as numbers and as "3/1" (any thread).
  std::vector<uint32_t> connections_per_shard() const;
  std::string connections_by_shard() const;
  // Connections migrated to their partition's owner shard, and migrations abandoned for a
  // close (any thread).
  uint64_t migrations() const { return shared_.migrations.load(std::memory_order_relaxed); }
  uint64_t migrations_refused() const {
    return shared_.migrations_refused.load(std::memory_order_relaxed);
  }
  // Cluster mode's shared counters and gauges (node links, the newest view, etcd's reach), or
  // null on one node (any thread).
  LinkShared* links() const { return shared_.links.get(); }
  // The node links' counters for the stats line, " links_up=..." (empty on one node).
  std::string links_format() const {
    return shared_.links != nullptr ? " " + shared_.links->format() : std::string();
  }
  // Where shard 0 reports the moves it copied (cluster mode; null on one node).
  cluster::ShardReports* shard_reports() {
    return shared_.links != nullptr ? &shared_.links->shard_reports : nullptr;
  }
  // When harkd started, µs since the epoch (any thread).
  UnixMicros started_at() const { return shared_.started_at; }
  // Refusals, evictions, deadline closes and paused receives (any thread).
  const ConnectionCounters& connection_counters() const { return shared_.counters; }

 private:
  ServerShared shared_;
  std::vector<int> listeners_;  // Shard i's until its on_start takes it (-1 after).
  // Slot i is used only by shard i's thread (created in on_start, freed by the destructor
  // after the broker and its threads are gone).
  std::vector<std::unique_ptr<ShardServer>> shards_;
};

}  // namespace hark::server
