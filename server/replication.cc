// ReplicaFetcher and Replication (replication.h): replication's data path in harkd.
#include "hark/server/replication.h"

#include <algorithm>
#include <string>

#include "hark/core/base/log.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/reader.h"
#include "hark/server/shard_server.h"

namespace hark::server {
namespace {

constexpr Duration retry_min = std::chrono::milliseconds(100);
constexpr Duration retry_max = std::chrono::seconds(1);
constexpr Duration fetch_wait = std::chrono::milliseconds(500);
constexpr uint32_t fetch_count = 4096;  // Messages per fetch (the leader's byte cap applies too).
constexpr Duration review_every = std::chrono::milliseconds(250);
constexpr Duration learn_every = std::chrono::milliseconds(100);
// An in-sync set asked for and not seen in a view after this long is asked for again.
constexpr Duration ask_again_after = std::chrono::seconds(3);

// Counts `member` in sync at the leader's core, then asks etcd for the set with it.
class Expand final : public core::Replicate {
 public:
  Expand(cluster::ShardReports& reports, cluster::ShardReports::IsrChange change)
      : reports_(reports), change_(std::move(change)) {}
  void done() override {
    if (status().ok()) reports_.push(std::move(change_));
    delete this;
  }

 private:
  cluster::ShardReports& reports_;
  cluster::ShardReports::IsrChange change_;
};

template <typename Op>
void address_of(Op& op, const core::PartitionKey& key) {
  op.stream = core::NameOrId::id(key.stream.value());
  op.topic = core::NameOrId::id(key.topic.value());
  op.partition = key.partition.value();
}

}  // namespace

ReplicaFetcher::ReplicaFetcher(ShardServer& shard, const core::PartitionKey& key,
                               const cluster::Assignment& assignment,
                               const core::ReplicaPlace& place)
    : shard_(shard), key_(key), leader_(assignment.node), place_(place), delay_(retry_min) {
  header.code = cluster::replica_fetch_code;
}

ReplicaFetcher::~ReplicaFetcher() { HARK_ASSERT(idle()); }

void ReplicaFetcher::start() {
  HARK_LOG_INFO("partition %u/%u/%u: following node %u at epoch %u", key_.stream.value(),
                key_.topic.value(), key_.partition.value(), leader_, place_.epoch);
  query_ends();
}

void ReplicaFetcher::stop() {
  stopped_ = true;
  if (armed()) shard_.reactor().timers().cancel(*this);
  const bool on_link = step_ == Step::probe || step_ == Step::fetch;
  if (in_flight_ && on_link && shard_.links() != nullptr) {
    shard_.links()->link_to(leader_).cancel(*this);  // A parked fetch is cancelled at the leader.
    in_flight_ = false;
  }
}

template <typename Op>
Op& ReplicaFetcher::address(std::unique_ptr<FetcherOp<Op>>& slot) {
  slot = std::make_unique<FetcherOp<Op>>(*this);
  address_of(*slot, key_);
  in_flight_ = true;
  return *slot;
}

core::Replicate& ReplicaFetcher::follower_op() {
  core::Replicate& op = address(replicate_);
  op.role = core::ReplicaRole::follower;
  op.epoch = place_.epoch;
  op.replicas = place_.replicas;
  op.set = place_.set;
  return op;
}

void ReplicaFetcher::query_ends() {
  step_ = Step::ends;
  shard_.broker().submit(follower_op());
}

void ReplicaFetcher::fetch(uint64_t from, uint32_t count, Duration wait) {
  payload.clear();
  cluster::append_replica_fetch({.stream = key_.stream.value(),
                                 .topic = key_.topic.value(),
                                 .partition = key_.partition.value(),
                                 .epoch = place_.epoch,
                                 .set = place_.set,
                                 .from = from,
                                 .count = count,
                                 .offsets_version = offsets_version_},
                                payload);
  header.wait_us =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(wait).count());
  Forward::deadline = shard_.monotonic_now() + wait;
  in_flight_ = true;
  shard_.links()->link_to(leader_).submit(*this);
}

void ReplicaFetcher::forward_done(Result<std::span<const std::byte>> response) {
  in_flight_ = false;
  if (stopped_) return;
  const Status taken = response.ok() ? take_answer(*response) : Status(response.error());
  if (!taken.ok()) retry(step_ == Step::probe ? "probe" : "fetch", taken.error());
}

Status ReplicaFetcher::take_answer(std::span<const std::byte> response) {
  protocol::Reader reader(response);
  HARK_TRY_ASSIGN(const uint32_t status, reader.u32());
  HARK_TRY_ASSIGN(const uint32_t length, reader.u32());
  if (status == static_cast<uint32_t>(Error::invalid_offset)) {
    // The leader holds less than this log says it holds durably: what it lacks was never
    // committed (a roll-back, a lost tail): cut to the commit point and copy again.
    cut_to_commit_ = true;
    return Error::invalid_offset;
  }
  if (status != 0) return Error::shard_communication_error;  // Not the leader (yet), or gone.
  HARK_TRY_ASSIGN(const std::span<const std::byte> body, reader.bytes(length));
  HARK_TRY_ASSIGN(leader_ends_, cluster::parse_replica_fetch_answer(body));
  const std::span<const std::byte> poll = leader_ends_.poll;
  leader_ends_.poll = {};  // In the response, which is gone after this call.
  delay_ = retry_min;      // The leader answers: the next failure waits the least again.
  if (step_ == Step::probe) {
    const bool previous_epoch = recorded_epoch_ + 1 == place_.epoch && !cut_to_commit_;
    uint64_t end = previous_epoch ? std::min(appended_, leader_ends_.epoch_start) : commit_;
    if (end < commit_) {
      HARK_LOG_WARN("partition %u/%u/%u: epoch %u starts at %u, below the commit point %u",
                    key_.stream.value(), key_.topic.value(), key_.partition.value(), place_.epoch,
                    leader_ends_.epoch_start, commit_);
      end = commit_;
    }
    truncate(end);
    return ok_status();
  }
  protocol::Reader messages_reader(poll);
  protocol::PollMessagesResponse answer;
  HARK_TRY(protocol::decode(messages_reader, answer));
  if (answer.header.messages_count == 0) {
    copied();
    return ok_status();
  }
  messages_.assign(answer.messages.bytes().begin(), answer.messages.bytes().end());
  step_ = Step::append;
  core::AppendStored& op = address(append_);
  op.messages = messages_;
  op.count = answer.header.messages_count;
  op.source = leader_ends_.sealed_segment;
  shard_.broker().submit(op);
  return ok_status();
}

void ReplicaFetcher::truncate(uint64_t end) {
  step_ = Step::truncate;
  core::TruncatePartition& op = address(truncate_);
  op.end = end;
  op.epoch = place_.epoch;
  shard_.broker().submit(op);
}

void ReplicaFetcher::copied() {
  if (!leader_ends_.offsets.has_value()) {
    learn(leader_ends_.commit);
    return;
  }
  step_ = Step::offsets;
  core::AdoptOffsets& op = address(adopt_);
  op.offsets = std::move(*leader_ends_.offsets);
  leader_ends_.offsets.reset();
  shard_.broker().submit(op);
}

void ReplicaFetcher::learn(uint64_t commit) {
  // The commit point a follower knows only bounds what it would cut at a later epoch and what
  // it would serve (harkd reads from leaders): while copying, it is told at most every
  // learn_every, sparing each round trip two hops to the partition's shard and back.
  const Instant now = shard_.monotonic_now();
  const bool copying = step_ == Step::append;
  if (commit <= learned_ || (copying && now - learned_at_ < learn_every)) {
    step_ = Step::fetch;
    fetch(from_, fetch_count, fetch_wait);
    return;
  }
  step_ = Step::learn;
  core::Replicate& op = follower_op();
  op.leader_commit = commit;
  learned_at_ = now;
  shard_.broker().submit(op);
}

void ReplicaFetcher::op_done(const Status& status) {
  in_flight_ = false;
  const Step step = step_;
  uint64_t appended_to = 0;
  if (append_ != nullptr) appended_to = append_->end;
  if (step == Step::ends || step == Step::learn) {
    if (status.ok()) {
      commit_ = replicate_->commit_end;
      appended_ = replicate_->appended_end;
      recorded_epoch_ = replicate_->recorded_epoch;
      if (step == Step::ends) from_ = replicate_->durable_end;
      if (step == Step::learn) learned_ = replicate_->leader_commit;
    }
    replicate_.reset();
  }
  truncate_.reset();
  append_.reset();
  adopt_.reset();
  if (stopped_) return;
  if (!status.ok()) {
    if (step == Step::truncate) cut_to_commit_ = true;
    retry(step == Step::append     ? "append"
          : step == Step::truncate ? "truncation"
          : step == Step::offsets  ? "offsets"
                                   : "replicate",
          status.error());
    return;
  }
  switch (step) {
    case Step::ends:
      if (recorded_epoch_ == place_.epoch && !cut_to_commit_) {
        learn(0);  // Fetches from the durable end.
      } else {
        // A new epoch for this log: where its log and the leader's may differ first.
        step_ = Step::probe;
        fetch(commit_, 1, Duration(0));
      }
      return;
    case Step::truncate:
      HARK_LOG_INFO("partition %u/%u/%u: holds a prefix of epoch %u's log; copying from node %u",
                    key_.stream.value(), key_.topic.value(), key_.partition.value(), place_.epoch,
                    leader_);
      cut_to_commit_ = false;
      query_ends();  // From the cut log's durable end.
      return;
    case Step::append:
      from_ = appended_to;
      copied();
      return;
    case Step::offsets:
      offsets_version_ = leader_ends_.offsets_version;
      learn(leader_ends_.commit);
      return;
    case Step::learn:
      step_ = Step::fetch;
      fetch(from_, fetch_count, fetch_wait);
      return;
    case Step::probe:
    case Step::fetch: return;  // Link steps end in forward_done.
  }
}

void ReplicaFetcher::retry(const char* what, Error error) {
  HARK_LOG_WARN("partition %u/%u/%u: %s from node %u failed (%s); again in %d ms",
                key_.stream.value(), key_.topic.value(), key_.partition.value(), what, leader_,
                std::string(error_name(error)),
                std::chrono::duration_cast<std::chrono::milliseconds>(delay_).count());
  shard_.reactor().timers().add(*this, shard_.monotonic_now() + delay_);
  delay_ = std::min(delay_ * 2, retry_max);
}

void ReplicaFetcher::expire() {
  if (!stopped_) query_ends();
}

Replication::Replication(ShardServer& shard) : shard_(shard) {}

Replication::~Replication() {
  if (armed()) shard_.reactor().timers().cancel(*this);
}

void Replication::on_view(const cluster::ClusterView& view) {
  if (stopped_) return;
  const Instant now = shard_.monotonic_now();
  std::map<core::PartitionKey, std::pair<const cluster::Assignment*, core::ReplicaPlace>> follows;
  for (const auto& [key, assignment] : view.assignments) {
    const auto place = assignment.place_of(view.self);
    if (!place) continue;
    if (place->role == core::ReplicaRole::follower) {
      if (view.node(assignment.node) != nullptr) follows[key] = {&assignment, *place};
      continue;
    }
    Led& led = led_[key];
    if (led.epoch != assignment.epoch) led = Led{.epoch = assignment.epoch, .since = now};
    if (led.asked && assignment.isr != led.asked_isr) led.asked.reset();
  }
  std::erase_if(led_, [&](const auto& entry) {
    const auto found = view.assignments.find(entry.first);
    return found == view.assignments.end() || found->second.node != view.self ||
           found->second.replicas.size() < 2;
  });
  for (auto it = fetchers_.begin(); it != fetchers_.end();) {
    const auto wanted = follows.find(it->first);
    if (wanted != follows.end() &&
        it->second->follows(wanted->second.first->node, wanted->second.second)) {
      follows.erase(wanted);
      ++it;
      continue;
    }
    it->second->stop();
    stopping_.push_back(std::move(it->second));
    it = fetchers_.erase(it);
  }
  for (const auto& [key, wanted] : follows) {
    auto fetcher = std::make_unique<ReplicaFetcher>(shard_, key, *wanted.first, wanted.second);
    ReplicaFetcher& started = *fetcher;
    fetchers_.emplace(key, std::move(fetcher));
    started.start();
  }
  if (!armed() && !led_.empty()) shard_.reactor().timers().add(*this, now + review_every);
  collect();
}

void Replication::fetched(const core::PartitionKey& key, uint32_t follower, uint64_t epoch,
                          bool caught_up) {
  const auto found = led_.find(key);
  if (found == led_.end() || found->second.epoch != epoch || !caught_up) return;
  const Instant now = shard_.monotonic_now();
  found->second.caught_up[follower] = now;
  // One that just caught up and is out of the set joins it now, not at the next review.
  const cluster::ClusterView* view = shard_.cluster_view();
  if (view == nullptr) return;
  const auto assignment = view->assignments.find(key);
  if (assignment != view->assignments.end() && !assignment->second.in_sync(follower)) {
    review(key, assignment->second, found->second, now);
  }
}

void Replication::expire() {
  const cluster::ClusterView* view = shard_.cluster_view();
  if (stopped_ || view == nullptr) return;
  const Instant now = shard_.monotonic_now();
  for (auto& [key, led] : led_) {
    const auto found = view->assignments.find(key);
    if (found != view->assignments.end()) review(key, found->second, led, now);
  }
  if (!led_.empty()) shard_.reactor().timers().add(*this, now + review_every);
}

void Replication::review(const core::PartitionKey& key, const cluster::Assignment& assignment,
                         Led& led, Instant now) {
  if (assignment.node != shard_.cluster_view()->self || assignment.epoch != led.epoch) return;
  if (led.asked && now - *led.asked < ask_again_after) return;  // One change at a time.
  for (const uint32_t follower : assignment.replicas) {
    if (follower == assignment.node) continue;
    const auto last = led.caught_up.find(follower);
    const bool caught_up = last != led.caught_up.end() && now - last->second <= lag_max;
    const bool in_sync = assignment.in_sync(follower);
    if (!in_sync && caught_up) {
      std::vector<uint32_t> isr = assignment.isr;
      isr.push_back(follower);
      const auto place = assignment.place_of(assignment.node);
      auto* expand =
          new Expand(shard_.shard_reports(), {.key = key, .epoch = assignment.epoch, .isr = isr});
      address_of(*expand, key);
      expand->epoch = assignment.epoch;
      expand->set = place->set;
      expand->expand = *assignment.member_of(follower);
      led.asked = now;
      led.asked_isr = assignment.isr;
      HARK_LOG_INFO("partition %u/%u/%u: node %u caught up: counted in sync", key.stream.value(),
                    key.topic.value(), key.partition.value(), follower);
      shard_.broker().submit(*expand);
      return;
    }
    if (in_sync && !caught_up && now - led.since >= lag_max) {
      std::vector<uint32_t> isr;
      for (const uint32_t member : assignment.isr) {
        if (member != follower) isr.push_back(member);
      }
      HARK_LOG_WARN("partition %u/%u/%u: node %u has not caught up for %d ms: out of sync",
                    key.stream.value(), key.topic.value(), key.partition.value(), follower,
                    std::chrono::duration_cast<std::chrono::milliseconds>(lag_max).count());
      ask(key, assignment, led, std::move(isr), now);
      return;
    }
  }
}

void Replication::ask(const core::PartitionKey& key, const cluster::Assignment& assignment,
                      Led& led, std::vector<uint32_t> isr, Instant now) {
  led.asked = now;
  led.asked_isr = assignment.isr;
  shard_.shard_reports().push({.key = key, .epoch = assignment.epoch, .isr = std::move(isr)});
}

void Replication::stop() {
  stopped_ = true;
  if (armed()) shard_.reactor().timers().cancel(*this);
  for (auto& [key, fetcher] : fetchers_) {
    fetcher->stop();
    stopping_.push_back(std::move(fetcher));
  }
  fetchers_.clear();
  collect();
}

bool Replication::busy() const {
  return !fetchers_.empty() ||
         std::any_of(stopping_.begin(), stopping_.end(), [](const auto& f) { return !f->idle(); });
}

void Replication::collect() {
  std::erase_if(stopping_, [](const auto& fetcher) { return fetcher->idle(); });
}

}  // namespace hark::server
