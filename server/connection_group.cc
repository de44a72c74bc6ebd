// Requests spread over the owners of several partitions in cluster mode, each part a *leg*
// parked at one owner: a consumer-group member's poll and a notification without a partition
// (docs/cluster.md §Consumer groups, §Notifications over several nodes). Membership is journaled
// in etcd with the metadata, so every node deals the group's partitions to the same members and
// the entry node reads the member's assignment (or the topic's partitions) from its own catalog.
// The request's Wait stays here: each leg is a one-partition request parked at its partition's
// owner with what is left of the wait (never extended), a poll's without auto-commit; the first
// leg that brings something answers the client and the other legs are cancelled at their
// owners. A poll's leg that brought messages too late is dropped unanswered and, since nothing
// committed its offset, those messages are polled again: no message is delivered twice or lost.
// The winner's offset is stored at its owner once the answer is written, as a local poll's
// auto-commit.
#include <algorithm>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/core/broker/condition.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/reader.h"
#include "hark/server/connection.h"
#include "hark/server/dispatch.h"
#include "hark/server/shard_server.h"

namespace hark::server {
namespace {

core::PartitionKey key_at(const core::Broker::ResolvedIds& ids, uint32_t partition) {
  return core::PartitionKey{.stream = StreamId(ids.stream),
                            .topic = TopicId(*ids.topic),
                            .partition = PartitionId(partition)};
}

// The status of an owner's Iggy response (UINT32_MAX if it is cut short).
uint32_t status_of(std::span<const std::byte> response) {
  return response.size() < 4 ? UINT32_MAX : protocol::load_u32(response, 0);
}

// What a leg's answer brought: the offset of a poll's last message, or 0 for a notification
// on whose partition the condition held; nullopt if it is an error or brought nothing.
std::optional<uint64_t> brought(uint32_t code, std::span<const std::byte> response) {
  if (response.size() < protocol::response_header_size || status_of(response) != 0) {
    return std::nullopt;
  }
  if (code != protocol::command_code(protocol::Command::poll_messages)) {
    // A notification's answer is a run of satisfied partitions, empty at its deadline.
    if (response.size() == protocol::response_header_size) return std::nullopt;
    return 0;
  }
  protocol::Reader reader(response.subspan(protocol::response_header_size));
  protocol::PollMessagesResponse polled;
  if (!protocol::decode(reader, polled).ok() || polled.messages.count() == 0) return std::nullopt;
  uint64_t last = 0;
  for (const protocol::MessageView message : polled.messages) last = message.offset();
  return last;
}

}  // namespace

Result<bool> Connection::route_group_poll(protocol::PollMessagesRequest& request) {
  const Result<core::NameOrId> stream = name_or_id(request.stream_id);
  const Result<core::NameOrId> topic = name_or_id(request.topic_id);
  const Result<core::NameOrId> group = name_or_id(request.consumer.id);
  if (!stream.ok() || !topic.ok() || !group.ok()) return false;
  const Result<core::Broker::ResolvedIds> ids = shard_.broker().resolve(*stream, &*topic);
  // Not found, not a member, no partitions: the local path answers as one node does.
  if (!ids.ok() ||
      !shard_.broker().member_partitions(*stream, *topic, *group, client_id_, assigned_).ok() ||
      assigned_.empty() || all_assigned_here(*ids)) {
    return false;
  }
  const size_t first = group_cursor_++ % assigned_.size();
  const Duration wait = *request_wait(request);
  if (wait == Duration(0) || assigned_.size() == 1) {
    // As Iggy 0.8.0: an immediate member poll reads the round robin's partition alone.
    request.partition_id = assigned_[first];
    return route(request);
  }
  std::rotate(assigned_.begin(), assigned_.begin() + static_cast<ptrdiff_t>(first),
              assigned_.end());
  start_legs(request, *ids, shard_.monotonic_now() + wait);
  return true;
}

template <typename Request>
Result<bool> Connection::route_watch(Request& request) {
  const Result<core::NameOrId> stream = name_or_id(request.stream_id);
  const Result<core::NameOrId> topic = name_or_id(request.topic_id);
  if (!stream.ok() || !topic.ok()) return false;
  const Result<core::Broker::ResolvedIds> ids = shard_.broker().resolve(*stream, &*topic);
  // Not found, an unknown condition, every partition here: the local path answers as one node.
  if (!ids.ok() || !watched_partitions(request, *stream, *topic) || assigned_.empty() ||
      all_assigned_here(*ids)) {
    return false;
  }
  if constexpr (std::is_same_v<Request, protocol::WaitForConditionRequest>) {
    const core::Condition* const condition = shard_.broker().find_condition(request.name);
    if (condition == nullptr) return false;
    if (condition->totals()) return over_several_nodes();
  } else if constexpr (std::is_same_v<Request, protocol::WaitForLagRequest>) {
    return over_several_nodes();
  }
  start_legs(request, *ids, shard_.monotonic_now() + *request_wait(request));
  return true;
}

template <typename Request>
bool Connection::watched_partitions(const Request& request, const core::NameOrId& stream,
                                    const core::NameOrId& topic) {
  if (request.consumer.kind == protocol::ConsumerKind::group) {
    const Result<core::NameOrId> group = name_or_id(request.consumer.id);
    if (!group.ok()) return false;
    const Status member =
        shard_.broker().member_partitions(stream, topic, *group, client_id_, assigned_);
    if (member.ok()) return true;
    // A watcher that has not joined watches the whole topic, as on one node.
    if (member.error() != Error::consumer_group_member_not_found) return false;
  }
  return shard_.broker().topic_partitions(stream, topic, assigned_).ok();
}

Result<bool> Connection::over_several_nodes() {
  // A total (the lag summed over partitions) would need every owner's measure at each change:
  // not built; a watch naming one partition is served wherever that partition lives.
  HARK_LOG_INFO("connection %s: %s over partitions of several nodes refused (5): name a partition",
                peer_, protocol::command_name(code_));
  return Error::feature_unavailable;
}

bool Connection::all_assigned_here(const core::Broker::ResolvedIds& ids) const {
  const cluster::ClusterView& view = *shard_.cluster_view();
  for (const uint32_t partition : assigned_) {
    const cluster::PartitionOwner owner = view.owner(key_at(ids, partition));
    if (owner.kind != cluster::PartitionOwner::Kind::node || owner.assignment.node != view.self) {
      return false;
    }
  }
  return true;
}

Connection::GroupLeg& Connection::leg_at(size_t index) {
  while (legs_.size() <= index) legs_.push_back(std::make_unique<GroupLeg>(*this));
  return *legs_[index];
}

template <typename Request>
void Connection::start_legs(const Request& request, const core::Broker::ResolvedIds& ids,
                            Instant deadline) {
  const cluster::ClusterView& view = *shard_.cluster_view();
  Request each = request;
  if constexpr (std::is_same_v<Request, protocol::PollMessagesRequest>) {
    each.auto_commit = false;  // Stored here for the winner alone (commit_leg).
    leg_poll_ = each;
    leg_commit_due_ = request.auto_commit;
  } else {
    leg_commit_due_ = false;  // A notification reads nothing.
  }
  legs_empty_ = 0;
  legs_failed_ = false;
  legs_deadline_ = deadline;
  forward_partition_ = assigned_.front();
  size_t started = 0;
  for (const uint32_t partition : assigned_) {
    const cluster::PartitionOwner owner = view.owner(key_at(ids, partition));
    if (owner.kind != cluster::PartitionOwner::Kind::node) {
      // No live owner: this partition waits out the deadline (nothing can arrive on it).
      shard_.links()->shared().unavailable.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    GroupLeg& leg = leg_at(started);
    each.partition_id = partition;
    leg.payload.clear();
    if (!protocol::encode_payload(each, leg.payload).ok()) continue;
    leg.header = {.user = user_id_, .client = client_id_, .code = code_, .flags = 0};
    leg.deadline = deadline;
    leg.node = owner.assignment.node;
    leg.partition = partition;
    leg.key = key_at(ids, partition);
    started++;
  }
  if (started == 0) {
    wait_unavailable(deadline);
    return;
  }
  legs_out_ = started;
  forward_busy_ = true;  // Before submit(): a link that cannot reach its node fails at once.
  for (size_t i = 0; i < started; i++) shard_.links()->link_to(legs_[i]->node).submit(*legs_[i]);
}

void Connection::leg_done(GroupLeg& leg, Result<std::span<const std::byte>> response) {
  HARK_ASSERT(legs_out_ > 0);
  legs_out_--;
  if (leg_committing_) {
    leg_committing_ = false;
    forward_busy_ = false;
    if (!response.ok() || status_of(*response) != 0) {
      HARK_LOG_WARN("connection %s: auto-commit of offset %u at node %u failed", peer_,
                    leg_commit_offset_, leg_commit_node_);
    }
    if (phase_ == Phase::dropping) {
      close_if_idle();
    } else {
      finish_request();
    }
    return;
  }
  if (response.ok() && cluster::not_hosted(*response) && phase_ != Phase::dropping) {
    // Its partition moved away: the member's poll is routed again whole, from the newest view
    // and with what is left of its wait (connection_forward.cc), its other legs cancelled.
    routing_.key = leg.key;
    const uint32_t refused_by = leg.node;
    cancel_legs();
    not_run(refused_by, true);
    return;
  }
  const std::optional<uint64_t> last = response.ok() ? brought(code_, *response) : std::nullopt;
  if (last && phase_ != Phase::dropping) {
    legs_won(leg, *response, *last);
    return;
  }
  if (response.ok()) {
    legs_empty_++;
  } else {
    legs_failed_ = true;
  }
  if (legs_out_ == 0) legs_over();
}

void Connection::legs_won(GroupLeg& leg, std::span<const std::byte> response,
                          uint64_t last_offset) {
  leg_commit_node_ = leg.node;
  leg_commit_partition_ = leg.partition;
  leg_commit_offset_ = last_offset;
  cancel_legs();
  out_.assign(response.begin(), response.end());
  parts_[0] = out_;
  send(1);
}

void Connection::legs_over() {
  forward_busy_ = false;
  leg_commit_due_ = false;
  if (phase_ == Phase::dropping) {
    close_if_idle();
    return;
  }
  // No leg brought messages. A poll is never an error: when every leg's link failed it waits out
  // its deadline here, as on a partition without a live owner; else it is answered empty.
  if (legs_empty_ == 0 && legs_failed_ && !shard_.stopping()) {
    wait_unavailable(legs_deadline_);
    return;
  }
  respond_empty_wait();
}

void Connection::cancel_legs() {
  for (size_t i = 0; i < legs_.size(); i++) {
    GroupLeg& leg = *legs_[i];
    if (leg.linked()) shard_.links()->link_to(leg.node).cancel(leg);
  }
  legs_out_ = 0;
  leg_committing_ = false;
  forward_busy_ = false;
}

void Connection::commit_leg() {
  HARK_ASSERT(leg_commit_due_);
  leg_commit_due_ = false;
  const protocol::StoreConsumerOffsetRequest store{.consumer = leg_poll_.consumer,
                                                   .stream_id = leg_poll_.stream_id,
                                                   .topic_id = leg_poll_.topic_id,
                                                   .partition_id = leg_commit_partition_,
                                                   .offset = leg_commit_offset_};
  GroupLeg& leg = leg_at(0);
  leg.payload.clear();
  if (!protocol::encode_payload(store, leg.payload).ok() || shard_.stopping()) {
    finish_request();
    return;
  }
  leg.header = {.user = user_id_,
                .client = client_id_,
                .code = protocol::command_code(protocol::Command::store_consumer_offset),
                .flags = cluster::LinkRequest::deduplicated};
  leg.deadline.reset();
  leg.node = leg_commit_node_;
  leg.partition = leg_commit_partition_;
  leg_committing_ = true;
  legs_out_ = 1;
  forward_busy_ = true;
  shard_.links()->link_to(leg.node).submit(leg);
}

template Result<bool> Connection::route_watch(protocol::WaitForMessagesRequest&);
template Result<bool> Connection::route_watch(protocol::WaitForLagRequest&);
template Result<bool> Connection::route_watch(protocol::WaitForConditionRequest&);

}  // namespace hark::server
