// A consumer-group member's poll in cluster mode (docs/cluster.md §Consumer groups). Membership
// is journaled in etcd with the metadata, so every node deals the group's partitions to the
// same members and the entry node reads the member's assignment from its own catalog. The
// poll's Wait stays here: each leg is a one-partition poll parked at its partition's owner with
// what is left of the wait (never extended) and without auto-commit; the first leg that brings
// messages answers the client and the other legs are cancelled at their owners. A leg that
// brought messages too late is dropped unanswered and, since nothing committed its offset, those
// messages are polled again: no message is delivered twice or lost. The winner's offset is
// stored at its owner once the answer is written, as a local poll's auto-commit.
#include <algorithm>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
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

// The offset of the last message of an owner's poll answer; nullopt if it is an error or
// brought no message.
std::optional<uint64_t> last_polled(std::span<const std::byte> response) {
  if (response.size() < protocol::response_header_size || status_of(response) != 0) {
    return std::nullopt;
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

void Connection::start_legs(const protocol::PollMessagesRequest& request,
                            const core::Broker::ResolvedIds& ids, Instant deadline) {
  const cluster::ClusterView& view = *shard_.cluster_view();
  leg_poll_ = request;
  leg_poll_.auto_commit = false;  // Stored here for the winner alone (commit_leg).
  leg_commit_due_ = request.auto_commit;
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
    leg_poll_.partition_id = partition;
    leg.payload.clear();
    if (!protocol::encode_payload(leg_poll_, leg.payload).ok()) continue;
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
  const std::optional<uint64_t> last = response.ok() ? last_polled(*response) : std::nullopt;
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

}  // namespace hark::server
