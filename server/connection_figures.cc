// GetStream, GetStreams, GetTopic and GetTopics in cluster mode (docs/cluster.md §Figures). A
// node opens only the partitions assigned to it, so its catalog's figures (messages, size,
// segments, current offset) are its own partitions'. The entry node answers as one node would:
// it asks every other live node that owns a partition of the answer for those partitions'
// figures, one figures request per owner node over this shard's links (node_link.h), waits for
// the answers at most figures_timeout, and sums them with its own into the Iggy answer. An owner
// that is dead, refuses, or does not answer in time is reported with the figures it last
// answered to this shard (LinkHub::last_figures), or 0, and a log line; never an error. Control
// plane: these commands allocate freely.
#include <algorithm>
#include <set>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/codec.h"
#include "hark/server/connection.h"
#include "hark/server/dispatch.h"
#include "hark/server/shard_server.h"

namespace hark::server {
namespace {

core::PartitionKey key_of(uint32_t stream, uint32_t topic, uint32_t partition) {
  return core::PartitionKey{
      .stream = StreamId(stream), .topic = TopicId(topic), .partition = PartitionId(partition)};
}

// The figures of a partition, as Iggy reports them; its id and creation time stay the catalog's.
void set_figures(core::PartitionInfo& to, const core::PartitionInfo& from) {
  to.segments_count = from.segments_count;
  to.current_offset = from.current_offset;
  to.size_bytes = from.size_bytes;
  to.messages_count = from.messages_count;
}

// The messages and bytes of every partition of `figures` in [first, last).
template <typename Info>
void sum_range(const std::map<core::PartitionKey, core::PartitionInfo>& figures,
               const core::PartitionKey& first, const core::PartitionKey& last, Info& into) {
  into.size_bytes = 0;
  into.messages_count = 0;
  for (auto it = figures.lower_bound(first); it != figures.end() && it->first < last; ++it) {
    into.size_bytes += it->second.size_bytes;
    into.messages_count += it->second.messages_count;
  }
}

void sum_topic(const std::map<core::PartitionKey, core::PartitionInfo>& figures, uint32_t stream,
               core::TopicInfo& topic) {
  sum_range(figures, key_of(stream, topic.id, 0), key_of(stream, topic.id + 1, 0), topic);
}

void sum_stream(const std::map<core::PartitionKey, core::PartitionInfo>& figures,
                core::StreamInfo& stream) {
  sum_range(figures, key_of(stream.id, 0, 0), key_of(stream.id + 1, 0, 0), stream);
}

// What the summed figures make of each answer.
struct Summed {
  const std::map<core::PartitionKey, core::PartitionInfo>& figures;
  uint32_t stream;
  void operator()(std::monostate&) const {}
  void operator()(core::StreamDetails& details) const {
    for (core::TopicInfo& topic : details.topics) sum_topic(figures, details.stream.id, topic);
    sum_stream(figures, details.stream);
  }
  void operator()(std::vector<core::StreamInfo>& streams) const {
    for (core::StreamInfo& info : streams) sum_stream(figures, info);
  }
  void operator()(core::TopicDetails& details) const {
    for (core::PartitionInfo& partition : details.partitions) {
      const auto found = figures.find(key_of(stream, details.topic.id, partition.id));
      if (found != figures.end()) set_figures(partition, found->second);
    }
    sum_topic(figures, stream, details.topic);
  }
  void operator()(std::vector<core::TopicInfo>& topics) const {
    for (core::TopicInfo& topic : topics) sum_topic(figures, stream, topic);
  }
};

}  // namespace

void Connection::respond_figures(FiguresAnswer answer, const cluster::FiguresScope& scope) {
  figures_answer_ = std::move(answer);
  figures_scope_ = scope;
  // One node (no view): its figures are all of them. A topic's stream that no longer resolves
  // (deleted meanwhile) is answered from the catalog as it is.
  const bool needs_stream = !std::holds_alternative<std::vector<core::StreamInfo>>(figures_answer_);
  if (shard_.cluster_view() == nullptr || (needs_stream && !scope.stream)) {
    respond_figures_answer();
    return;
  }
  start_figures();
}

void Connection::start_figures() {
  const cluster::ClusterView& view = *shard_.cluster_view();
  std::map<core::PartitionKey, core::PartitionInfo>& last = shard_.links()->last_figures();
  shard_.broker().partition_figures(figures_scope_.stream, figures_scope_.topic, figures_read_);
  figures_.clear();
  std::set<uint32_t> owners;
  for (const core::PartitionFigures& entry : figures_read_) {
    core::PartitionInfo& info = figures_[entry.key];
    info = core::PartitionInfo{.id = entry.info.id, .created_at = entry.info.created_at};
    const cluster::PartitionOwner owner = view.owner(entry.key);
    const bool here =
        owner.kind == cluster::PartitionOwner::Kind::node && owner.assignment.node == view.self;
    if (here) {
      set_figures(info, entry.info);
      continue;
    }
    // Until its owner answers: what it answered last, or 0.
    if (const auto known = last.find(entry.key); known != last.end()) {
      set_figures(info, known->second);
    }
    if (owner.kind == cluster::PartitionOwner::Kind::node) owners.insert(owner.assignment.node);
  }
  if (owners.empty()) {
    finish_figures();
    return;
  }
  size_t started = 0;
  for (const uint32_t node : owners) {
    FiguresLeg& leg = figures_leg_at(started++);
    leg.payload.clear();
    cluster::append_figures_request(figures_scope_, leg.payload);
    leg.header = {.user = user_id_, .client = client_id_, .code = cluster::figures_code};
    leg.deadline.reset();
    leg.node = node;
  }
  figures_out_ = started;
  figures_busy_ = true;  // Before submit(): a link that cannot reach its node fails at once.
  shard_.reactor().timers().add(figures_wait_, shard_.monotonic_now() + figures_timeout);
  for (size_t i = 0; i < started; i++) {
    shard_.links()->link_to(figures_legs_[i]->node).submit(*figures_legs_[i]);
  }
}

Connection::FiguresLeg& Connection::figures_leg_at(size_t index) {
  while (figures_legs_.size() <= index) {
    figures_legs_.push_back(std::make_unique<FiguresLeg>(*this));
  }
  return *figures_legs_[index];
}

void Connection::figures_leg_done(FiguresLeg& leg, Result<std::span<const std::byte>> response) {
  HARK_ASSERT(figures_out_ > 0);
  figures_out_--;
  const Status parsed = response.ok() ? cluster::parse_figures_answer(*response, figures_read_)
                                      : Status(response.error());
  if (!parsed.ok()) {
    HARK_LOG_WARN(
        "connection %s: figures of node %u's partitions not available (%s): reported "
        "as last known",
        peer_, leg.node, error_name(parsed.error()));
  } else {
    const cluster::ClusterView& view = *shard_.cluster_view();
    std::map<core::PartitionKey, core::PartitionInfo>& last = shard_.links()->last_figures();
    // A bound on what the shard remembers: partitions deleted since drop out at the next clear.
    if (last.size() > 4 * cluster::figures_max) last.clear();
    for (const core::PartitionFigures& entry : figures_read_) {
      const cluster::PartitionOwner owner = view.owner(entry.key);
      const auto found = figures_.find(entry.key);
      if (found == figures_.end() || owner.kind != cluster::PartitionOwner::Kind::node ||
          owner.assignment.node != leg.node) {
        continue;  // Not in this answer, or not that node's in this node's view.
      }
      set_figures(found->second, entry.info);
      last[entry.key] = entry.info;
    }
  }
  if (figures_out_ == 0 && figures_busy_) finish_figures();
}

void Connection::figures_timed_out() {
  for (const auto& leg : figures_legs_) {
    if (!leg->linked()) continue;
    HARK_LOG_WARN(
        "connection %s: node %u did not answer for figures within %d ms: its "
        "partitions are reported as last known",
        peer_, leg->node,
        std::chrono::duration_cast<std::chrono::milliseconds>(figures_timeout).count());
    shard_.links()->link_to(leg->node).cancel(*leg);
  }
  figures_out_ = 0;
  finish_figures();
}

void Connection::finish_figures() {
  if (figures_wait_.armed()) shard_.reactor().timers().cancel(figures_wait_);
  figures_busy_ = false;
  if (phase_ == Phase::dropping) {
    close_if_idle();
    return;
  }
  std::visit(Summed{figures_, figures_scope_.stream.value_or(0)}, figures_answer_);
  respond_figures_answer();
}

void Connection::cancel_figures() {
  if (!figures_busy_) return;
  figures_busy_ = false;
  if (figures_wait_.armed()) shard_.reactor().timers().cancel(figures_wait_);
  for (const auto& leg : figures_legs_) {
    if (leg->linked()) shard_.links()->link_to(leg->node).cancel(*leg);
  }
  figures_out_ = 0;
}

void Connection::respond_figures_answer() {
  struct Respond {
    Connection& connection;
    void operator()(const std::monostate&) const { connection.respond_ok(); }
    void operator()(const core::StreamDetails& details) const {
      connection.respond_encoded(stream_details_response(details));
    }
    void operator()(const std::vector<core::StreamInfo>& streams) const {
      connection.respond_encoded(streams_response(streams));
    }
    void operator()(const core::TopicDetails& details) const {
      connection.respond_encoded(topic_details_response(details));
    }
    void operator()(const std::vector<core::TopicInfo>& topics) const {
      connection.respond_encoded(topics_response(topics));
    }
  };
  std::visit(Respond{*this}, figures_answer_);
  figures_answer_ = std::monostate{};
}

}  // namespace hark::server
