// Connection in cluster mode (docs/cluster.md §Forwarding): a send, a one-partition poll or
// notification, or an offset request for a partition another live node owns goes to that node over
// this shard's link to it (node_link.h) and its answer comes back to the client as the owner wrote
// it. The permissions were checked here (connection_commands.cc runs route() after the
// authorization), and the owner runs the request as this client's user. A partition without a live
// owner is answered with shard_communication_error (11001), a retryable error outside the codes
// Iggy's SDKs re-send on their own; a poll or notification on one waits to its deadline and is
// answered empty.
#include <algorithm>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/poll_response.h"
#include "hark/server/classic_wait.h"
#include "hark/server/connection.h"
#include "hark/server/dispatch.h"
#include "hark/server/shard_server.h"

namespace hark::server {
namespace {

// A refused request that waits retries on a tick too, from this delay doubling up to the
// largest: its view may already name the node that refused it, whose own view lags.
constexpr Duration retry_min = std::chrono::milliseconds(2);
constexpr Duration retry_max = std::chrono::milliseconds(256);

// The partition by ids, if this node's catalog has it: a name, topic or partition it does not
// know is left to the local path, which answers it with Iggy's not-found code.
std::optional<core::PartitionKey> key_of(const core::Broker& broker,
                                         const protocol::Identifier& stream_id,
                                         const protocol::Identifier& topic_id, uint32_t partition) {
  const Result<core::NameOrId> stream = name_or_id(stream_id);
  const Result<core::NameOrId> topic = name_or_id(topic_id);
  if (!stream.ok() || !topic.ok()) return std::nullopt;
  const Result<core::Broker::ResolvedIds> ids = broker.resolve(*stream, &*topic);
  const core::Partitioning named{.kind = core::Partitioning::Kind::partition, .value = partition};
  if (!ids.ok() || !broker.pick_partition(*stream, *topic, named).ok()) return std::nullopt;
  return core::PartitionKey{.stream = StreamId(ids->stream),
                            .topic = TopicId(*ids->topic),
                            .partition = PartitionId(partition)};
}

// Offsets name a partition, or partition 0 for a plain consumer (operations.h); a group's
// offset without a partition is left to the local path.
template <typename Request>
std::optional<uint32_t> offset_partition(const Request& request) {
  if (request.partition_id) return request.partition_id;
  if (request.consumer.kind == protocol::ConsumerKind::consumer) return 0u;
  return std::nullopt;
}

// A notification names its partition; one that watches several (all of a consumer's, a
// member's assignment) is route_watch's (connection_group.cc).
template <typename Request>
std::optional<core::PartitionKey> notify_partition(const core::Broker& broker,
                                                   const Request& request) {
  if (!request.partition_id) return std::nullopt;
  return key_of(broker, request.stream_id, request.topic_id, *request.partition_id);
}

// Writes: their first answer is kept at the owner, so a re-send never applies them twice.
template <typename Request>
constexpr bool deduplicated = std::is_same_v<Request, protocol::SendMessagesRequest> ||
                              std::is_same_v<Request, protocol::StoreConsumerOffsetRequest> ||
                              std::is_same_v<Request, protocol::DeleteConsumerOffsetRequest>;

template <typename Request>
constexpr bool notification = std::is_same_v<Request, protocol::WaitForMessagesRequest> ||
                              std::is_same_v<Request, protocol::WaitForLagRequest> ||
                              std::is_same_v<Request, protocol::WaitForConditionRequest>;

}  // namespace

std::optional<core::PartitionKey> Connection::routed_partition(
    protocol::SendMessagesRequest& request) {
  uint32_t partition = 0;
  if (request.partitioning.kind() == protocol::PartitioningKind::partition_id) {
    partition = request.partitioning.partition_id();
  } else {
    // Balanced and keyed sends are resolved here, from this node's catalog, and sent whole.
    const Result<core::NameOrId> stream = name_or_id(request.stream_id);
    const Result<core::NameOrId> topic = name_or_id(request.topic_id);
    if (!stream.ok() || !topic.ok()) return std::nullopt;
    const Result<uint32_t> picked =
        shard_.broker().pick_partition(*stream, *topic, partitioning(request.partitioning));
    if (!picked.ok()) return std::nullopt;
    partition = *picked;
    request.partitioning = protocol::Partitioning::partition(partition);
  }
  return key_of(shard_.broker(), request.stream_id, request.topic_id, partition);
}

std::optional<core::PartitionKey> Connection::routed_partition(
    protocol::PollMessagesRequest& request) {
  // A member's poll without a partition is route_group_poll's (connection_group.cc).
  if (!request.partition_id) return std::nullopt;
  return key_of(shard_.broker(), request.stream_id, request.topic_id, *request.partition_id);
}

std::optional<core::PartitionKey> Connection::routed_partition(
    protocol::StoreConsumerOffsetRequest& request) {
  const std::optional<uint32_t> partition = offset_partition(request);
  if (!partition) return std::nullopt;
  return key_of(shard_.broker(), request.stream_id, request.topic_id, *partition);
}

std::optional<core::PartitionKey> Connection::routed_partition(
    protocol::GetConsumerOffsetRequest& request) {
  const std::optional<uint32_t> partition = offset_partition(request);
  if (!partition) return std::nullopt;
  return key_of(shard_.broker(), request.stream_id, request.topic_id, *partition);
}

std::optional<core::PartitionKey> Connection::routed_partition(
    protocol::DeleteConsumerOffsetRequest& request) {
  const std::optional<uint32_t> partition = offset_partition(request);
  if (!partition) return std::nullopt;
  return key_of(shard_.broker(), request.stream_id, request.topic_id, *partition);
}

std::optional<core::PartitionKey> Connection::routed_partition(
    protocol::WaitForMessagesRequest& request) {
  return notify_partition(shard_.broker(), request);
}

std::optional<core::PartitionKey> Connection::routed_partition(
    protocol::WaitForLagRequest& request) {
  return notify_partition(shard_.broker(), request);
}

std::optional<core::PartitionKey> Connection::routed_partition(
    protocol::WaitForConditionRequest& request) {
  return notify_partition(shard_.broker(), request);
}

template <typename Request>
Result<bool> Connection::route(Request& request) {
  keep_deadline(request);
  if constexpr (std::is_same_v<Request, protocol::PollMessagesRequest>) {
    if (request.consumer.kind == protocol::ConsumerKind::group && !request.partition_id) {
      return route_group_poll(request);
    }
  } else if constexpr (notification<Request>) {
    if (!request.partition_id) return route_watch(request);
  }
  const std::optional<core::PartitionKey> key = routed_partition(request);
  if (!key) return false;
  routing_.active = true;
  routing_.key = *key;
  forward_partition_ = key->partition.value();
  const cluster::ClusterView& view = *shard_.cluster_view();
  const cluster::PartitionOwner owner = view.owner(*key);
  if (owner.kind == cluster::PartitionOwner::Kind::node) {
    if (owner.assignment.node == view.self) return false;
    HARK_TRY(forward(request, owner.assignment.node, *key));
    return true;
  }
  shard_.links()->shared().unavailable.fetch_add(1, std::memory_order_relaxed);
  if (!routing_.deadline) return Error::shard_communication_error;
  // A poll or notification waits for an owner, to its deadline.
  forward_busy_ = true;
  await_view(0, false);
  return true;
}

template <typename Request>
void Connection::keep_deadline(Request& request) {
  if constexpr (requires { request.wait_timeout_us; }) {
    const Instant now = shard_.monotonic_now();
    if (!routing_.again) {
      routing_.deadline = now + *request_wait(request);
      return;
    }
    const Duration left = *routing_.deadline > now ? *routing_.deadline - now : Duration(0);
    request.wait_timeout_us =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(left).count());
  }
}

template <typename Request>
std::optional<Duration> Connection::request_wait(const Request& request) {
  Duration wait{};
  if constexpr (std::is_same_v<Request, protocol::PollMessagesRequest>) {
    wait = request.wait_timeout_us
               ? wait_of(*request.wait_timeout_us)
               : classic_poll_wait(shard_.options(), shard_.broker(), current_user(), request);
  } else if constexpr (notification<Request>) {
    wait = wait_of(request.wait_timeout_us);
  } else {
    return std::nullopt;
  }
  return std::min(wait, shard_.broker().options().max_wait);
}

template <typename Request>
Status Connection::forward(const Request& request, uint32_t node, const core::PartitionKey& key) {
  HARK_ASSERT(!forward_busy_);
  forward_.payload.clear();
  HARK_TRY(protocol::encode_payload(request, forward_.payload));
  forward_.header = {
      .user = user_id_,
      .client = client_id_,
      .code = code_,
      .flags = deduplicated<Request> ? cluster::LinkRequest::deduplicated : uint8_t{0}};
  forward_.deadline = routing_.deadline;  // The first routing's: routed again, never extended.
  forward_node_ = node;
  forward_partition_ = key.partition.value();
  forward_busy_ = true;  // Before submit(): a link that cannot reach the node fails it at once.
  shard_.links()->link_to(node).submit(forward_);
  return ok_status();
}

void Connection::forward_done(Result<std::span<const std::byte>> response) {
  HARK_ASSERT(forward_busy_);
  forward_busy_ = false;
  if (phase_ == Phase::dropping) {
    close_if_idle();
    return;
  }
  if (response.ok() && cluster::not_hosted(*response)) {
    not_run(forward_node_, true);  // Nothing ran there: its partition moved.
    return;
  }
  if (response.ok()) {
    out_.assign(response->begin(), response->end());
    parts_[0] = out_;
    send(1);
    return;
  }
  // The link failed it. A write may have run at the owner, so it is never sent elsewhere: the
  // client gets 11001. A poll or notification waits for a view that names another owner, or
  // its deadline.
  if (!routing_.deadline) {
    respond_error(response.error());
    return;
  }
  not_run(forward_node_, false);
}

void Connection::not_run(uint32_t refused_by, bool retry) {
  const bool waits = routing_.deadline.has_value();
  const cluster::Reroute decision =
      shard_.stopping() ? (waits ? cluster::Reroute::wait : cluster::Reroute::give_up)
                        : cluster::reroute(*shard_.cluster_view(), routing_.key, refused_by, waits,
                                           routing_.reroutes);
  switch (decision) {
    case cluster::Reroute::now: reroute(); return;  // Past its deadline too: it asks at once.
    case cluster::Reroute::wait:
      if (shard_.stopping() || shard_.monotonic_now() >= *routing_.deadline) {
        respond_empty_wait();
        return;
      }
      forward_busy_ = true;
      await_view(refused_by, retry);
      return;
    case cluster::Reroute::give_up:
      HARK_LOG_INFO(
          "connection %s: %s for partition %u/%u/%u not run: node %u does not host it "
          "and the view names no other owner; answered 11001 (retryable)",
          peer_, protocol::command_name(code_), routing_.key.stream.value(),
          routing_.key.topic.value(), routing_.key.partition.value(), refused_by);
      respond_error(Error::shard_communication_error);
      return;
  }
}

void Connection::await_view(uint32_t refused_by, bool retry) {
  HARK_ASSERT(forward_busy_ && routing_.deadline);
  routing_.refused_by = refused_by;
  shard_.await_view(*this);
  Instant at = *routing_.deadline;
  routing_.ticking = false;
  if (retry) {
    routing_.retry = std::clamp(routing_.retry * 2, retry_min, retry_max);
    const Instant tick = shard_.monotonic_now() + routing_.retry;
    routing_.ticking = tick < at;
    at = std::min(at, tick);
  }
  shard_.reactor().timers().add(forward_wait_, at);
}

void Connection::view_changed() {
  HARK_ASSERT(forward_busy_ && routing_.deadline);
  if (shard_.stopping() ||
      cluster::reroute(*shard_.cluster_view(), routing_.key, routing_.refused_by, true,
                       routing_.reroutes) != cluster::Reroute::now) {
    shard_.await_view(*this);  // Nobody new: wait on (the timer still runs).
    return;
  }
  shard_.reactor().timers().cancel(forward_wait_);
  forward_busy_ = false;
  reroute();
}

void Connection::reroute() {
  HARK_ASSERT(!forward_busy_ && !op_busy_);
  shard_.links()->shared().rerouted.fetch_add(1, std::memory_order_relaxed);
  routing_.reroutes++;
  routing_.again = true;
  op_.reset();
  leg_commit_due_ = false;
  const Status status = dispatch(code_, payload_);
  if (!status.ok()) respond_error(status.error());
}

bool Connection::refused_here() const {
  return routing_.active && !op_.status().ok() &&
         op_.status().error() == Error::shard_communication_error &&
         shard_.cluster_view() != nullptr;
}

void Connection::wait_unavailable(Instant deadline) {
  forward_busy_ = true;
  routing_.ticking = false;
  shard_.reactor().timers().add(forward_wait_, deadline);
}

void Connection::forward_wait_over() {
  forward_busy_ = false;
  if (static_cast<ListHook<ViewWaitTag>&>(*this).linked()) shard_.leave_view_wait(*this);
  if (phase_ == Phase::dropping) {
    close_if_idle();
    return;
  }
  if (std::exchange(routing_.ticking, false) && !shard_.stopping()) {
    reroute();  // A retry tick: the view may name the same node, whose own view caught up.
    return;
  }
  respond_empty_wait();
}

void Connection::respond_empty_wait() {
  switch (static_cast<protocol::Command>(code_)) {
    case protocol::Command::wait_for_messages:
      respond_encoded(protocol::WaitForMessagesResponse{});
      return;
    case protocol::Command::wait_for_lag: respond_ok(); return;  // As a timed-out lag watch.
    case protocol::Command::wait_for_condition:
      respond_encoded(protocol::WaitForConditionResponse{});
      return;
    default: {
      const protocol::PollResponseHeader empty{.partition_id = forward_partition_};
      poll_prefix_ = protocol::poll_response_prefix(empty, 0);
      parts_[0] = poll_prefix_;
      send(1);
    }
  }
}

void Connection::cancel_forward() {
  if (!forward_busy_) return;
  forward_busy_ = false;
  if (static_cast<ListHook<ViewWaitTag>&>(*this).linked()) shard_.leave_view_wait(*this);
  if (forward_wait_.armed()) {
    shard_.reactor().timers().cancel(forward_wait_);
  } else if (forward_.linked()) {
    // A poll parked at the owner is cancelled there.
    shard_.links()->link_to(forward_node_).cancel(forward_);
  }
  cancel_legs();  // A member's poll: at every owner.
}

template Result<bool> Connection::route(protocol::SendMessagesRequest&);
template Result<bool> Connection::route(protocol::PollMessagesRequest&);
template Result<bool> Connection::route(protocol::StoreConsumerOffsetRequest&);
template Result<bool> Connection::route(protocol::GetConsumerOffsetRequest&);
template Result<bool> Connection::route(protocol::DeleteConsumerOffsetRequest&);
template Result<bool> Connection::route(protocol::WaitForMessagesRequest&);
template Result<bool> Connection::route(protocol::WaitForLagRequest&);
template Result<bool> Connection::route(protocol::WaitForConditionRequest&);
template std::optional<Duration> Connection::request_wait(const protocol::PollMessagesRequest&);
template std::optional<Duration> Connection::request_wait(const protocol::WaitForMessagesRequest&);
template std::optional<Duration> Connection::request_wait(const protocol::WaitForLagRequest&);
template std::optional<Duration> Connection::request_wait(const protocol::WaitForConditionRequest&);

}  // namespace hark::server
