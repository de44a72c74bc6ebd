// MoveCopy and MoveCopies (move_copy.h): the target's side of a partition move.
#include "hark/server/move_copy.h"

#include <algorithm>
#include <string>

#include "hark/core/base/log.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/reader.h"
#include "hark/server/shard_server.h"

namespace hark::server {
namespace {

constexpr Duration retry_min = std::chrono::milliseconds(100);
constexpr Duration retry_max = std::chrono::seconds(2);
constexpr uint32_t fetch_count = 4096;  // Messages per fetch (A's poll byte cap applies too).

}  // namespace

MoveCopy::MoveCopy(ShardServer& shard, const core::PartitionKey& key, const cluster::Move& move)
    : shard_(shard), key_(key), move_(move), delay_(retry_min) {
  header.code = cluster::link_fetch_code;
}

MoveCopy::~MoveCopy() { HARK_ASSERT(idle()); }

void MoveCopy::start() {
  HARK_LOG_INFO("move of %u/%u/%u from node %u (epoch %u): copying", key_.stream.value(),
                key_.topic.value(), key_.partition.value(), move_.from, move_.epoch);
  fetch(false);
}

void MoveCopy::stop() {
  stopped_ = true;
  if (armed()) shard_.reactor().timers().cancel(*this);
  if (in_flight_ && append_ == nullptr && store_ == nullptr && shard_.links() != nullptr) {
    // A fetch on the link: forgotten there (a parked one is cancelled at A).
    shard_.links()->link_to(move_.from).cancel(*this);
    in_flight_ = false;
  }
}

void MoveCopy::fetch(bool fence) {
  payload.clear();
  cluster::append_link_fetch({.stream = key_.stream.value(),
                              .topic = key_.topic.value(),
                              .partition = key_.partition.value(),
                              .epoch = move_.epoch,
                              .from = end_,
                              .count = fetch_count,
                              .fence = fence},
                             payload);
  in_flight_ = true;
  shard_.links()->link_to(move_.from).submit(*this);
}

void MoveCopy::forward_done(Result<std::span<const std::byte>> response) {
  in_flight_ = false;
  if (stopped_) return;
  const Status taken = response.ok() ? take_answer(*response) : Status(response.error());
  if (!taken.ok()) retry("fetch", taken.error());
}

Status MoveCopy::take_answer(std::span<const std::byte> response) {
  protocol::Reader reader(response);
  HARK_TRY_ASSIGN(const uint32_t status, reader.u32());
  HARK_TRY_ASSIGN(const uint32_t length, reader.u32());
  if (status != 0) return static_cast<Error>(status);
  HARK_TRY_ASSIGN(const std::span<const std::byte> body, reader.bytes(length));
  return phase_ == Phase::fencing ? take_fence(body) : take_messages(body);
}

Status MoveCopy::take_messages(std::span<const std::byte> body) {
  HARK_TRY_ASSIGN(const cluster::LinkFetchAnswer fetched, cluster::parse_link_fetch_answer(body));
  protocol::Reader reader(fetched.poll);
  protocol::PollMessagesResponse answer;
  HARK_TRY(protocol::decode(reader, answer));
  if (answer.header.messages_count == 0) {
    // Caught up with A: fence it. After the fence A holds up to its end: nothing is a gap.
    if (phase_ == Phase::tail) return Error::invalid_offset;
    next();
    return ok_status();
  }
  messages_.assign(answer.messages.bytes().begin(), answer.messages.bytes().end());
  append_ = std::make_unique<CopyOp<core::AppendStored>>(*this);
  append_->stream = core::NameOrId::id(key_.stream.value());
  append_->topic = core::NameOrId::id(key_.topic.value());
  append_->partition = key_.partition.value();
  append_->messages = messages_;
  append_->count = answer.header.messages_count;
  append_->source = fetched.sealed_segment;  // B's segments are A's (docs/cluster.md §Moves).
  in_flight_ = true;
  shard_.broker().submit(*append_);
  return ok_status();
}

Status MoveCopy::take_fence(std::span<const std::byte> body) {
  HARK_TRY_ASSIGN(cluster::LinkFenceAnswer answer, cluster::parse_link_fence_answer(body));
  fenced_end_ = answer.end;
  offsets_ = std::move(answer.offsets);
  phase_ = Phase::tail;
  HARK_LOG_INFO("move of %u/%u/%u: node %u fenced at offset %u; copying the tail from %u",
                key_.stream.value(), key_.topic.value(), key_.partition.value(), move_.from,
                fenced_end_, end_);
  next();
  return ok_status();
}

void MoveCopy::op_done(const Status& status) {
  in_flight_ = false;
  if (append_ != nullptr) {
    const uint64_t end = append_->end;
    append_.reset();
    if (stopped_) return;
    if (!status.ok()) {
      // invalid_offset: B already held some of it (an earlier copy); fetch from B's end.
      end_ = std::max(end_, end);
      retry("append", status.error());
      return;
    }
    end_ = end;
    delay_ = retry_min;
    phase_ == Phase::copying ? fetch(false) : next();
    return;
  }
  store_.reset();
  if (stopped_) return;
  if (!status.ok()) {
    retry("offset", status.error());
    return;
  }
  next_offset_++;
  next();
}

// The step after a phase's work: what is left to copy, the fence, the offsets, ready.
void MoveCopy::next() {
  switch (phase_) {
    case Phase::copying:
      phase_ = Phase::fencing;
      fetch(true);
      return;
    case Phase::fencing: fetch(true); return;
    case Phase::tail:
      if (end_ < fenced_end_) {
        fetch(false);
        return;
      }
      phase_ = Phase::offsets;
      [[fallthrough]];
    case Phase::offsets: store_next_offset(); return;
    case Phase::ready: return;
  }
}

void MoveCopy::store_next_offset() {
  if (next_offset_ == offsets_.size()) {
    report_ready();
    return;
  }
  const auto& [consumer, offset] = offsets_[next_offset_];
  store_ = std::make_unique<CopyOp<core::StoreOffset>>(*this);
  store_->stream = core::NameOrId::id(key_.stream.value());
  store_->topic = core::NameOrId::id(key_.topic.value());
  store_->partition = key_.partition.value();
  store_->consumer = consumer;
  if (consumer.kind == core::ConsumerRef::Kind::group)
    store_->group = core::NameOrId::id(consumer.id);
  store_->offset = offset;
  in_flight_ = true;
  shard_.broker().submit(*store_);
}

void MoveCopy::report_ready() {
  phase_ = Phase::ready;
  HARK_LOG_INFO("move of %u/%u/%u: copied up to offset %u with %u stored offsets; ready",
                key_.stream.value(), key_.topic.value(), key_.partition.value(), end_,
                offsets_.size());
  shard_.shard_reports().push(key_, move_.epoch);
}

void MoveCopy::retry(const char* what, Error error) {
  HARK_LOG_WARN("move of %u/%u/%u from node %u: %s failed (%s); retrying in %d ms",
                key_.stream.value(), key_.topic.value(), key_.partition.value(), move_.from, what,
                std::string(error_name(error)),
                std::chrono::duration_cast<std::chrono::milliseconds>(delay_).count());
  shard_.reactor().timers().add(*this, shard_.monotonic_now() + delay_);
  delay_ = std::min(delay_ * 2, retry_max);
}

void MoveCopy::expire() {
  if (stopped_) return;
  // The phase's step again: a fetch from B's end, the fence, or the offset that failed.
  switch (phase_) {
    case Phase::copying: fetch(false); return;
    case Phase::offsets: store_next_offset(); return;
    default: next(); return;
  }
}

void MoveCopies::on_view(const cluster::ClusterView& view) {
  for (auto it = copies_.begin(); it != copies_.end();) {
    const auto move = view.move_of(it->first);
    if (move && move->to == view.self && move->from == it->second->move().from &&
        move->epoch == it->second->move().epoch) {
      ++it;
      continue;
    }
    it->second->stop();
    stopping_.push_back(std::move(it->second));
    it = copies_.erase(it);
  }
  for (const auto& [key, move] : view.moves) {
    if (move.to != view.self || move.ready || copies_.contains(key)) continue;
    auto copy = std::make_unique<MoveCopy>(shard_, key, move);
    MoveCopy& started = *copy;
    copies_.emplace(key, std::move(copy));
    started.start();
  }
  collect();
}

void MoveCopies::stop() {
  for (auto& [key, copy] : copies_) {
    copy->stop();
    stopping_.push_back(std::move(copy));
  }
  copies_.clear();
  collect();
}

bool MoveCopies::busy() const {
  return !copies_.empty() ||
         std::any_of(stopping_.begin(), stopping_.end(), [](const auto& c) { return !c->idle(); });
}

void MoveCopies::collect() {
  std::erase_if(stopping_, [](const auto& copy) { return copy->idle(); });
}

}  // namespace hark::server
