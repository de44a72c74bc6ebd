#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/broker.h"
#include "hark/io/buffer_ring.h"
#include "hark/io/completion.h"
#include "hark/io/reactor.h"
#include "hark/io/timer_wheel.h"
#include "hark/server/admission.h"
#include "hark/server/client_registry.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/connection.h"
#include "hark/server/migration.h"
#include "hark/server/move_copy.h"
#include "hark/server/node_link.h"
#include "hark/server/options.h"
#include "hark/server/replication.h"
#include "hark/server/tls.h"
#include "hark/server/users/auth_pool.h"
#include "hark/server/users/login_throttle.h"
#include "hark/server/users/user_store.h"

namespace hark::server {

// What every shard's server shares. Owned by the Server, which outlives the shard servers.
struct ServerShared {
  ServerShared(const ServerOptions& server_options, std::unique_ptr<UserStore> user_store,
               std::unique_ptr<TlsContext> tls_context)
      : options(server_options),
        users(std::move(user_store)),
        tls(std::move(tls_context)),
        auth(server_options.auth_threads, server_options.auth_queue_max),
        throttle(server_options.login_failures_max, server_options.login_lockout) {}

  ServerOptions options;
  ClientRegistry clients;  // Thread-safe (control plane).
  // Whether the shards accept clients: from the start on one node; in cluster mode once users
  // can log in (Server::open_to_clients). Until then connections wait in the listen backlog.
  std::atomic<bool> open_to_clients{false};
  UnixMicros started_at = 0;
  // Shard i's server, set by shard i in its on_start before any shard's loop runs; the
  // migrations to shard i read it there.
  std::vector<ShardServer*> shards;
  // Connections moved to their partition's owner shard, and migrations that ended in a close
  // instead (the client went away meanwhile, or the target shard was stopping).
  std::atomic<uint64_t> migrations{0};
  std::atomic<uint64_t> migrations_refused{0};
  ConnectionCounters counters;
  UnauthenticatedHosts unauthenticated_hosts;
  std::unique_ptr<UserStore> users;  // Thread-safe.
  std::unique_ptr<TlsContext> tls;   // Null: plain TCP. Thread-safe.
  AuthPool auth;
  LoginThrottle throttle;
  // Cluster mode: the node links' settings and counters (node_link.h); null on one node.
  std::unique_ptr<LinkShared> links;
};

// harkd on one shard: the shard's listener (multishot accept on its SO_REUSEPORT socket), its
// receive buffer ring and its connections. Created in the shard's ShardHooks::on_start and
// used only on that shard's thread.
//
// Lifecycle: create() (on_start: accepting once shared.open_to_clients; the broker takes
// operations from then on)
// → stop() (on_stop: no more accepts, the listener closed, the links shut, every connection
// answers what is in flight and closes) → abort() (on_abort: whatever is still open is
// cancelled, its requests in the broker too; every shard runs its loop, tasks included, while
// busy(), so those cancellations complete) → drain() (on_drained: everything is freed, the
// buffer ring too). Closed connections are freed at the start of the next
// ring completion the shard handles (collect()), so no object is freed inside its own
// callback. Control plane, apart from the connections' data path.
class ShardServer final : private io::Completion {
 public:
  // Takes ownership of `listen_fd`. `broker` and `shared` must outlive the shard server.
  static Result<std::unique_ptr<ShardServer>> create(io::Reactor& reactor, core::Broker& broker,
                                                     int listen_fd, ServerShared& shared);
  ~ShardServer();
  ShardServer(const ShardServer&) = delete;
  ShardServer& operator=(const ShardServer&) = delete;

  // On the shard (on_stop). Idempotent.
  void stop();
  // On the shard (on_abort), after stop(): drops every connection still open (cancelling its
  // request in the broker or at another node).
  void abort();
  // After abort(), from the loop (not from a callback): frees what is done (collect()), then
  // true if something may still call back here (the kernel, the broker, another shard), or a
  // connection or link is still open.
  bool busy();
  // On the shard (on_drained), after abort(): frees every connection and link and the buffer
  // ring; if the shard is still busy() (the group's drain_timeout passed), logs it and leaves
  // what may still be called back.
  void drain();

  // For this shard's connections.
  core::Broker& broker() { return broker_; }
  io::Ring& ring() { return reactor_.ring(); }
  io::BufferRing& buffers() { return *buffers_; }
  const ServerOptions& options() const { return shared_.options; }
  ClientRegistry& clients() { return shared_.clients; }
  UserStore& users() { return *shared_.users; }
  AuthPool& auth() { return shared_.auth; }
  LoginThrottle& throttle() { return shared_.throttle; }
  io::Reactor& reactor() { return reactor_; }
  // The cluster as this node last read it from etcd (cluster mode), or null: one node, or no
  // view yet. Replaced only by Server::publish_cluster_view's task, on this shard.
  const cluster::ClusterView* cluster_view() const { return cluster_view_.get(); }
  // A newer view is kept, and the partitions it assigns to this node are the ones this shard's
  // broker hosts from then on (Broker::host).
  // On shard 0 it also removes from every consumer group the members of nodes that left, and
  // at this node's first registration its own members from before a restart (docs/cluster.md
  // §Consumer groups).
  // Then every connection waiting for a newer view is told (Connection::view_changed).
  void set_cluster_view(Ref<const cluster::ClusterView> view);
  // `connection`'s request waits for a newer view (docs/cluster.md §Moves); it leaves the list
  // when told, or through leave_view_wait().
  void await_view(Connection& connection) { view_waiters_.push_back(connection); }
  void leave_view_wait(Connection& connection) { view_waiters_.remove(connection); }
  // Starts accepting clients (ServerShared::open_to_clients is set); again: nothing.
  void accept_clients() { arm_accept(); }
  // This shard's node links (cluster mode), or null.
  LinkHub* links() { return links_.get(); }
  // Shard 0's replication duties (cluster mode), or null.
  Replication* replication() { return replication_.get(); }
  // Cluster mode only.
  cluster::ShardReports& shard_reports() { return shared_.links->shard_reports; }
  Instant monotonic_now() const { return reactor_.clock().monotonic_now(); }
  UnixMicros started_at() const { return shared_.started_at; }
  UnixMicros realtime_now() const { return reactor_.clock().realtime_now(); }
  ShardId id() const { return reactor_.id(); }
  // stop() has run: the broker is shutting down.
  bool stopping() const { return stopping_; }
  // `connection` is closed: free it at the next safe point.
  void retire(Connection& connection);
  // Posts a migrating connection's state to shard `target` (Migration).
  void send_away(ShardId target, ConnectionState state);
  // On this shard: takes in a connection that migrated here.
  void adopt(std::unique_ptr<Migration> migration);
  // A connection gave up its migration (it closes instead).
  void migration_refused() { shared_.migrations_refused.fetch_add(1, std::memory_order_relaxed); }
  // Admission (docs/operations.md §Connections). A connection entering awaiting_login joins
  // the shard's list of unauthenticated connections; past the shard's share of
  // limits.unauthenticated_max the oldest one is evicted. Leaving the phase leaves the list and
  // gives its address's slot back.
  UnauthenticatedHosts& unauthenticated_hosts() { return shared_.unauthenticated_hosts; }
  void unauthenticated_joined(Connection& connection);
  void unauthenticated_left(Connection& connection);
  // Counts (and logs, rate-limited) a connection harkd closed or refused.
  void note_refusal(Refusal refusal, const std::string& peer);
  void note_receive_paused() { shared_.counters.add_receive_paused(); }
  // Where a TLS connection decrypts into before its bytes are copied to its request buffer:
  // one per shard, not one per connection (a record's worth).
  std::span<std::byte> tls_plaintext() { return tls_plaintext_; }
  // Frees retired connections. Only from a ring completion's entry (never nested in a
  // connection's own call chain).
  void collect();

  size_t connections_count() const { return live_.size(); }
  // The connections open on this shard, for another shard's migration decision (any thread).
  uint32_t open_connections() const { return open_connections_.load(std::memory_order_relaxed); }
  // Whether a connection here may move to `owner` without leaving the shards unbalanced: the
  // owner then holds at most `migration_slack` connections more than this shard. So the
  // consumers of one hot partition fill its owner shard only up to its share, and the rest
  // stay where they were accepted (the one-hop wake): their answers are sent by every core,
  // not by the owner's alone (docs/architecture.md §Migration).
  bool migration_keeps_balance(ShardId owner) const;
  static constexpr uint32_t migration_slack = 16;

 private:
  class RetryTimer final : public io::Timer {
   public:
    explicit RetryTimer(ShardServer& shard) : shard_(shard) {}
    void expire() override { shard_.arm_accept(); }

   private:
    ShardServer& shard_;
  };

  ShardServer(io::Reactor& reactor, core::Broker& broker, int listen_fd, ServerShared& shared,
              std::unique_ptr<io::BufferRing> buffers);
  // Hands the partitions the current view assigns to this node to the broker (Broker::host).
  void host_assigned();

  // The accept completion.
  void complete(int32_t result, uint32_t flags) override;
  void arm_accept();
  void accept_connection(int fd);
  // Accept failed for want of file descriptors: answers the newcomer waiting in the backlog
  // with the spare descriptor's slot, so it is told (status 9) instead of left hanging.
  void refuse_without_files();
  // Answers CannotEstablishConnection (9) on a just-accepted socket and closes it.
  static void refuse(int fd);

  io::Reactor& reactor_;
  Ref<const cluster::ClusterView> cluster_view_;
  bool members_cleaned_ = false;  // This node's own members from before a restart (shard 0).
  core::Broker& broker_;
  ServerShared& shared_;
  int listen_fd_;
  std::unique_ptr<io::BufferRing> buffers_;
  IntrusiveList<Connection> live_;             // Open or closing.
  std::atomic<uint32_t> open_connections_{0};  // live_.size(), for the other shards.
  IntrusiveList<Connection> retired_;          // Closed, to be freed by collect().
  // In awaiting_login, oldest first: at most unauthenticated_share_.
  IntrusiveList<Connection, UnauthenticatedTag> unauthenticated_;
  IntrusiveList<Connection, ViewWaitTag> view_waiters_;
  uint32_t unauthenticated_share_;
  std::array<std::byte, 16 * 1024> tls_plaintext_{};
  int spare_fd_ = -1;  // /dev/null, given up to accept one newcomer when files run out.
  RetryTimer retry_timer_{*this};
  bool accept_armed_ = false;
  bool stopping_ = false;
  std::unique_ptr<LinkHub> links_;            // Last: its links use the members above.
  std::unique_ptr<MoveCopies> move_copies_;   // Shard 0 in cluster mode; uses links_.
  std::unique_ptr<Replication> replication_;  // Shard 0 in cluster mode; uses links_.
};

}  // namespace hark::server
