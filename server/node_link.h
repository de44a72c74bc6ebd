#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/operations.h"
#include "hark/io/completion.h"
#include "hark/io/sender.h"
#include "hark/io/socket.h"
#include "hark/io/timer_wheel.h"
#include "hark/protocol/writer.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/link_protocol.h"
#include "hark/server/cluster/shard_reports.h"
#include "hark/server/tls.h"

namespace hark::server {

class ShardServer;
class LinkHub;

// Node links (docs/cluster.md §Node links, §Forwarding): persistent, mutually authenticated
// connections between harkd nodes, on the shards' io_uring like client connections. Every shard
// dials one link to each node it forwards to (its OutboundLinks: one per (entry shard, remote
// node), so a shard's forwards take no lock); every node accepts links on shard 0, which runs
// the forwarded operations through the broker (one home shard per entry link, so the table of
// first answers per entry lives on one thread).

// What every shard's links share (in ServerShared). Counters: any thread.
struct LinkShared {
  std::string secret;  // The cluster secret (cluster.secret_file).
  std::string cluster;
  uint32_t node = 0;
  uint64_t incarnation = 0;  // Random per process.
  int listen_fd = -1;        // cluster.link_address's socket; shard 0 takes it.
  // Mutual TLS on every link, both ways (cluster.tls_*); null: plain TCP.
  std::unique_ptr<TlsContext> tls;
  // Moves shard 0 copied, for the coordination thread to mark ready (server/move_copy.h).
  cluster::ShardReports shard_reports;

  std::atomic<uint64_t> links_up{0};            // Handshakes that succeeded, both sides.
  std::atomic<uint64_t> handshakes_refused{0};  // Wrong proof, frame out of turn, garbage.
  std::atomic<uint64_t> links_dropped{0};       // Links closed after their handshake.
  // Links closed by a TLS failure (a handshake: also in handshakes_refused; or a record).
  std::atomic<uint64_t> tls_failures{0};
  std::atomic<uint64_t> forwarded{0};          // Requests this node sent to an owner.
  std::atomic<uint64_t> executed{0};           // Forwarded requests this node ran as owner.
  std::atomic<uint64_t> replayed{0};           // Re-sent writes answered from the table.
  std::atomic<uint64_t> refused_forgotten{0};  // Re-sent ids older than the table's window.
  std::atomic<uint64_t> unavailable{0};        // Requests refused: owner dead or unassigned.
  // Forwarded requests this node did not run because it does not host their partition (it
  // moved away), answered link_status_not_hosted.
  std::atomic<uint64_t> not_hosted{0};
  // Requests the entry routed again after the node it sent them to did not host their
  // partition, or once a view named an owner for them (docs/cluster.md §Moves).
  std::atomic<uint64_t> rerouted{0};
  // The newest cluster view (Server::publish_cluster_view): its assignments and live nodes, and
  // for /metrics its draining nodes, the partitions it assigns here, its moves, whether this
  // node is its controller and its etcd revision.
  std::atomic<uint64_t> view_assignments{0};
  std::atomic<uint64_t> view_nodes{0};
  std::atomic<uint64_t> view_draining{0};
  std::atomic<uint64_t> view_assigned_here{0};
  std::atomic<uint64_t> view_moves{0};
  std::atomic<bool> view_controller_here{false};
  std::atomic<int64_t> view_revision{0};
  // Outbound links up now, per peer node, summed over the shards (each dials its own).
  std::array<std::atomic<uint32_t>, cluster::node_id_max + 1> peers_up{};
  // Whether this node reaches etcd (the coordination thread's steps).
  cluster::EtcdHealth etcd;
  std::string format() const;  // The stats line's part.
};

// An entry node's request on its way to an owner: embedded in the client Connection (one
// request at a time), so forwarding allocates nothing per request. The link re-sends it after
// a reconnect to the same owner incarnation, and answers it once: forward_done().
class Forward : public ListHook<> {
 public:
  // `response`: the owner's whole Iggy response; an error: the link failed it (the owner
  // restarted, could not be reached, or the shard is stopping).
  virtual void forward_done(Result<std::span<const std::byte>> response) = 0;

  cluster::LinkRequest header;      // id and answered_below are set by the link.
  protocol::Bytes payload;          // The Iggy request payload (capacity reused).
  std::optional<Instant> deadline;  // A poll's: the wait sent is what is left of it.
  bool written = false;             // On the current link already.

 protected:
  ~Forward() = default;
};

// One end of a link: the socket, a multishot receive into the shard's buffer ring, frames
// assembled in `in_`, frames written through one io::Sender from a queue that fills while a
// write is under way. With cluster.tls_* the bytes pass through a TlsSession both ways (as a
// client connection's do, connection_tls.cc): what is queued before the TLS handshake ends
// waits for it, so the link's own handshake runs inside TLS. Shard-local.
class LinkSocket : private io::SendDone {
 public:
  explicit LinkSocket(ShardServer& shard);
  virtual ~LinkSocket();
  LinkSocket(const LinkSocket&) = delete;
  LinkSocket& operator=(const LinkSocket&) = delete;

  bool busy() const { return recv_armed_ || sender_.busy(); }
  bool attached() const { return fd_ >= 0; }
  bool authenticated() const { return authenticated_; }

 protected:
  // Takes `fd` (connected), starts TLS when the links have it (`dialer`: the client end),
  // and receives. False: no TLS session could be made (the socket is closed, on_closed()).
  bool attach(int fd, bool dialer);
  // Appends frames here, then flush().
  protocol::Bytes& queue() { return queued_; }
  void flush();
  // Closes: what is in flight is cancelled; on_closed() once the kernel is done with it.
  void shut(const char* why);
  void set_authenticated() { authenticated_ = true; }

  // A whole frame; false closes the link (the bytes after it cannot be trusted).
  virtual bool on_frame(const cluster::LinkFrame& frame) = 0;
  // The socket is closed and nothing of it is in flight.
  virtual void on_closed() = 0;

  ShardServer& shard_;
  std::string peer_;

 private:
  class Receive final : public io::Completion {
   public:
    explicit Receive(LinkSocket& link) : link_(link) {}
    void complete(int32_t result, uint32_t flags) override;

   private:
    LinkSocket& link_;
  };
  void recv_complete(int32_t result, uint32_t flags);
  // Decrypts what was fed into in_, and sends what the session answered; false: the link was
  // shut.
  bool decrypt();
  void tls_failed(const std::string& why);
  void send_done(Result<uint64_t> result) override;
  void take_frames();
  void close_if_idle();

  int fd_ = -1;
  bool closing_ = false;
  bool recv_armed_ = false;
  bool authenticated_ = false;
  Receive receive_{*this};
  io::Sender sender_;
  cluster::LinkReader in_;
  protocol::Bytes queued_;   // Plaintext frames.
  protocol::Bytes writing_;  // What the Sender writes (with TLS: records).
  std::unique_ptr<TlsSession> tls_;
  std::array<std::span<const std::byte>, 1> parts_{};
};

// The entry side of the link from this shard to one node: dials the node's link_address (from
// the shard's cluster view), authenticates it (LinkDialer), sends the Forwards and hands back
// their answers. Reconnects with a backoff while it has something to send. After a drop it
// re-sends what was unanswered only if the owner's incarnation is the same (the owner's table
// of first answers then holds any write that already ran); a new incarnation, or a node it
// cannot reach, fails them (forward_done with shard_communication_error): a restarted owner's
// table is gone, so re-sending a write could apply it twice.
class OutboundLink final : public LinkSocket {
 public:
  OutboundLink(ShardServer& shard, LinkHub& hub, uint32_t node);
  ~OutboundLink() override;

  void submit(Forward& forward);
  // The client went away: forget the request; a poll parked at the owner is cancelled there.
  void cancel(Forward& forward);
  // Shard stop: fails every Forward, closes, never reconnects.
  void stop();
  // A connect in flight (the kernel holds the completion).
  bool connecting() const { return connecting_; }

 private:
  enum class State : uint8_t { down, connecting, handshaking, up };
  class Connect final : public io::Completion {
   public:
    explicit Connect(OutboundLink& link) : link_(link) {}
    void complete(int32_t result, uint32_t flags) override;

   private:
    OutboundLink& link_;
  };
  class Backoff final : public io::Timer {
   public:
    explicit Backoff(OutboundLink& link) : link_(link) {}
    void expire() override {
      if (link_.pending_.empty()) return;  // Dialled again by the next request.
      link_.dial();
    }

   private:
    OutboundLink& link_;
  };

  bool on_frame(const cluster::LinkFrame& frame) override;
  void on_closed() override;
  void dial();
  void connected(int32_t result);
  void dial_failed(const std::string& why);
  void handshake_done(const cluster::LinkPeer& peer);
  void write(Forward& forward);
  void answer(const cluster::LinkResponse& response);
  void fail_all();

  LinkHub& hub_;
  const uint32_t node_;
  State state_ = State::down;
  bool connecting_ = false;
  bool stopped_ = false;
  int dial_fd_ = -1;
  io::SocketAddress address_{};
  Connect connect_{*this};
  Backoff backoff_{*this};
  Duration delay_ = std::chrono::milliseconds(50);
  std::optional<cluster::LinkDialer> dialer_;
  uint64_t owner_incarnation_ = 0;  // 0: never reached.
  uint64_t next_id_ = 1;
  IntrusiveList<Forward> pending_;  // Unanswered, in id order.
};

class InboundLink;

// A forwarded request run at the owner (shard 0), pooled by the hub: its operation, the copy of
// its payload the operation reads, and where its answer goes.
class Executed : public ListHook<> {
 public:
  explicit Executed(LinkHub& hub) : hub_(hub) {}

  template <typename Op>
  class LinkOp final : public Op {
   public:
    explicit LinkOp(Executed& executed) : executed_(executed) {}
    void done() override { executed_.done(); }

   private:
    Executed& executed_;
  };
  using Ops =
      std::variant<std::monostate, LinkOp<core::Append>, LinkOp<core::Poll>,
                   LinkOp<core::StoreOffset>, LinkOp<core::GetOffset>, LinkOp<core::DeleteOffset>,
                   LinkOp<core::Notify>, LinkOp<core::FencePartition>>;

  void done();

  LinkHub& hub_;
  InboundLink* link = nullptr;  // Null once its link closed (a write answers on the next).
  std::pair<uint32_t, uint32_t> entry{};  // (node, entry shard)
  uint64_t id = 0;
  bool deduplicated = false;
  bool auto_commit = false;
  bool committing = false;  // The poll answered; its auto-commit runs.
  uint32_t code = 0;
  protocol::Bytes payload;
  protocol::Bytes answer;
  Ops op;
};

// The owner side of a link (shard 0): authenticates the dialer (LinkAcceptor) and runs its
// requests as the user the entry node checked.
class InboundLink final : public LinkSocket, public ListHook<> {
 public:
  InboundLink(ShardServer& shard, LinkHub& hub, int fd);
  ~InboundLink() override;
  void start();
  void stop() { shut("stopping"); }
  bool closed() const { return closed_; }
  void send_answer(uint64_t id, std::span<const std::byte> answer);
  IntrusiveList<Executed>& running() { return running_; }

 private:
  // A dialer that has not proved the secret within handshake_timeout is closed (and counted),
  // so silent or slow sockets on the link port hold nothing for long.
  class HandshakeDeadline final : public io::Timer {
   public:
    explicit HandshakeDeadline(InboundLink& link) : link_(link) {}
    void expire() override;

   private:
    InboundLink& link_;
  };
  static constexpr Duration handshake_timeout = std::chrono::seconds(5);

  bool on_frame(const cluster::LinkFrame& frame) override;
  void on_closed() override;
  bool on_request(const cluster::LinkFrame& frame);

  LinkHub& hub_;
  HandshakeDeadline deadline_{*this};
  cluster::LinkAcceptor acceptor_;
  std::optional<cluster::LinkPeer> linked_;  // Once the handshake succeeded.
  IntrusiveList<Executed> running_;
  bool closed_ = false;
};

// A shard's links: its OutboundLinks by node, and on shard 0 the link listener, the
// InboundLinks and the tables of first answers. Created by ShardServer in cluster mode only.
class LinkHub final : private io::Completion {
 public:
  LinkHub(ShardServer& shard, LinkShared& shared, int listen_fd);
  ~LinkHub();
  LinkHub(const LinkHub&) = delete;
  LinkHub& operator=(const LinkHub&) = delete;

  OutboundLink& link_to(uint32_t node);
  LinkShared& shared() { return shared_; }
  ShardServer& shard() { return shard_; }
  void stop();
  bool busy() const;
  void collect();

  // The figures each owner last answered to this entry shard (connection_figures.cc): a
  // partition whose owner is dead or did not answer in time is reported with these, else 0.
  std::map<core::PartitionKey, core::PartitionInfo>& last_figures() { return last_figures_; }

  // The owner side.
  // Runs a forwarded request from `link` (its first run, or a re-send).
  void execute(InboundLink& link, const cluster::LinkPeer& peer,
               const cluster::LinkRequest& request);
  void cancel(InboundLink& link, uint64_t id);
  void link_up(InboundLink& link, const cluster::LinkPeer& peer);
  void link_closed(InboundLink& link);
  void finished(Executed& executed);

  static constexpr size_t answers_per_entry = 4096;
  // Inbound links open at once (authenticated or not); a newcomer past it is closed at accept.
  static constexpr size_t inbound_max = 1024;

 private:
  struct EntryState {
    uint64_t incarnation = 0;
    cluster::AnswerTable table{answers_per_entry};
    InboundLink* link = nullptr;
  };
  void complete(int32_t result, uint32_t flags) override;
  void arm_accept();
  Status start_op(Executed& executed, const cluster::LinkRequest& request);
  // A move's fetch from its target (link_fetch_code; docs/cluster.md §Moves).
  Status start_fetch(Executed& executed, const cluster::LinkRequest& request);
  // A fetch's Poll from `from` on `key` (a move's copy, or a follower's with `replica`).
  void submit_fetch(Executed& executed, const core::PartitionKey& key, uint64_t from,
                    uint32_t count, uint64_t wait_us, std::optional<core::ReplicaFetch> replica);
  // A follower's fetch (replica_fetch_code; docs/cluster.md §Replication, The data path).
  Status start_replica_fetch(Executed& executed, const cluster::LinkRequest& request);
  // Its answer: the leader's ends, then the messages; the follower's progress to Replication.
  void answer_replica_fetch(Executed& executed);
  // An unfenced move fetch's answer: the source's sealed segment, then the messages.
  void answer_move_fetch(Executed& executed);
  void answer_error(InboundLink& link, uint64_t id, Error error);
  // A parked poll or notification is cancelled in the broker; anything else runs on.
  void cancel_waiting(Executed& executed);
  // A figures request (docs/cluster.md §Figures): answered at once from this shard's catalog.
  Status answer_figures(Executed& executed);
  template <typename Request>
  Status start_notify(Executed& executed, const cluster::LinkRequest& request,
                      Status (*fill)(const Request&, uint32_t, core::Notify&));
  void encode_answer(Executed& executed);
  bool auto_commit(Executed& executed);
  void recycle(Executed& executed);

  ShardServer& shard_;
  LinkShared& shared_;
  int listen_fd_;
  bool accept_armed_ = false;
  bool stopping_ = false;
  std::map<uint32_t, std::unique_ptr<OutboundLink>> outbound_;
  IntrusiveList<InboundLink> inbound_;
  std::vector<std::unique_ptr<InboundLink>> inbound_owned_;
  std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<EntryState>> entries_;
  std::vector<std::unique_ptr<Executed>> executed_owned_;
  std::vector<Executed*> executed_free_;
  std::vector<core::PartitionFigures> figures_;  // answer_figures' (capacity reused).
  std::map<core::PartitionKey, core::PartitionInfo> last_figures_;
};

}  // namespace hark::server
