// Notify: a condition evaluated at the partitions' owners, parked at home
// (internal/notify_job.h has the stages, docs/notifications.md the contract).
#include "hark/core/broker/internal/notify_job.h"

#include <algorithm>

#include "hark/core/base/log.h"
#include "hark/core/broker/broker.h"
#include "hark/core/broker/internal/broker_shard.h"
#include "hark/core/broker/internal/flow.h"

namespace hark::core {

Notify::Notify() = default;

Notify::~Notify() { HARK_ASSERT(!running_); }

void Notify::step(internal::BrokerShard& shard) {
  if (internal::Flow::stage(*this) == internal::Stage::start) {
    HARK_ASSERT(!running_);  // Submitted again only once done() ran.
    if (job_ == nullptr) job_ = std::make_unique<internal::NotifyJob>(*this);
    running_ = true;
  }
  job_->step(shard);
}

namespace internal {

void NotifyJob::step(BrokerShard& shard) {
  switch (Flow::stage(notify_)) {
    case Stage::start: begin(shard); return;
    case Stage::notify_at_owner: evaluate_at_owner(shard); return;
    case Stage::notify_at_home: evaluated_at_home(shard); return;
    case Stage::notify_cancelled:
      shard.expect_on(Flow::home(notify_));
      finish(shard, Error::disconnected);
      return;
    default: HARK_UNREACHABLE();
  }
}

void NotifyJob::cancel(Notify& notify, BrokerShard& shard) {
  shard.expect_on(Flow::home(notify));
  NotifyJob* const job = notify.job_.get();
  if (job == nullptr || !notify.running_) return;  // Ended already: done() ran.
  if (job->wait_ == nullptr) {
    job->cancel_requested_ = true;  // In flight: it ends when it comes home.
    return;
  }
  shard.waits().cancel(*job->wait_);
  job->unpark(shard);
  Flow::go_to(notify, shard, shard.id(), Stage::notify_cancelled);
}

void NotifyJob::finish(BrokerShard& shard, Status status) {
  shard.expect_on(Flow::home(notify_));
  HARK_ASSERT(wait_ == nullptr);
  HARK_ASSERT(!ListHook<GroupPollTag>::linked());
  cells_.clear();
  notify_.running_ = false;
  // From here the Notify may be reused or destroyed, and this job with it.
  Flow::finish(notify_, shard, std::move(status));
}

void NotifyJob::begin(BrokerShard& shard) {
  shard.expect_on(Flow::home(notify_));
  notify_.answers.clear();
  watches_.clear();
  cancel_requested_ = false;
  Status status = check_condition(shard);
  if (status.ok()) status = resolve(shard);
  if (!status.ok()) {
    finish(shard, status);
    return;
  }
  const Duration clamped = std::clamp(notify_.wait, Duration(0), shard.options().max_wait);
  deadline_ = saturating_add(shard.reactor().clock().monotonic_now(), clamped);
  if (cells_.empty()) {
    finish(shard, ok_status());  // A member with no partitions: nothing to wait on.
    return;
  }
  evaluate(shard);
}

Status NotifyJob::check_condition(BrokerShard& shard) {
  const Condition* const condition = shard.conditions().find(notify_.condition);
  if (condition == nullptr) {
    HARK_LOG_WARN("notification for unknown condition '%s'", notify_.condition);
    return Error::resource_not_found;
  }
  if (notify_.params.size() > condition_params_max) return Error::invalid_format;
  HARK_TRY(condition->check(notify_.params));
  request_.condition = condition;
  totals_ = condition->totals();
  request_.consumer = notify_.consumer;
  request_.params_size = static_cast<uint32_t>(notify_.params.size());
  std::copy(notify_.params.begin(), notify_.params.end(), request_.params.begin());
  return ok_status();
}

Status NotifyJob::resolve(BrokerShard& shard) {
  cells_.clear();
  assigned_.clear();
  group_wide_ = false;
  many_ = false;
  HARK_TRY_ASSIGN(const TopicEntry* const topic,
                  shard.catalog().topic(notify_.stream, notify_.topic));
  if (notify_.consumer.kind == ConsumerRef::Kind::group) HARK_TRY(resolve_group(shard, *topic));
  if (group_wide_) return ok_status();
  if (notify_.partition.has_value()) {
    HARK_TRY_ASSIGN(auto cell,
                    shard.catalog().partition(notify_.stream, notify_.topic, *notify_.partition));
    cells_.push_back(std::move(cell));
    return ok_status();
  }
  many_ = true;  // A consumer on every partition of the topic.
  cells_ = topic->partitions;
  return ok_status();
}

Status NotifyJob::resolve_group(BrokerShard& shard, const TopicEntry& topic) {
  (void)shard;
  HARK_TRY_ASSIGN(const GroupEntry* const found, topic.group(notify_.group));
  notify_.consumer.id = found->id;
  request_.consumer = notify_.consumer;
  const GroupMemberInfo* const joined = found->member(notify_.member);
  // A watcher that has not joined (an autoscaler) is no consumer: it addresses the partition
  // given or the topic's, with the group's stored offsets, and no rebalance moves it.
  if (joined == nullptr || notify_.partition.has_value()) return ok_status();
  group_wide_ = true;
  many_ = true;
  assigned_ = joined->partitions;
  for (const uint32_t id : assigned_) cells_.push_back(topic.partitions[id]);
  return ok_status();
}

void NotifyJob::evaluate(BrokerShard& shard) {
  shard.expect_on(Flow::home(notify_));
  HARK_ASSERT(!cells_.empty());
  status_ = ok_status();
  watches_.clear();
  notify_.answers.clear();
  notify_.total.reset();
  measured_.assign(cells_.size(), Measured{});
  visiting_ = 0;
  visit_next(shard);
}

void NotifyJob::visit_next(BrokerShard& shard) {
  const ShardId owner = cells_[visiting_]->owner();
  if (owner == shard.id()) {
    evaluate_at_owner(shard);
  } else {
    Flow::go_to(notify_, shard, owner, Stage::notify_at_owner);
  }
}

void NotifyJob::evaluate_at_owner(BrokerShard& shard) {
  PartitionCell& cell = *cells_[visiting_];
  shard.expect_on(cell.owner());
  Partition* const owner = shard.owned(cell);
  if (owner == nullptr) {
    // Deleted, or not opened by its owner yet: skipped by a request over several partitions.
    if (!many_) status_ = shard.missing(cell);
    evaluated_here(shard);
    return;
  }
  // Read on the owner, which alone changes it: the home's re-check compares against this.
  const CommitSnapshot seen = cell.snapshot();
  NotifyAnswer answer{.partition_id = cell.key.partition.value()};
  const Verdict verdict = owner->evaluate(*request_.condition, request_.request(), answer.bytes);
  if (totals_) {
    answer.size = verdict.answer_size;
    measured_[visiting_] = Measured{.answer = answer, .measure = verdict.measure, .known = true};
  }
  if (verdict.satisfied && !totals_) {
    answer.size = verdict.answer_size;
    notify_.answers.push_back(answer);
  } else {
    watches_.push_back(Watch{.point = &cell,
                             .want = Offset(seen.next_offset),
                             .min_messages = 1,
                             .epoch = seen.epoch,
                             .read_count = 0,
                             .condition = &request_,
                             .wake_at = verdict.wake_at,
                             .offsets = seen.offsets});
  }
  evaluated_here(shard);
}

void NotifyJob::evaluated_here(BrokerShard& shard) {
  if (status_.ok() && visiting_ + 1 < cells_.size()) {
    visiting_++;
    visit_next(shard);
    return;
  }
  if (shard.id() == Flow::home(notify_)) {
    evaluated_at_home(shard);
  } else {
    Flow::go_to(notify_, shard, Flow::home(notify_), Stage::notify_at_home);
  }
}

void NotifyJob::evaluated_at_home(BrokerShard& shard) {
  shard.expect_on(Flow::home(notify_));
  HARK_ASSERT(wait_ == nullptr);
  if (status_.error() == Error::partition_not_found) {
    answer_gone(shard);
  } else if (!status_.ok()) {
    finish(shard, status_);
  } else if (cancel_requested_) {
    finish(shard, Error::disconnected);
  } else if (totals_ && total_holds()) {
    answer_total();
    finish(shard, ok_status());
  } else if (!notify_.answers.empty() || notify_.wait <= Duration(0) || shard.shutting_down() ||
             shard.reactor().clock().monotonic_now() >= deadline_) {
    finish(shard, ok_status());
  } else {
    park(shard);
  }
}

void NotifyJob::park(BrokerShard& shard) {
  // As a poll (PollJob::park): only on partitions this shard still lists.
  for (const auto& cell : cells_) {
    if (shard.catalog().find(cell->key) != cell.get()) {
      answer_gone(shard);
      return;
    }
  }
  if (group_wide_ && !shard.group_unchanged(*this)) {
    rebalanced_while_away(shard);
    return;
  }
  if (watches_.empty()) {
    finish(shard, ok_status());
    return;
  }
  std::atomic<uint64_t>& total = shard.parked_total();
  if (total.fetch_add(1, std::memory_order_relaxed) >= shard.options().parked_total_max) {
    total.fetch_sub(1, std::memory_order_relaxed);
    finish(shard, Error::feature_unavailable);
    return;
  }
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
  evaluate(shard);  // Something changed between the evaluation and the push: look again.
}

void NotifyJob::unpark(BrokerShard& shard) {
  shard.expect_on(Flow::home(notify_));
  HARK_ASSERT(wait_ != nullptr);
  wait_ = nullptr;
  shard.parked_total().fetch_sub(1, std::memory_order_relaxed);
  if (group_wide_) shard.unpark_group_poll(*this);
}

void NotifyJob::on_wait_done(Wait& parked, WaitState state, Registration* winner) {
  BrokerShard& shard = *BrokerShard::current();
  HARK_ASSERT(&parked == wait_);
  unpark(shard);
  switch (state) {
    case WaitState::notified: {
      if (winner == nullptr) {  // A total that holds (on_report).
        HARK_ASSERT(totals_);
        answer_total();
        finish(shard, ok_status());
        return;
      }
      HARK_ASSERT(winner->condition() != nullptr);
      const auto& cell = static_cast<const PartitionCell&>(winner->point());
      NotifyAnswer answer{.partition_id = cell.key.partition.value()};
      const std::span<const std::byte> bytes = winner->condition()->answer_bytes();
      std::copy(bytes.begin(), bytes.end(), answer.bytes.begin());
      answer.size = static_cast<uint32_t>(bytes.size());
      notify_.answers.push_back(answer);
      finish(shard, ok_status());
      return;
    }
    case WaitState::aborted: on_abort(shard, parked.abort_reason()); return;
    default: finish(shard, ok_status()); return;  // Timed out: no answers.
  }
}

void NotifyJob::on_report(Wait& parked, Registration& registration) {
  BrokerShard& shard = *BrokerShard::current();
  HARK_ASSERT(&parked == wait_);
  HARK_ASSERT(totals_);
  size_t index = 0;
  while (static_cast<const CommitPoint*>(cells_[index].get()) != &registration.point()) index++;
  // One measurement, whole: a read the owner's next write overlapped would pair this
  // partition's older measure with its newer answer (the total would not be the answers' sum).
  // That write's report follows; judge then.
  ConditionReport::Values values;
  if (!registration.condition()->report.read(values)) return;
  Measured& measured = measured_[index];
  measured.known = true;
  measured.measure = values.measure;
  measured.answer.size = values.answer_size;
  measured.answer.bytes = values.answer;
  // Completing delivers at once (on_wait_done), which may end the Notify: nothing after it.
  if (total_holds()) shard.waits().complete(parked);
}

bool NotifyJob::total_holds() {
  uint64_t total = 0;
  for (const Measured& measured : measured_) {
    if (measured.known) total += measured.measure;
  }
  notify_.total = total;
  return request_.condition->total_holds(total, request_.request().params);
}

void NotifyJob::answer_total() {
  notify_.answers.clear();
  for (const Measured& measured : measured_) {
    if (measured.known) notify_.answers.push_back(measured.answer);
  }
}

void NotifyJob::on_abort(BrokerShard& shard, AbortReason reason) {
  switch (reason) {
    case AbortReason::deleted: answer_gone(shard); return;
    case AbortReason::moved: evaluate(shard); return;
    default: finish(shard, ok_status()); return;  // Purge, shutdown: empty.
  }
}

GroupAddress NotifyJob::group_address() const {
  return GroupAddress{.stream = &notify_.stream,
                      .topic = &notify_.topic,
                      .group = &notify_.group,
                      .member = notify_.member,
                      .assigned = &assigned_};
}

void NotifyJob::rebalanced(BrokerShard& shard) {
  shard.expect_on(Flow::home(notify_));
  shard.waits().cancel(*wait_);
  unpark(shard);
  rebalanced_while_away(shard);
}

void NotifyJob::rebalanced_while_away(BrokerShard& shard) {
  const Status resolved = resolve(shard);
  if (!resolved.ok()) {
    finish(shard, resolved);
  } else if (cells_.empty()) {
    finish(shard, ok_status());
  } else {
    evaluate(shard);
  }
}

void NotifyJob::answer_gone(BrokerShard& shard) {
  shard.expect_on(Flow::home(notify_));
  if (many_) {
    rebalanced_while_away(shard);  // Re-resolved: on the partitions left.
    return;
  }
  const Status resolved = resolve(shard);
  finish(shard, resolved.ok() ? Status(Error::partition_not_found) : resolved);
}

}  // namespace internal
}  // namespace hark::core
