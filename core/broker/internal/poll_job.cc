// Poll: evaluated at the partitions' owners, parked at home (internal/poll_job.h has the
// stages, docs/long-polling.md the contract, docs/architecture.md §4 the design).
#include "hark/core/broker/internal/poll_job.h"

#include <algorithm>

#include "hark/core/broker/broker.h"
#include "hark/core/broker/internal/broker_shard.h"
#include "hark/core/broker/internal/flow.h"

namespace hark::core {

void Poll::step(internal::BrokerShard& shard) {
  if (internal::Flow::stage(*this) == internal::Stage::start) {
    // Submitted again only once done() ran, which gave the last job back.
    HARK_ASSERT(job_ == nullptr);
    job_ = &shard.poll_jobs().take(*this);
  }
  HARK_ASSERT(job_ != nullptr);
  job_->step(shard);
}

namespace internal {

PollJobPool::~PollJobPool() {
  // Every poll of this home shard was answered before its shard stopped.
  HARK_ASSERT(in_use() == 0);
  while (free_.pop_front() != nullptr) {
  }
}

PollJob& PollJobPool::take(Poll& poll) {
  if (free_.empty()) {
    jobs_.push_back(std::make_unique<PollJob>());
    free_.push_back(*jobs_.back());
  }
  PollJob& job = *free_.pop_front();
  HARK_ASSERT(job.poll_ == nullptr);
  HARK_ASSERT(job.cells_.empty());
  HARK_ASSERT(job.wait_ == nullptr);
  job.poll_ = &poll;
  job.status_ = ok_status();
  job.watches_.clear();
  job.assigned_.clear();
  job.visiting_ = 0;
  job.cancel_requested_ = false;
  job.woken_ = false;
  job.group_wide_ = false;
  return job;
}

void PollJob::finish(BrokerShard& shard, Status status) {
  Poll& poll = *poll_;
  shard.expect_on(Flow::home(poll));
  HARK_ASSERT(wait_ == nullptr);  // Not parked any more.
  HARK_ASSERT(!ListHook<GroupPollTag>::linked());
  cells_.clear();
  poll.job_ = nullptr;
  shard.poll_jobs().give_back(*this);
  // From here the poll may be reused or destroyed, and this job taken by another poll.
  Flow::finish(poll, shard, std::move(status));
}

void PollJobPool::give_back(PollJob& job) {
  HARK_ASSERT(job.poll_ != nullptr);
  HARK_ASSERT(!job.ListHook<PollJobFreeTag>::linked());
  job.poll_ = nullptr;
  free_.push_back(job);
}

void PollJob::step(BrokerShard& shard) {
  HARK_ASSERT(poll_ != nullptr);
  HARK_ASSERT(poll_->job_ == this);
  switch (Flow::stage(*poll_)) {
    case Stage::start: begin(shard); return;
    case Stage::poll_at_owner: evaluate_at_owner(shard); return;
    case Stage::poll_at_home: evaluated_at_home(shard); return;
    case Stage::poll_cancelled:
      shard.expect_on(Flow::home(*poll_));
      finish(shard, Error::disconnected);
      return;
    default: HARK_UNREACHABLE();
  }
}

void PollJob::cancel(Poll& poll, BrokerShard& shard) {
  shard.expect_on(Flow::home(poll));
  PollJob* const job = poll.job_;
  if (job == nullptr) return;  // Ended already: done() ran.
  if (job->wait_ == nullptr) {
    job->cancel_requested_ = true;  // In flight: it ends when it comes home.
    return;
  }
  shard.waits().cancel(*job->wait_);
  job->unpark(shard);
  Flow::go_to(poll, shard, shard.id(), Stage::poll_cancelled);
}

void PollJob::begin(BrokerShard& shard) {
  Poll& poll = *poll_;
  shard.expect_on(Flow::home(poll));
  poll.result = PollResult{};
  if (poll.replica.has_value() &&
      (poll.from != PollFrom::offset || poll.consumer.kind == ConsumerRef::Kind::group)) {
    finish(shard, Error::invalid_format);  // A follower's fetch reads one partition by offset.
    return;
  }
  if (poll.consumer.kind == ConsumerRef::Kind::group) {
    const Status resolved = resolve_group(shard);
    if (!resolved.ok()) {
      finish(shard, resolved);
      return;
    }
  }
  if (!group_wide_) {
    auto cell = shard.catalog().partition(poll.stream, poll.topic, poll.partition.value_or(0));
    if (!cell.ok()) {
      finish(shard, cell.error());
      return;
    }
    cells_.push_back(std::move(cell).value());
  }
  const Duration clamped = std::clamp(poll.wait, Duration(0), shard.options().max_wait);
  deadline_ = saturating_add(shard.reactor().clock().monotonic_now(), clamped);
  if (cells_.empty()) {
    // A member with no partitions (more members than partitions): nothing to read or wait
    // on until a rebalance; answered empty at once.
    finish(shard, ok_status());
    return;
  }
  poll.result.partition_id = cells_.front()->key.partition.value();
  if (!group_wide_) poll.result.owner_shard = cells_.front()->owner();
  if (poll.count == 0) {
    poll.result.current_offset = cells_.front()->current_offset();
    answer(shard);
    return;
  }
  evaluate(shard);
}

Status PollJob::resolve_group(BrokerShard& shard) {
  const Poll& poll = *poll_;
  HARK_ASSERT(poll.consumer.kind == ConsumerRef::Kind::group);
  HARK_ASSERT(cells_.empty());
  HARK_TRY_ASSIGN(const TopicEntry* const entry, shard.catalog().topic(poll.stream, poll.topic));
  HARK_TRY_ASSIGN(const GroupEntry* const found, entry->group(poll.group));
  poll_->consumer.id = found->id;
  const GroupMemberInfo* const joined = found->member(poll.member);
  if (joined == nullptr) return Error::consumer_group_member_not_found;
  if (poll.partition.has_value()) return ok_status();
  group_wide_ = true;
  assigned_ = joined->partitions;
  // Round robin over the assignment, as Iggy 0.8.0: each poll starts one further. An
  // immediate poll reads that one partition only, as Iggy does (empty if it is; clients such
  // as Iggy's Node SDK count on it); a poll that may wait reads on from there and waits on
  // the whole assignment, so a send to any assigned partition answers it.
  const size_t first =
      assigned_.empty() ? 0 : shard.next_group_start(*found, poll.member) % assigned_.size();
  const size_t read =
      poll.wait > Duration(0) ? assigned_.size() : std::min<size_t>(1, assigned_.size());
  for (size_t i = 0; i < read; i++) {
    cells_.push_back(entry->partitions[assigned_[(first + i) % assigned_.size()]]);
  }
  return ok_status();
}

void PollJob::evaluate(BrokerShard& shard) {
  shard.expect_on(Flow::home(*poll_));
  HARK_ASSERT(!cells_.empty());
  status_ = ok_status();
  watches_.clear();
  visiting_ = 0;
  poll_->result.messages = storage::ReadView();
  visit_next(shard);
}

void PollJob::visit_next(BrokerShard& shard) {
  HARK_ASSERT(visiting_ < cells_.size());
  const ShardId owner = cells_[visiting_]->owner();
  if (owner == shard.id()) {
    evaluate_at_owner(shard);
  } else {
    Flow::go_to(*poll_, shard, owner, Stage::poll_at_owner);
  }
}

void PollJob::evaluate_at_owner(BrokerShard& shard) {
  HARK_ASSERT(visiting_ < cells_.size());
  PartitionCell& cell = *cells_[visiting_];
  shard.expect_on(cell.owner());
  const Poll& poll = *poll_;
  Partition* const owner = shard.owned(cell);
  if (owner == nullptr) {
    // Deleted, or (for a group member right after a rebalance) not opened by its owner yet:
    // a member skips it and waits on the rest; a single-partition poll gets the error.
    if (!group_wide_) status_ = shard.missing(cell);
    evaluated_here(shard);
    return;
  }
  if (poll.replica.has_value()) {
    evaluate_fetch(shard, *owner);
    return;
  }
  const Result<Offset> first = owner->start_for(poll.from, poll.value, poll.count, poll.consumer);
  if (!first.ok()) {
    status_ = first.error();
    evaluated_here(shard);
    return;
  }
  // The owner can read for a woken poll only where `want` is where the poll reads from.
  const bool owner_reads = poll.from == PollFrom::offset || poll.from == PollFrom::next;
  watches_.push_back(Watch{.point = &cell,
                           .want = *first,
                           .min_messages = std::max<uint32_t>(1, poll.min_messages),
                           .epoch = cell.snapshot().epoch,
                           .read_count = owner_reads ? poll.count : 0});
  if (poll.copy) poll_->result.sealed_segment = owner->log().sealed_segment_at(*first);
  owner->log().read(*first, poll.count, shard.options().poll_bytes_max, *this);
}

// A follower's fetch at its leader: the fetch's offset acknowledges what it holds, then a read
// up to the appended end, or a watch on the appended point (woken by the next append).
void PollJob::evaluate_fetch(BrokerShard& shard, Partition& owner) {
  const Poll& poll = *poll_;
  PartitionCell& cell = *cells_[visiting_];
  status_ = owner.follower_fetch(*poll.replica, Offset(poll.value));
  poll_->result.epoch_start = owner.epoch_start();
  if (!status_.ok()) {
    evaluated_here(shard);
    return;
  }
  watches_.push_back(Watch{.point = &cell.appended,
                           .want = Offset(poll.value),
                           .min_messages = 1,
                           .epoch = cell.appended.snapshot().epoch,
                           .read_count = poll.count});
  // Offsets the follower lacks go with this answer, which then does not wait; else the fetch
  // also waits for the next change of them.
  const uint64_t version = owner.offsets_version();
  poll_->result.offsets_version = version;
  if (poll.replica->offsets_version != version) {
    poll_->result.offsets = owner.stored_offsets();
  } else {
    watches_.push_back(Watch{.point = &cell.offsets,
                             .want = Offset(version),
                             .min_messages = 1,
                             .epoch = cell.offsets.snapshot().epoch});
  }
  if (poll.copy) poll_->result.sealed_segment = owner.log().sealed_segment_at(Offset(poll.value));
  owner.log().read(Offset(poll.value), poll.count, shard.options().poll_bytes_max, *this,
                   storage::ReadBound::appended);
}

void PollJob::read_done(Result<storage::ReadView> view) {
  BrokerShard& shard = *BrokerShard::current();
  shard.expect_on(cells_[visiting_]->owner());
  if (view.ok()) {
    poll_->result.messages = std::move(view).value();
  } else {
    status_ = view.error();
  }
  evaluated_here(shard);
}

// At an owner, after one partition: on to the next owner, or home.
void PollJob::evaluated_here(BrokerShard& shard) {
  const PartitionCell& cell = *cells_[visiting_];
  shard.expect_on(cell.owner());
  PollResult& result = poll_->result;
  if (status_.ok() && result.messages.empty() && visiting_ + 1 < cells_.size()) {
    visiting_++;
    visit_next(shard);
    return;
  }
  if (status_.ok() && !result.messages.empty()) {
    result.partition_id = cell.key.partition.value();
    result.current_offset = cell.current_offset();
  } else {
    report_waited_on();
  }
  if (shard.id() == Flow::home(*poll_)) {
    evaluated_at_home(shard);
  } else {
    Flow::go_to(*poll_, shard, Flow::home(*poll_), Stage::poll_at_home);
  }
}

void PollJob::evaluated_at_home(BrokerShard& shard) {
  const Poll& poll = *poll_;
  shard.expect_on(Flow::home(poll));
  HARK_ASSERT(wait_ == nullptr);
  if (status_.error() == Error::partition_not_found) {
    answer_gone(shard);
  } else if (!status_.ok()) {
    finish(shard, status_);
  } else if (cancel_requested_) {
    finish(shard, Error::disconnected);
  } else if (!poll.result.messages.empty() || poll.result.offsets.has_value() ||
             poll.wait <= Duration(0) || shard.shutting_down() ||
             shard.reactor().clock().monotonic_now() >= deadline_) {
    answer(shard);
  } else {
    park(shard);
  }
}

void PollJob::park(BrokerShard& shard) {
  shard.expect_on(Flow::home(*poll_));
  HARK_ASSERT(wait_ == nullptr);
  // Parked polls hold partitions by their commit points, which live as long as a catalog
  // lists them: park only on partitions this shard still sees (then none is retired yet).
  for (const auto& cell : cells_) {
    if (shard.catalog().find(cell->key) != cell.get()) {
      answer_gone(shard);
      return;
    }
  }
  if (group_wide_ && !shard.group_unchanged(*this)) {
    reassigned(shard);  // The group rebalanced while the poll was away.
    return;
  }
  if (watches_.empty()) {
    answer_empty(shard);  // Nothing to wait on (see evaluate_at_owner).
    return;
  }
  std::atomic<uint64_t>& total = shard.parked_total();
  if (total.fetch_add(1, std::memory_order_relaxed) >= shard.options().parked_total_max) {
    total.fetch_sub(1, std::memory_order_relaxed);
    finish(shard, Error::feature_unavailable);
    return;
  }
  if (woken_) shard.poll_counters().reparked++;
  const Result<ParkResult> parked = shard.waits().park(watches_, deadline_, *this, 0);
  if (!parked.ok()) {
    total.fetch_sub(1, std::memory_order_relaxed);
    finish(shard, parked.error());
    return;
  }
  if (parked->state == WaitState::waiting) {
    wait_ = parked->wait;
    if (group_wide_) shard.park_group_poll(*this);
    return;
  }
  total.fetch_sub(1, std::memory_order_relaxed);
  // Committed, purged, deleted or moved between the evaluation and the push: evaluate again
  // (which answers a deleted partition's error, or parks in the new epoch). The abort reason
  // is not read here: an owner publishes it with the hand-back, which has not come yet.
  evaluate(shard);
}

void PollJob::unpark(BrokerShard& shard) {
  shard.expect_on(Flow::home(*poll_));
  HARK_ASSERT(wait_ != nullptr);
  wait_ = nullptr;
  shard.parked_total().fetch_sub(1, std::memory_order_relaxed);
  if (group_wide_) shard.unpark_group_poll(*this);
}

const PartitionCell& PollJob::cell_of(const Registration& winner) const {
  for (const auto& cell : cells_) {
    if (static_cast<const CommitPoint*>(cell.get()) == &winner.point()) return *cell;
    if (&cell->appended == &winner.point()) return *cell;  // A follower's fetch.
    if (&cell->offsets == &winner.point()) return *cell;
  }
  HARK_UNREACHABLE();  // A registration is pushed only on a point of the poll's cells.
}

void PollJob::on_wait_done(Wait& parked, WaitState state, Registration* winner) {
  BrokerShard& shard = *BrokerShard::current();
  HARK_ASSERT(&parked == wait_);
  unpark(shard);
  switch (state) {
    case WaitState::notified: {
      storage::ReadView view = winner != nullptr ? winner->take_view() : storage::ReadView();
      if (!view.empty()) {
        const PartitionCell& cell = cell_of(*winner);
        PollResult& result = poll_->result;
        result.messages = std::move(view);
        result.partition_id = cell.key.partition.value();
        result.current_offset = cell.current_offset();
        answer(shard);
      } else {
        woken_ = true;
        shard.poll_counters().reevaluated++;
        evaluate(shard);
      }
      return;
    }
    case WaitState::aborted: on_abort(shard, parked.abort_reason()); return;
    default: answer_empty(shard); return;
  }
}

GroupAddress PollJob::group_address() const {
  return GroupAddress{.stream = &poll_->stream,
                      .topic = &poll_->topic,
                      .group = &poll_->group,
                      .member = poll_->member,
                      .assigned = &assigned_};
}

void PollJob::rebalanced(BrokerShard& shard) {
  shard.expect_on(Flow::home(*poll_));
  HARK_ASSERT(group_wide_);
  shard.waits().cancel(*wait_);
  unpark(shard);
  woken_ = true;
  reassigned(shard);
}

void PollJob::reassigned(BrokerShard& shard) {
  shard.expect_on(Flow::home(*poll_));
  // The group or the member may be gone: resolve again, keeping the deadline.
  cells_.clear();
  const Status resolved = resolve_group(shard);
  if (!resolved.ok()) {
    finish(shard, resolved);
    return;
  }
  if (cells_.empty()) {
    answer(shard);
    return;
  }
  evaluate(shard);
}

void PollJob::on_abort(BrokerShard& shard, AbortReason reason) {
  HARK_ASSERT(reason != AbortReason::none);
  switch (reason) {
    case AbortReason::deleted: answer_gone(shard); return;
    case AbortReason::moved:
      evaluate(shard);  // Asks the new owner, keeping the deadline.
      return;
    default:
      answer_empty(shard);  // Purge, shutdown.
      return;
  }
}

void PollJob::report_waited_on() {
  HARK_ASSERT(!cells_.empty());
  // The partition waited on; for a group member, the first one assigned to it
  // (docs/long-polling.md §When a poll parks).
  const PartitionCell* reported = cells_.front().get();
  for (const auto& cell : cells_) {
    if (group_wide_ && cell->key.partition.value() == assigned_.front()) reported = cell.get();
  }
  poll_->result.partition_id = reported->key.partition.value();
  poll_->result.current_offset = reported->current_offset();
}

void PollJob::answer(BrokerShard& shard) {
  // A follower learns the commit point from its fetches' answers.
  if (poll_->replica.has_value()) {
    poll_->result.commit_end = cells_.front()->snapshot().next_offset;
    poll_->result.appended_end = cells_.front()->appended.snapshot().next_offset;
  }
  finish(shard, ok_status());
}

void PollJob::answer_empty(BrokerShard& shard) {
  poll_->result.messages = storage::ReadView();
  report_waited_on();
  answer(shard);
}

void PollJob::answer_gone(BrokerShard& shard) {
  shard.expect_on(Flow::home(*poll_));
  // The error an immediate poll gets now: 1009/1010, 2010/2011, 3007, or the group's; a
  // group member polling its assignment is evaluated again on what it has now.
  cells_.clear();
  const Poll& poll = *poll_;
  if (poll.consumer.kind == ConsumerRef::Kind::group) {
    const Status resolved = resolve_group(shard);
    if (!resolved.ok()) {
      finish(shard, resolved);
      return;
    }
    if (group_wide_) {
      if (cells_.empty()) {
        answer(shard);
      } else {
        evaluate(shard);
      }
      return;
    }
  }
  const auto again = shard.catalog().partition(poll.stream, poll.topic, poll.partition.value_or(0));
  finish(shard, again.ok() ? Status(Error::partition_not_found) : Status(again.error()));
}

}  // namespace internal
}  // namespace hark::core
