// LinkHub (node_link.h): a shard's links, and on shard 0 the owner side of forwarding: accepting
// links, running forwarded requests as the user the entry node checked, and the tables of first
// answers that make a re-sent write exactly-once (docs/cluster.md §Exactly once).
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include <sys/socket.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/message_requests.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/send_messages.h"
#include "hark/server/command_table.h"
#include "hark/server/dispatch.h"
#include "hark/server/node_link.h"
#include "hark/server/shard_server.h"

namespace hark::server {
namespace {

void add(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }

template <typename T>
void append_header(protocol::Bytes& out, const T& header) {
  out.insert(out.end(), header.begin(), header.end());
}

// The Iggy response the owner sends back, as Connection would answer the same operation
// (connection_requests.cc).
struct AnswerOf {
  protocol::Bytes& out;
  uint32_t code;
  void operator()(const std::monostate&) const {}
  void operator()(const core::Append&) const {
    append_header(out, protocol::ok_response_header(0));
  }
  void operator()(const core::StoreOffset&) const {
    append_header(out, protocol::ok_response_header(0));
  }
  void operator()(const core::GetOffset& op) const {
    if (!op.stored || !protocol::encode_response(consumer_offset_response(op), out).ok()) {
      out.clear();
      append_header(out, protocol::ok_response_header(0));
    }
  }
  void operator()(const core::DeleteOffset&) const {
    append_header(out, protocol::ok_response_header(0));
  }
  void operator()(const core::Notify& op) const {
    Status encoded = ok_status();
    switch (static_cast<protocol::Command>(code)) {
      case protocol::Command::wait_for_messages:
        encoded = protocol::encode_response(wait_for_messages_response(op), out);
        break;
      case protocol::Command::wait_for_lag:
        if (const auto lag = wait_for_lag_response(op)) {
          encoded = protocol::encode_response(*lag, out);
        } else {
          append_header(out, protocol::ok_response_header(0));  // A timeout: empty.
        }
        break;
      default: encoded = protocol::encode_response(wait_for_condition_response(op), out); break;
    }
    if (!encoded.ok()) {
      out.clear();
      append_header(out, protocol::error_response(encoded.error()));
    }
  }
  void operator()(const core::FencePartition& op) const {
    const cluster::LinkFenceAnswer answer{.end = op.end, .offsets = op.offsets};
    protocol::Bytes payload;
    cluster::append_link_fence_answer(answer, payload);
    append_header(out, protocol::ok_response_header(static_cast<uint32_t>(payload.size())));
    out.insert(out.end(), payload.begin(), payload.end());
  }
  void operator()(const core::Poll& op) const {
    const std::span<const std::byte> messages = op.result.messages.bytes();
    append_header(out, protocol::poll_response_prefix(poll_header(op.result), messages.size()));
    out.insert(out.end(), messages.begin(), messages.end());
  }
};

template <typename Request>
Result<Request> decode_forwarded(std::span<const std::byte> payload) {
  HARK_TRY_ASSIGN(protocol::Decoded<Request> decoded, protocol::decode_payload<Request>(payload));
  return std::move(decoded.value);
}

}  // namespace

LinkHub::LinkHub(ShardServer& shard, LinkShared& shared, int listen_fd)
    : shard_(shard), shared_(shared), listen_fd_(listen_fd) {
  arm_accept();
}

LinkHub::~LinkHub() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  while (inbound_.pop_front() != nullptr) {
  }
  inbound_owned_.clear();
}

OutboundLink& LinkHub::link_to(uint32_t node) {
  std::unique_ptr<OutboundLink>& link = outbound_[node];
  if (link == nullptr) link = std::make_unique<OutboundLink>(shard_, *this, node);
  return *link;
}

void LinkHub::arm_accept() {
  if (listen_fd_ < 0 || accept_armed_ || stopping_) return;
  accept_armed_ = true;
  shard_.ring().accept_multishot(listen_fd_, *this);
}

void LinkHub::complete(int32_t result, uint32_t flags) {
  shard_.collect();
  if ((flags & IORING_CQE_F_MORE) == 0) accept_armed_ = false;
  if (result >= 0) {
    if (stopping_ || inbound_owned_.size() >= inbound_max) {
      if (!stopping_) add(shared_.handshakes_refused);
      ::close(result);
    } else {
      auto link = std::make_unique<InboundLink>(shard_, *this, result);
      inbound_.push_back(*link);
      inbound_owned_.push_back(std::move(link));
    }
  } else if (result != -ECANCELED) {
    HARK_LOG_WARN("link listener: accept failed: %s", strerror(-result));
  }
  arm_accept();
}

void LinkHub::stop() {
  if (stopping_) return;
  stopping_ = true;
  if (accept_armed_) shard_.ring().cancel(*this);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  for (auto& [node, link] : outbound_) link->stop();
  inbound_.for_each([](InboundLink& link) { link.stop(); });
}

bool LinkHub::busy() const {
  if (accept_armed_) return true;
  for (const auto& [node, link] : outbound_) {
    if (link->busy() || link->connecting()) return true;
  }
  return !inbound_.empty();
}

void LinkHub::collect() {
  for (auto it = inbound_owned_.begin(); it != inbound_owned_.end();) {
    InboundLink& link = **it;
    if (link.closed() && !link.busy() && link.running().empty()) {
      inbound_.remove(link);
      it = inbound_owned_.erase(it);
    } else {
      ++it;
    }
  }
}

void LinkHub::link_up(InboundLink& link, const cluster::LinkPeer& peer) {
  add(shared_.links_up);
  std::unique_ptr<EntryState>& entry = entries_[{peer.node, peer.entry_shard}];
  if (entry == nullptr || entry->incarnation != peer.incarnation) {
    // A new entry process: the old one's ids mean nothing any more.
    entry = std::make_unique<EntryState>();
    entry->incarnation = peer.incarnation;
  }
  entry->link = &link;
  HARK_LOG_INFO("link from node %u (shard %u) up", peer.node, peer.entry_shard);
}

void LinkHub::link_closed(InboundLink& link) {
  for (auto& [key, entry] : entries_) {
    if (entry->link == &link) entry->link = nullptr;
  }
  // Parked polls of this link have nobody to answer: cancel them. Writes run on, and answer
  // on the entry's next link (their table entry holds the answer meanwhile).
  link.running().for_each([&](Executed& executed) {
    executed.link = nullptr;
    link.running().remove(executed);
    cancel_waiting(executed);
  });
}

void LinkHub::cancel(InboundLink& link, uint64_t id) {
  link.running().for_each([&](Executed& executed) {
    if (executed.id == id) cancel_waiting(executed);
  });
}

void LinkHub::cancel_waiting(Executed& executed) {
  if (auto* poll = std::get_if<Executed::LinkOp<core::Poll>>(&executed.op)) {
    shard_.broker().cancel(*poll);
  } else if (auto* notify = std::get_if<Executed::LinkOp<core::Notify>>(&executed.op)) {
    shard_.broker().cancel(*notify);
  }
}

void LinkHub::answer_error(InboundLink& link, uint64_t id, Error error) {
  const auto header = protocol::error_response(error);
  link.send_answer(id, header);
}

void LinkHub::execute(InboundLink& link, const cluster::LinkPeer& peer,
                      const cluster::LinkRequest& request) {
  const std::pair<uint32_t, uint32_t> key{peer.node, peer.entry_shard};
  EntryState& entry = *entries_.at(key);
  const bool deduplicated = (request.flags & cluster::LinkRequest::deduplicated) != 0;
  if (deduplicated) {
    entry.table.trim_below(request.answered_below);
    switch (entry.table.begin(request.id)) {
      case cluster::AnswerTable::Seen::answered:
        add(shared_.replayed);
        link.send_answer(request.id, entry.table.answer(request.id));
        return;
      case cluster::AnswerTable::Seen::in_progress: return;  // Answers on entry.link when done.
      case cluster::AnswerTable::Seen::forgotten:
        add(shared_.refused_forgotten);
        answer_error(link, request.id, Error::shard_communication_error);
        return;
      case cluster::AnswerTable::Seen::fresh: break;
    }
  }
  if (executed_free_.empty()) {
    executed_owned_.push_back(std::make_unique<Executed>(*this));
    executed_free_.push_back(executed_owned_.back().get());
  }
  Executed& executed = *executed_free_.back();
  executed_free_.pop_back();
  executed.link = &link;
  link.running().push_back(executed);
  executed.entry = key;
  executed.id = request.id;
  executed.deduplicated = deduplicated;
  executed.auto_commit = false;
  executed.code = request.code;
  executed.payload.assign(request.payload.begin(), request.payload.end());
  executed.answer.clear();
  add(shared_.executed);
  const Status started = start_op(executed, request);
  if (!started.ok()) {
    // Not submitted: answer the error the way the entry's own connection would have.
    executed.op.emplace<std::monostate>();
    append_header(executed.answer, protocol::error_response(started.error()));
    finished(executed);
  }
}

Status LinkHub::start_op(Executed& executed, const cluster::LinkRequest& request) {
  // Each case decodes into the operation its Connection handler fills (connection_requests.cc).
  const std::span<const std::byte> payload = executed.payload;
  if (request.code == cluster::figures_code) return answer_figures(executed);
  if (request.code == cluster::link_fetch_code) return start_fetch(executed, request);
  if (request.code == cluster::replica_fetch_code) return start_replica_fetch(executed, request);
  switch (static_cast<protocol::Command>(request.code)) {
    case protocol::Command::send_messages: {
      HARK_TRY_ASSIGN(const protocol::SendMessagesRequest decoded,
                      decode_forwarded<protocol::SendMessagesRequest>(payload));
      auto& op = executed.op.emplace<Executed::LinkOp<core::Append>>(executed);
      HARK_TRY(fill_append(decoded, op));
      shard_.broker().submit(op);
      return ok_status();
    }
    case protocol::Command::poll_messages: {
      HARK_TRY_ASSIGN(protocol::PollMessagesRequest decoded,
                      decode_forwarded<protocol::PollMessagesRequest>(payload));
      decoded.wait_timeout_us = request.wait_us;  // What is left of the client's wait.
      auto& op = executed.op.emplace<Executed::LinkOp<core::Poll>>(executed);
      HARK_TRY(fill_poll(decoded, request.client, Duration(0), op));
      executed.auto_commit = decoded.auto_commit;
      shard_.broker().submit(op);
      return ok_status();
    }
    case protocol::Command::store_consumer_offset: {
      HARK_TRY_ASSIGN(const protocol::StoreConsumerOffsetRequest decoded,
                      decode_forwarded<protocol::StoreConsumerOffsetRequest>(payload));
      auto& op = executed.op.emplace<Executed::LinkOp<core::StoreOffset>>(executed);
      HARK_TRY(fill_ids(decoded, op));
      op.offset = decoded.offset;
      shard_.broker().submit(op);
      return ok_status();
    }
    case protocol::Command::get_consumer_offset: {
      HARK_TRY_ASSIGN(const protocol::GetConsumerOffsetRequest decoded,
                      decode_forwarded<protocol::GetConsumerOffsetRequest>(payload));
      auto& op = executed.op.emplace<Executed::LinkOp<core::GetOffset>>(executed);
      HARK_TRY(fill_ids(decoded, op));
      shard_.broker().submit(op);
      return ok_status();
    }
    case protocol::Command::delete_consumer_offset: {
      HARK_TRY_ASSIGN(const protocol::DeleteConsumerOffsetRequest decoded,
                      decode_forwarded<protocol::DeleteConsumerOffsetRequest>(payload));
      auto& op = executed.op.emplace<Executed::LinkOp<core::DeleteOffset>>(executed);
      HARK_TRY(fill_ids(decoded, op));
      shard_.broker().submit(op);
      return ok_status();
    }
    case protocol::Command::wait_for_messages:
      return start_notify<protocol::WaitForMessagesRequest>(executed, request,
                                                            &fill_wait_for_messages);
    case protocol::Command::wait_for_lag:
      return start_notify<protocol::WaitForLagRequest>(executed, request, &fill_wait_for_lag);
    case protocol::Command::wait_for_condition:
      return start_notify<protocol::WaitForConditionRequest>(executed, request,
                                                             &fill_wait_for_condition);
    default: return Error::invalid_command;
  }
}

Status LinkHub::answer_figures(Executed& executed) {
  HARK_TRY_ASSIGN(const cluster::FiguresScope scope,
                  cluster::parse_figures_request(executed.payload));
  shard_.broker().partition_figures(scope.stream, scope.topic, figures_);
  // Only what this node owns in its view: a cell it hosted before a move keeps old figures.
  const cluster::ClusterView* view = shard_.cluster_view();
  std::erase_if(figures_, [&](const core::PartitionFigures& entry) {
    const cluster::PartitionOwner owner =
        view != nullptr ? view->owner(entry.key) : cluster::PartitionOwner{};
    return owner.kind != cluster::PartitionOwner::Kind::node || owner.assignment.node != view->self;
  });
  if (figures_.size() > cluster::figures_max) {
    HARK_LOG_WARN("figures for node %u: %u partitions, only the first %u answered",
                  executed.entry.first, figures_.size(), cluster::figures_max);
  }
  executed.op.emplace<std::monostate>();
  cluster::append_figures_answer(figures_, executed.answer);
  finished(executed);
  return ok_status();
}

Status LinkHub::start_fetch(Executed& executed, const cluster::LinkRequest& request) {
  HARK_TRY_ASSIGN(const cluster::LinkFetch fetch, cluster::parse_link_fetch(executed.payload));
  const core::PartitionKey key{StreamId(fetch.stream), TopicId(fetch.topic),
                               PartitionId(fetch.partition)};
  const cluster::ClusterView* view = shard_.cluster_view();
  const auto found = view == nullptr ? std::nullopt : view->move_of(key);
  if (!found || found->from != view->self || found->to != executed.entry.first ||
      found->epoch != fetch.epoch) {
    HARK_LOG_WARN(
        "link: node %u fetched %u/%u/%u for a move at epoch %u this node does not "
        "know (yet): refused",
        executed.entry.first, fetch.stream, fetch.topic, fetch.partition, fetch.epoch);
    return Error::resource_not_found;
  }
  if (fetch.fence) {
    auto& op = executed.op.emplace<Executed::LinkOp<core::FencePartition>>(executed);
    op.stream = core::NameOrId::id(fetch.stream);
    op.topic = core::NameOrId::id(fetch.topic);
    op.partition = fetch.partition;
    shard_.broker().submit(op);
    return ok_status();
  }
  // A parked fetch wakes on a commit.
  submit_fetch(executed, key, fetch.from, fetch.count, request.wait_us, std::nullopt);
  return ok_status();
}

void LinkHub::submit_fetch(Executed& executed, const core::PartitionKey& key, uint64_t from,
                           uint32_t count, uint64_t wait_us,
                           std::optional<core::ReplicaFetch> replica) {
  auto& op = executed.op.emplace<Executed::LinkOp<core::Poll>>(executed);
  op.stream = core::NameOrId::id(key.stream.value());
  op.topic = core::NameOrId::id(key.topic.value());
  op.partition = key.partition.value();
  op.from = core::PollFrom::offset;
  op.value = from;
  op.count = std::max<uint32_t>(count, 1);
  op.wait = std::chrono::microseconds(wait_us);
  op.copy = true;
  op.replica = replica;
  shard_.broker().submit(op);
}

Status LinkHub::start_replica_fetch(Executed& executed, const cluster::LinkRequest& request) {
  HARK_TRY_ASSIGN(const cluster::ReplicaFetchRequest fetch,
                  cluster::parse_replica_fetch(executed.payload));
  const core::PartitionKey key{StreamId(fetch.stream), TopicId(fetch.topic),
                               PartitionId(fetch.partition)};
  const cluster::ClusterView* view = shard_.cluster_view();
  if (view == nullptr) return Error::shard_communication_error;
  const auto found = view->assignments.find(key);
  const auto place =
      found == view->assignments.end() ? std::nullopt : found->second.place_of(view->self);
  const auto member = place ? found->second.member_of(executed.entry.first) : std::nullopt;
  if (!place || place->role != core::ReplicaRole::leader || place->epoch != fetch.epoch ||
      place->set != fetch.set || !member || *member == 0) {
    // Not the leader of that epoch here (yet, or any more): the follower asks again.
    return Error::shard_communication_error;
  }
  // Parked: woken by the next append.
  submit_fetch(executed, key, fetch.from, fetch.count, request.wait_us,
               core::ReplicaFetch{.member = *member,
                                  .epoch = fetch.epoch,
                                  .set = fetch.set,
                                  .offsets_version = fetch.offsets_version});
  return ok_status();
}

// A copy's answer (a replica or move fetch): `head`, then the poll answer's payload.
void append_copy_answer(protocol::Bytes& out, std::span<const std::byte> head,
                        const core::PollResult& result) {
  const std::span<const std::byte> messages = result.messages.bytes();
  const auto prefix = protocol::poll_response_prefix(poll_header(result), messages.size());
  // poll_response_prefix is a whole response's: [status][length] then the poll header.
  constexpr size_t skipped = protocol::response_header_size;
  const size_t poll_bytes = prefix.size() - skipped + messages.size();
  append_header(out, protocol::ok_response_header(static_cast<uint32_t>(head.size() + poll_bytes)));
  out.insert(out.end(), head.begin(), head.end());
  out.insert(out.end(), prefix.begin() + skipped, prefix.end());
  out.insert(out.end(), messages.begin(), messages.end());
}

void LinkHub::answer_move_fetch(Executed& executed) {
  const auto& poll = std::get<Executed::LinkOp<core::Poll>>(executed.op);
  protocol::Bytes head;
  cluster::append_link_fetch_head({.sealed_segment = poll.result.sealed_segment}, head);
  append_copy_answer(executed.answer, head, poll.result);
}

void LinkHub::answer_replica_fetch(Executed& executed) {
  auto& poll = std::get<Executed::LinkOp<core::Poll>>(executed.op);
  core::PollResult& result = poll.result;
  protocol::Bytes head;
  cluster::append_replica_fetch_head({.commit = result.commit_end,
                                      .appended = result.appended_end,
                                      .epoch_start = result.epoch_start,
                                      .offsets_version = result.offsets_version,
                                      .sealed_segment = result.sealed_segment,
                                      .offsets = std::move(result.offsets)},
                                     head);
  append_copy_answer(executed.answer, head, result);
  // Caught up: this fetch read up to the leader's appended end.
  const uint64_t next = result.messages.empty() ? poll.value : result.messages.last().value() + 1;
  const auto fetch = cluster::parse_replica_fetch(executed.payload);
  if (shard_.replication() != nullptr && fetch.ok()) {
    shard_.replication()->fetched(core::PartitionKey{StreamId(fetch->stream), TopicId(fetch->topic),
                                                     PartitionId(fetch->partition)},
                                  executed.entry.first, fetch->epoch, next >= result.appended_end);
  }
}

template <typename Request>
Status LinkHub::start_notify(Executed& executed, const cluster::LinkRequest& request,
                             Status (*fill)(const Request&, uint32_t, core::Notify&)) {
  HARK_TRY_ASSIGN(Request decoded, decode_forwarded<Request>(executed.payload));
  decoded.wait_timeout_us = request.wait_us;  // What is left of the client's wait.
  auto& op = executed.op.emplace<Executed::LinkOp<core::Notify>>(executed);
  HARK_TRY(fill(decoded, request.client, op));
  shard_.broker().submit(op);
  return ok_status();
}

void LinkHub::finished(Executed& executed) {
  if (executed.committing) {
    const auto& store = std::get<Executed::LinkOp<core::StoreOffset>>(executed.op);
    if (!store.status().ok()) {
      HARK_LOG_WARN("forwarded poll from node %u: auto-commit of offset %u failed: %s",
                    executed.entry.first, store.offset, error_name(store.status().error()));
    }
    recycle(executed);
    return;
  }
  encode_answer(executed);
  // A write's answer is kept for a re-send and goes to the entry's current link.
  InboundLink* link = executed.link;
  if (executed.deduplicated) {
    const auto found = entries_.find(executed.entry);
    if (found != entries_.end()) {
      found->second->table.answered(executed.id, executed.answer);
      link = found->second->link;
    }
  }
  if (link != nullptr) link->send_answer(executed.id, executed.answer);
  if (!auto_commit(executed)) recycle(executed);
}

void LinkHub::encode_answer(Executed& executed) {
  if (!executed.answer.empty()) return;  // An error answered before submitting.
  const auto status = std::visit(
      [](const auto& value) -> Status {
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::monostate>) {
          return Error::invalid_command;
        } else {
          return value.status();
        }
      },
      executed.op);
  if (!status.ok() && status.error() == Error::shard_communication_error) {
    // The broker's "not hosted here" (Broker::host): the partition moved away while the request
    // was on its way or parked here. Nothing ran; the entry routes it again (docs/cluster.md
    // §Moves), so a client never sees this answer.
    add(shared_.not_hosted);
    append_header(executed.answer, cluster::not_hosted_response());
  } else if (!status.ok()) {
    append_header(executed.answer, protocol::error_response(status.error()));
  } else if (executed.code == cluster::replica_fetch_code) {
    answer_replica_fetch(executed);
  } else if (executed.code == cluster::link_fetch_code &&
             std::holds_alternative<Executed::LinkOp<core::Poll>>(executed.op)) {
    answer_move_fetch(executed);  // A fenced fetch answers with the fence's (AnswerOf).
  } else {
    std::visit(AnswerOf{executed.answer, executed.code}, executed.op);
  }
}

bool LinkHub::auto_commit(Executed& executed) {
  // As Iggy 0.8.0 does it: the server that polled stores the offset once it has answered.
  auto* poll = std::get_if<Executed::LinkOp<core::Poll>>(&executed.op);
  if (poll == nullptr || !poll->status().ok() || !executed.auto_commit ||
      poll->result.messages.empty() || shard_.stopping()) {
    return false;
  }
  const core::ConsumerRef consumer = poll->consumer;
  const core::NameOrId group = poll->group;
  const core::NameOrId stream = poll->stream;
  const core::NameOrId topic = poll->topic;
  const uint32_t partition = poll->result.partition_id;
  const uint64_t offset = poll->result.messages.last().value();
  auto& store = executed.op.emplace<Executed::LinkOp<core::StoreOffset>>(executed);
  store.consumer = consumer;
  store.group = group;
  store.stream = stream;
  store.topic = topic;
  store.partition = partition;
  store.offset = offset;
  executed.committing = true;
  shard_.broker().submit(store);
  return true;
}

void LinkHub::recycle(Executed& executed) {
  if (executed.link != nullptr) executed.link->running().remove(executed);
  executed.link = nullptr;
  executed.committing = false;
  executed.op.emplace<std::monostate>();
  if (executed.payload.capacity() > (size_t{1} << 20)) protocol::Bytes().swap(executed.payload);
  if (executed.answer.capacity() > (size_t{1} << 20)) protocol::Bytes().swap(executed.answer);
  executed_free_.push_back(&executed);
}

}  // namespace hark::server
