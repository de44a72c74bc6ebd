#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "hark/core/base/assert.h"
#include "hark/core/base/clock.h"
#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/core/broker/broker.h"
#include "hark/core/broker/operations.h"
#include "hark/io/completion.h"
#include "hark/io/sender.h"
#include "hark/io/timer_wheel.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/request.h"
#include "hark/protocol/user_requests.h"
#include "hark/protocol/writer.h"
#include "hark/server/client_registry.h"
#include "hark/server/command_table.h"
#include "hark/server/node_link.h"
#include "hark/server/request_buffer.h"
#include "hark/server/tls.h"
#include "hark/server/users/auth_pool.h"
#include "hark/server/users/login_throttle.h"
#include "hark/server/users/user_store.h"

namespace hark::server {

class Connection;
class ShardServer;

// What a connection is between two requests: all of it that moves when the connection
// migrates to another shard (migration.h).
struct ConnectionState {
  int fd = -1;  // Connected socket; owned.
  uint32_t client_id = 0;
  std::string peer;
  RequestBuffer requests;  // Bytes the client sent ahead, unread.
  bool authenticated = false;
  uint32_t user_id = UINT32_MAX;   // Logged in as (valid while authenticated).
  bool migration_decided = false;  // A connection migrates at most once.
  // The TLS session (docs/operations.md §TLS), null on plain TCP. It moves with the connection:
  // an SSL object may be used by one thread after another, and the migration's handover
  // orders them.
  std::unique_ptr<TlsSession> tls;
};

// Where a connection is in its life. Every change goes through Connection::enter(), which
// asserts the transition is allowed and keeps in step what depends on the phase: the login
// deadline and the counts of unauthenticated connections (docs/operations.md §Connections).
//
//   awaiting_login --login--> serving --decided--> migrating --handed over--> closed
//        |   ^                  |  |                   |                         ^
//        |   +----logout--------+  |                   |                         |
//        +----------------------> closing <------------+ --nothing in flight-----+
//        +----------------------> dropping <-----------+ --nothing in flight-----+
//                       (from serving and closing too)
enum class Phase : uint8_t {
  awaiting_login,  // Not logged in: counted as unauthenticated; the login deadline runs.
  serving,         // Logged in: requests are read and answered.
  migrating,       // No new request is read; moves to another shard once nothing is in flight.
  closing,         // No new request is read; what is in flight is answered, then it closes.
  dropping,        // The peer is gone (or must not be answered): nothing more is sent, what is
                   // in flight is cancelled; closes once nothing is in flight.
  closed,          // Socket closed or handed to another shard; freed at the next collect().
};
std::string_view phase_name(Phase phase);

// The request a connection is answering (at most one at a time), in any phase.
enum class RequestState : uint8_t {
  idle,            // Between requests: the next frame may be read.
  answering,       // From a frame's start until its response is written.
  answering_last,  // A rejected frame's error: the connection closes once it is written, and
                   // what the client sends meanwhile is dropped.
};

// Whether the connection moves to the shard that owns the one partition it uses
// (docs/architecture.md §6). Decided at most once.
enum class MigrationState : uint8_t {
  undecided,  // The next successful send or poll that names one partition decides it.
  deciding,   // The request in flight is such a send or poll: its done() decides.
  staying,    // Decided (or adopted from another shard): never moves again.
  moving,     // Decided: moves once this response is written (Phase::migrating).
};

// The list of a shard's connections awaiting login, oldest first (ShardServer).
struct UnauthenticatedTag {};
// The list of a shard's connections whose request waits for a newer cluster view
// (ShardServer::await_view; connection_forward.cc).
struct ViewWaitTag {};

// An Operation a connection submits; its done() goes back to the connection.
template <typename Op>
class ConnectionOp final : public Op {
 public:
  explicit ConnectionOp(Connection& connection) : connection_(connection) {}
  void done() override;

 private:
  Connection& connection_;
};

// The largest operation (and alignment) of a row of commands.inc: the size of a connection's
// OpSlot.
inline constexpr size_t op_slot_size = std::max({
#define HARK_COMMAND(name, request, kind, operation, access, applied) \
  HARK_COMMAND_SIZE_##kind(operation),
#include "hark/server/commands.inc"
#undef HARK_COMMAND
});
inline constexpr size_t op_slot_align = std::max({
#define HARK_COMMAND(name, request, kind, operation, access, applied) \
  HARK_COMMAND_ALIGN_##kind(operation),
#include "hark/server/commands.inc"
#undef HARK_COMMAND
});

// The operation of the request a connection is answering, built in place: one slot big enough
// for any row's operation, so no request allocates one, and no list of operation types to keep
// in step with the table. `answer` is the row's way to answer the operation once it succeeded.
class OpSlot {
 public:
  using Answer = void (*)(Connection& connection, const core::Operation& op);

  OpSlot() = default;
  ~OpSlot() { reset(); }
  OpSlot(const OpSlot&) = delete;
  OpSlot& operator=(const OpSlot&) = delete;

  template <typename Operation>
  ConnectionOp<Operation>& emplace(Connection& connection, Answer respond) {
    static_assert(sizeof(ConnectionOp<Operation>) <= op_slot_size);
    static_assert(alignof(ConnectionOp<Operation>) <= op_slot_align);
    reset();
    auto* op = ::new (storage_.data()) ConnectionOp<Operation>(connection);
    op_ = op;
    answer_ = respond;
    type_ = &type_tag<Operation>;
    return *op;
  }
  // Destroys the operation (a poll's ReadView goes with it).
  void reset() {
    if (op_ == nullptr) return;
    op_->~Operation();
    op_ = nullptr;
    answer_ = nullptr;
    type_ = nullptr;
  }
  bool empty() const { return op_ == nullptr; }
  // The operation if it is an `Operation` (the poll's and the send's special handling), else
  // null.
  template <typename Operation>
  Operation* get_if() {
    return type_ == &type_tag<Operation> ? static_cast<ConnectionOp<Operation>*>(op_) : nullptr;
  }
  // Requires: !empty().
  const Status& status() const { return op_->status(); }
  void answer(Connection& connection) const { answer_(connection, *op_); }

 private:
  template <typename Operation>
  static constexpr char type_tag = 0;  // Its address names the type.

  alignas(op_slot_align) std::array<std::byte, op_slot_size> storage_{};
  core::Operation* op_ = nullptr;
  Answer answer_ = nullptr;
  const char* type_ = nullptr;
};

// The StoreOffset a connection submits after a poll response with auto_commit was written.
class AutoCommit final : public core::StoreOffset {
 public:
  explicit AutoCommit(Connection& connection) : connection_(connection) {}
  void done() override;

 private:
  Connection& connection_;
};

// The LeaveConsumerGroups a connection that joined a group submits when it closes.
class LeaveGroups final : public core::LeaveConsumerGroups {
 public:
  explicit LeaveGroups(Connection& connection) : connection_(connection) {}
  void done() override;

 private:
  Connection& connection_;
};

// A user, token or login command a connection hands to the AuthPool (connection_users.cc):
// the request is copied in, work() runs the UserStore call on a pool thread, and run() hands
// the outcome back to the connection on its shard.
class UserJob final : public AuthJob {
 public:
  using Request = std::variant<
      std::monostate, protocol::LoginUserRequest, protocol::LoginWithPersonalAccessTokenRequest,
      protocol::CreateUserRequest, protocol::DeleteUserRequest, protocol::UpdateUserRequest,
      protocol::UpdatePermissionsRequest, protocol::ChangePasswordRequest,
      protocol::CreatePersonalAccessTokenRequest, protocol::DeletePersonalAccessTokenRequest>;

  explicit UserJob(Connection& connection) : connection_(connection) {}
  void work() override;
  void run() override;

  // Inputs.
  Request request;
  UserStore* store = nullptr;
  uint32_t user_id = 0;  // Who asks (tokens; the root and self-permission guards).
  UnixMicros now = 0;
  uint32_t tokens_max = 0;
  LoginThrottle* throttle = nullptr;  // Logins: reserved before the hash, counted after.
  std::string address;                // Logins: the host the throttle counts by.
  const Clock* clock = nullptr;       // Logins: the throttle's time.
  // Outputs.
  Status status;
  std::optional<UserRecord> user;  // create_user.
  uint32_t login_user_id = 0;      // Logins.
  bool login_throttled = false;    // Logins: refused by the throttle, nothing checked.
  bool lockout_started = false;    // Logins: this failure locked the address out.
  std::string token;               // create_personal_access_token.

 private:
  Connection& connection_;
};

// One client connection of harkd: receives request frames, answers them strictly in order and
// one at a time, and closes. Owned by its ShardServer and used only on that shard.
//
// Receiving (update_receive()): one multishot recv into the shard's buffer ring stays armed
// while the client has sent less than `read_ahead_bytes` past the request in flight; bytes are
// copied into the RequestBuffer and the ring buffer recycled. Past that bound the recv is
// cancelled (the socket's buffer then pushes back on the client) and a poll for POLLRDHUP
// stands in for it, so a disconnect is still seen at once, even behind a parked poll. Requests: a
// complete frame goes to its row of commands.inc (connection_commands.cc): decoded, authorized,
// then its handler answers it or fills an Operation (dispatch.h), held in `op_` until its
// response is written; the next frame is not looked at before that. Responses go out through one
// io::Sender; a poll's messages are sent from the broker's ReadView without a copy. After a poll
// response with auto_commit is written whole, the last offset is stored (AutoCommit) before the
// next request is read.
//
// Lifecycle (Phase): start() -> awaiting_login -> serving -> closing (the login deadline passed,
// a rejected frame was answered, or the server stops) or dropping (peer gone, a send failed or
// stalled past the write timeout, evicted, shard teardown) -> closed once nothing is in flight
// (busy()): the fd is closed and the ShardServer frees the object at its next safe point, never
// from inside one of the object's own callbacks. Dropping cancels the send in flight (its memory
// goes at once) and a parked poll. Data plane: no allocation per request once buffers have grown
// (the operation is built in the connection's OpSlot; control-plane responses reuse one Bytes).
class Connection final : public ListHook<>,
                         public ListHook<UnauthenticatedTag>,
                         public ListHook<ViewWaitTag>,
                         private io::SendDone {
 public:
  // Takes ownership of `fd` (an accepted, connected socket). `client_id` is unique in the
  // process (Iggy's client id; a consumer group's member id). `peer` is for logs.
  // `tls`: its TLS session (TLS on the listener), or null.
  Connection(ShardServer& shard, int fd, uint32_t client_id, std::string peer,
             std::unique_ptr<TlsSession> tls);
  // A connection that migrated here from another shard (ShardServer::adopt).
  Connection(ShardServer& shard, ConnectionState state);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Arms the receive. Called once, right after accept.
  void start();
  // Arms the receive on the shard a connection migrated to and answers what it had sent
  // ahead. Called once, right after adoption.
  void resume();
  // Server stop: no new requests; the one in flight is answered, then the connection closes.
  void close_when_idle();
  // Shard teardown (ShardServer::abort): cancel every ring operation and the request in the
  // broker, answer nothing more.
  void abort();
  // The shard holds too many unauthenticated connections and this one is the oldest: close it
  // (there is no request to answer).
  void evict();

  Phase phase() const { return phase_; }
  bool closed() const { return phase_ == Phase::closed; }
  // True while the broker or the AuthPool may still call back (an operation, an auto-commit,
  // the leaving of its groups or a user command in flight).
  bool broker_busy() const {
    return op_busy_ || commit_busy_ || leave_busy_ || user_busy_ || forward_busy_ || figures_busy_;
  }
  // What broker_busy() waits for (for the log of a shutdown that ran out of time), or "".
  const char* broker_busy_with() const {
    return op_busy_        ? "operation"
           : commit_busy_  ? "auto-commit"
           : leave_busy_   ? "leaving of its groups"
           : user_busy_    ? "user command"
           : forward_busy_ ? "forwarded request"
           : figures_busy_ ? "figures"
                           : "";
  }
  // True while the kernel, the broker or the AuthPool may still call back: the connection
  // cannot close, migrate or be freed.
  bool busy() const { return recv_armed_ || hangup_armed_ || sender_.busy() || broker_busy(); }
  uint32_t client_id() const { return client_id_; }
  const std::string& peer() const { return peer_; }
  // The shard holds a newer cluster view: a request waiting for one (await_view) is routed
  // again if the view names an owner for it, else waits on (connection_forward.cc).
  void view_changed();

 private:
  template <typename Op>
  friend class ConnectionOp;
  friend class AutoCommit;
  friend class LeaveGroups;
  friend class UserJob;

  class Receive final : public io::Completion {
   public:
    explicit Receive(Connection& connection) : connection_(connection) {}
    void complete(int32_t result, uint32_t flags) override;

   private:
    Connection& connection_;
  };
  // The POLLRDHUP poll that watches for a disconnect while the receive is paused.
  class Hangup final : public io::Completion {
   public:
    explicit Hangup(Connection& connection) : connection_(connection) {}
    void complete(int32_t result, uint32_t flags) override;

   private:
    Connection& connection_;
  };
  class LoginDeadline final : public io::Timer {
   public:
    explicit LoginDeadline(Connection& connection) : connection_(connection) {}
    void expire() override { connection_.login_deadline_passed(); }

   private:
    Connection& connection_;
  };

  // Heartbeats (heartbeat.enabled): one timer for the connection's open phases, re-armed
  // lazily. Activity only stores a time (heard()); at expiry the timer re-checks it.
  class HeartbeatCheck final : public io::Timer {
   public:
    explicit HeartbeatCheck(Connection& connection) : connection_(connection) {}
    void expire() override { connection_.heartbeat_due(); }

   private:
    Connection& connection_;
  };

  // Forwarding (connection_forward.cc; docs/cluster.md §Forwarding): the request in flight at
  // another node, and the wait of a poll whose partition has no live owner.
  class ForwardSlot final : public Forward {
   public:
    explicit ForwardSlot(Connection& connection) : connection_(connection) {}
    void forward_done(Result<std::span<const std::byte>> response) override {
      connection_.forward_done(response);
    }

   private:
    Connection& connection_;
  };
  // One leg of a group member's poll or of a notification spread over the owners of its
  // partitions (connection_group.cc): a one-partition request parked at one owner; reused for a
  // poll's auto-commit of the winner.
  class GroupLeg final : public Forward {
   public:
    explicit GroupLeg(Connection& connection) : connection_(connection) {}
    void forward_done(Result<std::span<const std::byte>> response) override {
      connection_.leg_done(*this, response);
    }
    uint32_t node = 0;
    uint32_t partition = 0;
    core::PartitionKey key;  // The partition, by ids.

   private:
    Connection& connection_;
  };
  // GetStream(s) and GetTopic(s) in cluster mode (connection_figures.cc; docs/cluster.md
  // §Figures): the figures request to one owner node, and the bound on the owners' answers.
  class FiguresLeg final : public Forward {
   public:
    explicit FiguresLeg(Connection& connection) : connection_(connection) {}
    void forward_done(Result<std::span<const std::byte>> response) override {
      connection_.figures_leg_done(*this, response);
    }
    uint32_t node = 0;

   private:
    Connection& connection_;
  };
  class FiguresWait final : public io::Timer {
   public:
    explicit FiguresWait(Connection& connection) : connection_(connection) {}
    void expire() override { connection_.figures_timed_out(); }

   private:
    Connection& connection_;
  };
  // The local answer whose figures are being summed.
  using FiguresAnswer =
      std::variant<std::monostate, core::StreamDetails, std::vector<core::StreamInfo>,
                   core::TopicDetails, std::vector<core::TopicInfo>>;
  class ForwardWait final : public io::Timer {
   public:
    explicit ForwardWait(Connection& connection) : connection_(connection) {}
    void expire() override { connection_.forward_wait_over(); }

   private:
    Connection& connection_;
  };

  // Completions and callbacks: the ring's (recv, send) and the broker's (op, auto-commit).
  void recv_complete(int32_t result, uint32_t flags);
  void send_done(Result<uint64_t> result) override;
  void op_done();
  void commit_done();
  void leave_done();
  void user_done();

  // The only way the phase changes (see Phase).
  void enter(Phase next);
  void begin_login_deadline();
  void end_login_deadline();
  void login_deadline_passed();
  bool login_overdue() const;
  void begin_heartbeat();
  void heard();
  void heartbeat_due();
  void logged_out();
  bool authenticated() const { return user_id_ != UINT32_MAX; }
  // closing or dropping: no new request is read.
  bool ending() const {
    return phase_ == Phase::closing || phase_ == Phase::dropping || phase_ == Phase::closed;
  }
  // Arms, pauses (hang-up poll) or stops the receive as the phase and read-ahead require.
  void update_receive();
  void arm_recv();
  void stop_recv();
  void arm_hangup();
  void stop_hangup();
  void hangup_complete(int32_t result);
  void received(std::span<const std::byte> bytes);
  // TLS (connection_tls.cc): ciphertext from the recv, decrypted into received(); output of
  // the session's own (the handshake's answers) written while no response is; a response
  // encrypted into tls_out_ and sent from there.
  void received_tls(std::span<const std::byte> ciphertext);
  void flush_tls();
  void tls_flushed();
  void send_tls(size_t parts_count);
  void next_request();
  void start_request(uint32_t code, std::span<const std::byte> payload);
  void finish_request();
  void poll_sent();
  void store_polled_offset();
  // Closes once nothing is in flight: closing answers what is in flight first, dropping
  // cancels it (the peer is gone).
  void begin_close() { end_as(Phase::closing); }
  void drop() { end_as(Phase::dropping); }
  void end_as(Phase next);
  void cancel_in_flight();
  void close_if_idle();
  // Migration (docs/architecture.md §6): decided by the first successful send or poll that
  // names one partition, carried out between requests once nothing is in flight.
  void may_decide_migration(bool names_one_partition);
  void decide_migration();
  void begin_migration();
  void migrate_if_ready();

  // Cluster mode (connection_forward.cc): the partition a send, a one-partition poll or an
  // offset request acts on, by ids (a balanced or keyed send is resolved here and rewritten to
  // name its partition); nullopt: served here as on one node (a group poll, a name that does
  // not resolve: the local path answers it).
  std::optional<core::PartitionKey> routed_partition(protocol::SendMessagesRequest& request);
  std::optional<core::PartitionKey> routed_partition(protocol::PollMessagesRequest& request);
  std::optional<core::PartitionKey> routed_partition(protocol::StoreConsumerOffsetRequest& request);
  std::optional<core::PartitionKey> routed_partition(protocol::GetConsumerOffsetRequest& request);
  std::optional<core::PartitionKey> routed_partition(
      protocol::DeleteConsumerOffsetRequest& request);
  // A notification names one partition, or is served here (its partitions may be anywhere).
  std::optional<core::PartitionKey> routed_partition(protocol::WaitForMessagesRequest& request);
  std::optional<core::PartitionKey> routed_partition(protocol::WaitForLagRequest& request);
  std::optional<core::PartitionKey> routed_partition(protocol::WaitForConditionRequest& request);
  // True: forwarded to the partition's owner or answered (ok); false: serve it here. Errors:
  // shard_communication_error (11001) when the owner is not live or nothing is assigned.
  template <typename Request>
  Result<bool> route(Request& request);
  template <typename Request>
  Status forward(const Request& request, uint32_t node, const core::PartitionKey& key);
  void forward_done(Result<std::span<const std::byte>> response);
  void forward_wait_over();
  // A member's poll whose legs all failed (their links): answered empty at its deadline, as one
  // that found nothing.
  void wait_unavailable(Instant deadline);
  // Re-routing (docs/cluster.md §Moves): the routed request was not run by `refused_by` (it does
  // not host the partition; 0: no live owner was found), decided by cluster::reroute(): routed
  // again now, or it waits for a view (and, with `retry`, for a retry tick, since the view may
  // already name `refused_by` while that node's own view lags), or 11001. A poll or
  // notification never outlives its first deadline and never answers an error.
  void not_run(uint32_t refused_by, bool retry);
  void await_view(uint32_t refused_by, bool retry);
  // Runs the request's frame again (decode, authorize, route) with what is left of its wait.
  void reroute();
  // The first routing's deadline of a poll or notification; routed again, the request's wait is
  // set to what is left of it (as a forwarded request's is at the owner, link_hub.cc).
  template <typename Request>
  void keep_deadline(Request& request);
  // The local operation of a routed request found its partition not hosted here (the broker's
  // 11001, Broker::host).
  bool refused_here() const;
  // How long a request may wait (polls, notifications), clamped to max_wait; nullopt: it never
  // waits.
  template <typename Request>
  std::optional<Duration> request_wait(const Request& request);
  // The empty answer of the waiting request in code_ (a timeout's).
  void respond_empty_wait();
  void cancel_forward();

  // A group member's poll in cluster mode (connection_group.cc; docs/cluster.md §Consumer
  // groups): served here when every partition of the member's assignment is this node's;
  // without a wait (or with one partition) the round robin's partition alone, routed as a
  // one-partition poll; with a wait, one leg per partition to its owner (this node too, over
  // its own link), the first data answers, the other legs are cancelled, and the auto-commit is
  // stored at the winner's owner once the answer is written.
  Result<bool> route_group_poll(protocol::PollMessagesRequest& request);
  // A notification without a partition in cluster mode (docs/cluster.md §Notifications over
  // several nodes): served here when every partition it watches is this node's; else one leg
  // per watched partition, the first that holds answers. Over a total (WaitForLag, a totals()
  // condition) with partitions on several nodes: FeatureUnavailable (5).
  template <typename Request>
  Result<bool> route_watch(Request& request);
  // The partitions a notification without a partition watches into assigned_: a joined
  // member's assignment, else the topic's. False when the local path should answer.
  template <typename Request>
  bool watched_partitions(const Request& request, const core::NameOrId& stream,
                          const core::NameOrId& topic);
  Result<bool> over_several_nodes();
  bool all_assigned_here(const core::Broker::ResolvedIds& ids) const;
  template <typename Request>
  void start_legs(const Request& request, const core::Broker::ResolvedIds& ids, Instant deadline);
  GroupLeg& leg_at(size_t index);
  void leg_done(GroupLeg& leg, Result<std::span<const std::byte>> response);
  void legs_won(GroupLeg& leg, std::span<const std::byte> response, uint64_t last_offset);
  void legs_over();
  void cancel_legs();
  // After the winner's answer is written: its offset, stored at its owner.
  void commit_leg();

  // Cluster mode: the figures of the partitions `answer` covers (within `scope`) are gathered
  // from their owners, one request per owner node, for at most figures_timeout, then summed
  // into `answer`, which is sent. One node: `answer` is sent as it is.
  void respond_figures(FiguresAnswer answer, const cluster::FiguresScope& scope);
  void start_figures();
  FiguresLeg& figures_leg_at(size_t index);
  void figures_leg_done(FiguresLeg& leg, Result<std::span<const std::byte>> response);
  void figures_timed_out();
  void finish_figures();
  void cancel_figures();
  void respond_figures_answer();
  static constexpr Duration figures_timeout = std::chrono::seconds(1);

  // The rows of commands.inc (connection_commands.cc): code → decode → authorize → handler.
  // Ok: a response is under way. An error: answer it.
  Status dispatch(uint32_t code, std::span<const std::byte> payload);
  template <typename Request, typename Handler>
  Status run(std::span<const std::byte> payload, Handler handler);
  // A command of the protocol without a row (snapshots): decoded, then FeatureUnavailable.
  Status run_unlisted(uint32_t code, std::span<const std::byte> payload);
  // After the decode: logs its failure or trailing bytes; a user deleted since the login is
  // logged out (unauthenticated).
  Status decoded(uint32_t code, const Status& status, size_t trailing_bytes);
  // An op or op_result row: fills the operation with the row's handler and submits it.
  template <typename Operation, typename Request>
  Status start_op(const Request& request, Status (Connection::*fill)(const Request&, Operation&),
                  OpSlot::Answer answer);

  // The handlers, one per row (connection_requests.cc, connection_admin.cc,
  // connection_users.cc); command_table.h says what each kind declares.
#define HARK_COMMAND(name, request, kind, operation, access, applied) \
  HARK_COMMAND_DECLARE_##kind(name, request, operation)
#include "hark/server/commands.inc"
#undef HARK_COMMAND
  void respond_client_details(const core::GetMemberGroups& op);

  // Hands `request` to the AuthPool (connection_users.cc); user_done() answers. Errors:
  // feature_unavailable when the pool's queue is full.
  [[nodiscard]] Status submit_user_job(UserJob::Request request);
  void logged_in(uint32_t user_id);
  void login_failed();

  // Authentication and permissions (connection_users.cc). The logged-in user as the latest
  // users snapshot knows them, or null (a user deleted meanwhile is logged out).
  const UserRecord* current_user();
  // ok if the logged-in user may run `request` (Iggy 0.8.0's checks, permissioner.h);
  // resolves the stream and topic it names on this shard and, when a permission depended
  // on them, names them by id from then on, so the operation acts on what was checked.
  template <typename Request>
  Status authorize_request(Request& request);
  Status authorize_target(protocol::Command command, protocol::Identifier* stream,
                          protocol::Identifier* topic);
  void submit(core::Operation& op);

  // Responses (connection_requests.cc).
  void respond_to_op();
  void respond_ok();
  void respond_error(Error error);
  // Encodes `response` into out_ and sends it (or the error if it cannot be encoded).
  template <typename Response>
  void respond_encoded(const Response& response) {
    out_.clear();
    respond_out(protocol::encode_response(response, out_));
  }
  void respond_out(const Status& encoded);
  void respond_poll(const core::PollResult& result);
  void send(size_t parts_count);

  ShardServer& shard_;
  int fd_;
  const uint32_t client_id_;
  std::string peer_;
  Phase phase_;
  RequestState request_ = RequestState::idle;
  MigrationState migration_;
  ShardId migrate_to_{};  // While migration_ is moving.
  Receive receive_{*this};
  Hangup hangup_{*this};
  LoginDeadline login_deadline_{*this};
  HeartbeatCheck heartbeat_{*this};
  Instant heard_at_{};  // The client's last bytes, or our last answer (heartbeat.enabled).
  io::Sender sender_;
  RequestBuffer requests_;
  OpSlot op_;
  AutoCommit commit_{*this};
  LeaveGroups leave_{*this};
  UserJob user_job_{*this};
  ForwardSlot forward_{*this};
  ForwardWait forward_wait_{*this};
  uint32_t forward_node_ = 0;       // Where forward_ went.
  uint32_t forward_partition_ = 0;  // Its partition (an empty poll answer names it).
  // The routing of the request being answered (cluster mode; connection_forward.cc).
  struct Routing {
    bool active = false;              // route() named one partition (or a member's legs).
    std::optional<Instant> deadline;  // A poll's or notification's, from its first routing.
    core::PartitionKey key;           // The partition it was routed for (a leg's, refused).
    uint32_t refused_by = 0;          // While waiting for a view: who did not run it.
    uint32_t reroutes = 0;            // Times it was routed again.
    Duration retry{};                 // The last retry tick's delay (doubles).
    bool ticking = false;             // forward_wait_ is a retry tick, not the deadline.
    bool again = false;               // Routed again: its wait is what is left.
  };
  Routing routing_;
  std::span<const std::byte> payload_;  // The request frame's (pinned until finish_request).
  // A member's poll or a notification spread over owners (connection_group.cc); capacities
  // reused.
  std::vector<std::unique_ptr<GroupLeg>> legs_;
  std::vector<uint32_t> assigned_;          // The partitions it spreads over (a member's: the
                                            // round robin's first).
  protocol::PollMessagesRequest leg_poll_;  // The member's poll, as each leg sends it.
  uint32_t group_cursor_ = 0;               // Round robin over the assignment, one step a poll.
  size_t legs_out_ = 0;                     // Legs still at their owners.
  size_t legs_empty_ = 0;                   // Legs answered without messages.
  bool legs_failed_ = false;                // A leg's link failed it.
  Instant legs_deadline_{};                 // The member's poll's, as every leg carries it.
  bool leg_commit_due_ = false;             // The winner's offset is stored once it is written.
  bool leg_committing_ = false;             // legs_[0] carries that store.
  uint32_t leg_commit_node_ = 0;
  uint32_t leg_commit_partition_ = 0;
  uint64_t leg_commit_offset_ = 0;
  // GetStream(s)/GetTopic(s) in cluster mode (connection_figures.cc); capacities reused.
  std::vector<std::unique_ptr<FiguresLeg>> figures_legs_;
  FiguresWait figures_wait_{*this};
  FiguresAnswer figures_answer_;
  cluster::FiguresScope figures_scope_;
  size_t figures_out_ = 0;                                     // Legs still at their owners.
  std::map<core::PartitionKey, core::PartitionInfo> figures_;  // Every partition in scope.
  std::vector<core::PartitionFigures> figures_read_;
  Ref<const UserTable> users_;     // The users snapshot last looked at.
  uint32_t user_id_ = UINT32_MAX;  // Logged in as; UINT32_MAX: not logged in.
  // get_me / get_client / get_clients: the clients to answer about, while their groups are
  // looked up (control plane).
  std::vector<ClientInfo> clients_;

  std::array<std::byte, protocol::response_header_size> header_{};
  std::array<std::byte, protocol::response_header_size + protocol::poll_header_size> poll_prefix_{};
  std::array<std::span<const std::byte>, 2> parts_{};
  protocol::Bytes out_;              // Encoded control-plane responses; capacity reused.
  std::unique_ptr<TlsSession> tls_;  // Null: plain TCP, responses sent from parts_ unchanged.
  protocol::Bytes tls_out_;          // TLS records being written; capacity reused.
  size_t tls_waiting_parts_ = 0;     // A response's parts_ waiting for a TLS flush to finish.
  bool tls_flushing_ = false;        // The Sender writes the session's own output.

  uint32_t code_ = 0;            // Of the request being answered.
  bool auto_commit_ = false;     // The current request is a poll with auto_commit.
  bool wait_cancelled_ = false;  // The current poll or notify was cancelled (or must not be).
  // What may still call back, one flag per callback the object must outlive (busy()): these
  // overlap freely (a recv stays armed while an operation runs; an auto-commit may still run
  // when the next request's operation starts), so they are not phases.
  bool recv_armed_ = false;      // Until the multishot's last CQE.
  bool recv_cancelled_ = false;  // Its cancel is under way.
  bool hangup_armed_ = false;
  bool hangup_cancelled_ = false;
  bool op_busy_ = false;         // Submitted, done() not yet called.
  bool commit_busy_ = false;     // The AutoCommit is submitted.
  bool commit_waiting_ = false;  // Another auto-commit is to follow it (implies commit_busy_).
  bool leave_busy_ = false;      // The LeaveGroups is submitted.
  bool user_busy_ = false;       // The UserJob is with the AuthPool.
  bool forward_busy_ = false;    // forward_ is at another node, or forward_wait_ runs.
  bool figures_busy_ = false;    // figures_legs_ are at their owners, figures_wait_ runs.
  // Facts about the client, not phases.
  bool joined_group_ = false;  // Asked to join a group: leave every group on close.
  bool registered_ = false;    // Listed in the ClientRegistry.
};

template <typename Op>
void ConnectionOp<Op>::done() {
  connection_.op_done();
}

inline void AutoCommit::done() { connection_.commit_done(); }

inline void LeaveGroups::done() { connection_.leave_done(); }

template <typename Request>
Status Connection::authorize_request(Request& request) {
  protocol::Identifier* stream = nullptr;
  protocol::Identifier* topic = nullptr;
  if constexpr (requires { request.stream_id; }) {
    if constexpr (std::is_same_v<decltype(request.stream_id), protocol::Identifier>) {
      stream = &request.stream_id;
    }
  }
  if constexpr (requires { request.topic_id; }) {
    if constexpr (std::is_same_v<decltype(request.topic_id), protocol::Identifier>) {
      topic = &request.topic_id;
    }
  }
  return authorize_target(Request::code, stream, topic);
}

}  // namespace hark::server
