#include "hark/core/broker/internal/partition.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "hark/core/base/log.h"

namespace hark::core::internal {

Partition::Partition(WaitShard& waits, Ref<PartitionCell> cell,
                     std::unique_ptr<storage::PartitionLog> log,
                     std::unique_ptr<OffsetStore> offsets, uint64_t poll_bytes_max)
    : waits_(waits),
      cell_(std::move(cell)),
      log_(std::move(log)),
      offsets_(std::move(offsets)),
      poll_bytes_max_(poll_bytes_max) {
  HARK_ASSERT(log_ != nullptr);
  HARK_ASSERT(offsets_ != nullptr);
  log_->set_commit_listener(this);
  offsets_->set_listener(this);
  // A replicated log knows only its checkpoint's commit to be committed (docs/cluster.md
  // §Replication, Truncation); the rest commits again as its replica set confirms it.
  state_ = storage::load_replica_state(log_->directory());
  if (state_) log_->recovered_commit(Offset(state_->commit));
  // A recovered log starts where its data ends; a fresh one at 0.
  cell_->publish(log_->next_offset().value());
  cell_->clear_dirty();
  cell_->appended.publish(log_->appended_end().value());
  cell_->appended.clear_dirty();
  // The clock makes a reopened partition's versions unlike the last opening's (whose followers
  // may hold one of them); the cell's, that they only grow on it.
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  offsets_version_ =
      std::max<uint64_t>(cell_->offsets.snapshot().next_offset + 1,
                         std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  cell_->offsets.publish(offsets_version_);
  cell_->offsets.clear_dirty();
  publish_figures();
}

Partition::~Partition() {
  HARK_ASSERT(offset_waiters_.empty());  // close() answered them.
  log_->set_commit_listener(nullptr);
  // Released points have no hook any more; one never adopted or not released must not keep
  // a dangling one.
  if (cell_->win_hook() == this) cell_->set_win_hook(nullptr);
  if (cell_->appended.win_hook() == &appended_hook_) cell_->appended.set_win_hook(nullptr);
}

Result<storage::AppendResult> Partition::append(std::span<const std::byte> messages,
                                                uint32_t count) {
  // A follower holds only what its leader stored: a send goes to the leader (retryable there).
  if (log_->following()) return Error::shard_communication_error;
  HARK_TRY_ASSIGN(const storage::AppendResult appended, log_->append(messages, count));
  publish_appended();
  publish_figures();
  return appended;
}

Result<storage::AppendResult> Partition::append_stored(
    std::span<const std::byte> messages, uint32_t count,
    std::optional<storage::SegmentBounds> source) {
  if (log_->replicas() > 1) return Error::shard_communication_error;
  HARK_TRY_ASSIGN(const storage::AppendResult appended,
                  log_->append_stored(messages, count, source));
  publish_appended();
  publish_figures();
  return appended;
}

void Partition::publish_appended() {
  const uint64_t end = log_->appended_end().value();
  if (end >= cell_->appended.snapshot().next_offset) {
    waits_.publish(cell_->appended, end);
  } else {
    waits_.reset(cell_->appended, end);  // Rolled back or truncated: fetches parked there end.
  }
}

Status Partition::replicate(const ReplicaPlace& place, Offset leader_commit) {
  if (place.epoch < epoch_) return Error::shard_communication_error;
  if (place.role == ReplicaRole::follower) {
    if (place.epoch != epoch_ || !log_->following()) {
      log_->follow();
      fail_offset_waiters(Error::shard_communication_error);  // Deposed: sent again to the leader.
    }
    epoch_ = place.epoch;
    set_ = place.set;
    const Offset before = log_->next_offset();
    log_->learn_commit(leader_commit);
    // The checkpoint a later truncation may fall back to (unsynced: a stale one is only lower).
    if (state_ && log_->next_offset() > before) (void)store_state(false);
    return ok_status();
  }
  if (place.epoch != epoch_ || log_->following() || place.replicas != log_->replicas() ||
      place.set != set_) {
    if (place.replicas > 1 && (!state_ || state_->epoch < place.epoch)) {
      state_ =
          storage::ReplicaState{.epoch = place.epoch, .epoch_start = log_->appended_end().value()};
      HARK_TRY(store_state(true));
    }
    HARK_TRY(log_->lead(place.replicas));
    expanded_ = 0;
    offsets_held_.fill(0);  // The followers say again at their next fetch.
  }
  epoch_ = place.epoch;
  set_ = place.set;
  view_in_sync_ = place.in_sync;
  expanded_ &= ~place.in_sync;
  log_->set_in_sync(view_in_sync_ | expanded_);
  settle_offsets();  // A follower out of the set is waited for no more.
  return ok_status();
}

Status Partition::expand_in_sync(uint64_t epoch, uint64_t set, uint32_t member) {
  if (log_->following() || epoch != epoch_ || set != set_ || member == 0 ||
      member >= log_->replicas()) {
    return Error::shard_communication_error;
  }
  expanded_ |= 1u << member;
  log_->set_in_sync(view_in_sync_ | expanded_);
  return ok_status();
}

Status Partition::follower_fetch(const ReplicaFetch& fetch, Offset from) {
  if (log_->following() || fetch.epoch != epoch_ || fetch.set != set_) {
    return Error::shard_communication_error;
  }
  HARK_TRY(log_->report_durable(fetch.member, from));
  offsets_held_[fetch.member] = fetch.offsets_version;
  settle_offsets();
  return ok_status();
}

Status Partition::truncate(Offset end, uint64_t epoch) {
  if (end > log_->appended_end()) return Error::invalid_offset;
  if (end < log_->appended_end()) HARK_TRY(log_->truncate(end));
  publish_appended();
  publish_figures();
  if (epoch == 0) return ok_status();
  state_ = storage::ReplicaState{.epoch = epoch};
  return store_state(true);
}

Status Partition::store_state(bool sync) {
  HARK_ASSERT(state_.has_value());
  state_->commit = std::max(state_->commit, log_->next_offset().value());
  const Status stored = storage::store_replica_state(log_->directory(), *state_, sync);
  if (!stored.ok()) {
    HARK_LOG_ERROR("partition %s: its replica state could not be written (%s)", log_->directory(),
                   std::string(error_name(stored.error())));
  }
  return stored;
}

void Partition::AppendedHook::on_won(Registration& registration) {
  HARK_ASSERT(&registration.point() == &partition_.cell_->appended);
  HARK_ASSERT(registration.read_count() > 0);
  std::optional<storage::ReadView> view =
      partition_.log_->read_memory(registration.want(), registration.read_count(),
                                   partition_.poll_bytes_max_, storage::ReadBound::appended);
  if (view.has_value()) registration.attach(std::move(*view));
}

bool Partition::AppendedHook::judge(Registration& /*registration*/) {
  HARK_UNREACHABLE();  // No condition waits on the appended end.
}

bool Partition::hold(Append& append) {
  HARK_ASSERT(fenced_);
  if (held_.size() >= held_max) return false;
  held_.push_back(&append);
  return true;
}

std::vector<Append*> Partition::lift_fence() {
  fenced_ = false;
  return std::exchange(held_, {});
}

void Partition::on_won(Registration& registration) {
  HARK_ASSERT(&registration.point() == cell_.get());
  HARK_ASSERT(registration.read_count() > 0);
  // Just committed, so normally still in memory; if not, the home evaluates the poll again.
  std::optional<storage::ReadView> view =
      log_->read_memory(registration.want(), registration.read_count(), poll_bytes_max_);
  if (view.has_value()) registration.attach(std::move(*view));
}

Verdict Partition::evaluate(const Condition& condition, const ConditionRequest& request,
                            std::span<std::byte, condition_answer_max> answer) {
  waits_.count_condition_evaluation();
  Verdict verdict = condition.evaluate(facts(), request, answer);
  verdict.answer_size = std::min<uint32_t>(verdict.answer_size, condition_answer_max);
  return verdict;
}

bool Partition::judge(Registration& registration) {
  HARK_ASSERT(&registration.point() == cell_.get());
  ConditionSlot& slot = *registration.condition();
  const Verdict verdict = evaluate(*slot.condition, slot.request(), slot.answer);
  slot.wake_at = verdict.wake_at;
  if (slot.condition->totals()) {
    report(registration, verdict);
    return false;  // Only the home, which sums, can tell.
  }
  slot.answer_size = verdict.satisfied ? verdict.answer_size : 0;
  return verdict.satisfied;
}

void Partition::report(Registration& registration, const Verdict& verdict) {
  ConditionSlot& slot = *registration.condition();
  slot.report.write(verdict.measure, slot.answer, verdict.answer_size);
  waits_.report(registration);
}

void Partition::commit_advanced(Offset next_offset) {
  waits_.publish(*cell_, next_offset.value());
  publish_figures();
}

Status Partition::purge(WaitShard& waits) {
  HARK_ASSERT(&waits == &waits_);  // The owner's, which the cell was adopted by.
  HARK_TRY(log_->purge());
  offsets_->clear();
  offsets_changed();
  waits.reset(*cell_, log_->next_offset().value());
  waits.reset(cell_->appended, log_->appended_end().value());
  publish_figures();
  return ok_status();
}

Status Partition::apply_retention() {
  HARK_TRY_ASSIGN(const uint32_t deleted, log_->apply_retention());
  if (deleted > 0) publish_figures();
  return ok_status();
}

Result<uint32_t> Partition::delete_segments(uint32_t count) {
  HARK_TRY_ASSIGN(const uint32_t deleted, log_->delete_segments(count));
  publish_figures();
  return deleted;
}

Result<Offset> Partition::start_for(PollFrom from, uint64_t value, uint32_t count,
                                    const ConsumerRef& consumer) const {
  const Offset next = log_->next_offset();
  HARK_ASSERT(next.value() >= log_->first_offset().value());  // `last` subtracts them.
  switch (from) {
    case PollFrom::offset: return Offset(value);
    case PollFrom::timestamp: return log_->offset_for_timestamp(value);
    case PollFrom::first: return log_->first_offset();
    case PollFrom::last: {
      const uint64_t back = std::min<uint64_t>(count, next.value() - log_->first_offset().value());
      return Offset(next.value() - back);
    }
    case PollFrom::next: {
      const std::optional<uint64_t> stored = stored_offset(consumer);
      return stored ? std::max(Offset(*stored + 1), log_->first_offset()) : log_->first_offset();
    }
  }
  return Error::invalid_format;
}

std::optional<uint64_t> Partition::stored_offset(const ConsumerRef& consumer) const {
  return offsets_->get(consumer);
}

Status Partition::store_offset(const ConsumerRef& consumer, uint64_t offset, OffsetWritten& done) {
  // A follower's offsets are its leader's (adopt_offsets): stores go to the leader.
  if (log_->following()) return Error::shard_communication_error;
  if (log_->empty() && log_->next_offset().value() == 0) return Error::invalid_offset;
  if (offset >= log_->next_offset().value()) return Error::invalid_offset;
  done.version_ = offsets_version_ + 1;  // The version this change makes (offsets_changed).
  offsets_->set(consumer, offset, done);
  HARK_ASSERT(offsets_->get(consumer) == offset);  // Seen at once, written later.
  offsets_changed();
  return ok_status();
}

Status Partition::delete_offset(const ConsumerRef& consumer, OffsetWritten& done) {
  if (log_->following()) return Error::shard_communication_error;
  done.version_ = offsets_version_ + 1;
  if (!offsets_->erase(consumer, done)) return Error::consumer_offset_not_found;
  offsets_changed();
  return ok_status();
}

std::vector<std::pair<ConsumerRef, uint64_t>> Partition::stored_offsets() const {
  std::vector<std::pair<ConsumerRef, uint64_t>> offsets;
  offsets_->for_each([&](const ConsumerRef& consumer, uint64_t offset) {
    offsets.emplace_back(consumer, offset);
  });
  return offsets;
}

Result<bool> Partition::adopt_offsets(std::span<const std::pair<ConsumerRef, uint64_t>> offsets,
                                      OffsetWritten& done) {
  if (!log_->following()) return Error::shard_communication_error;
  done.version_ = 0;  // A follower's: nobody else to wait for.
  if (!offsets_->adopt(offsets, done)) return false;
  offsets_changed();
  return true;
}

void Partition::offsets_changed() {
  waits_.offsets_changed(*cell_);
  offsets_version_++;
  // Only followers' fetches wait there: a partition without followers (an auto-commit after
  // every poll) spares the point. A fetch parks with a threshold past the version it saw, so a
  // point lagging behind unpublished versions wakes nobody early.
  if (log_->replicas() > 1) waits_.publish(cell_->offsets, offsets_version_);
}

void Partition::offset_written(OffsetWritten& done, Status status) {
  if (status.ok() && done.version_ != 0 && log_->following()) {
    status = Error::shard_communication_error;  // Deposed while it was written: not held.
  } else if (status.ok() && !offsets_replicated(done.version_)) {
    offset_waiters_.push_back(done);
    return;
  }
  done.offset_written(std::move(status));
}

bool Partition::offsets_replicated(uint64_t version) const {
  const uint32_t members = log_->replicas();  // A follower's: 1.
  uint32_t holding = 1;                       // The leader.
  for (uint32_t member = 1; member < members; member++) {
    if (offsets_held_[member] >= version) {
      holding++;
    } else if ((log_->in_sync() & (1u << member)) != 0) {
      return false;
    }
  }
  return holding > members / 2;
}

void Partition::settle_offsets() {
  while (!offset_waiters_.empty() && offsets_replicated(offset_waiters_.front().version_)) {
    offset_waiters_.pop_front()->offset_written(ok_status());
  }
}

void Partition::fail_offset_waiters(Error error) {
  while (OffsetWritten* done = offset_waiters_.pop_front()) done->offset_written(error);
}

void Partition::close() {
  // Commits that closing completes answer their producers; parked polls are answered by the
  // shutdown or delete that closes the partition, so nothing needs publishing any more.
  log_->set_commit_listener(nullptr);
  log_->close();
  offsets_->close();
  // Written here, not known to be held by the followers: retryable.
  fail_offset_waiters(Error::shard_communication_error);
  offsets_->set_listener(nullptr);
}

PartitionFacts Partition::facts() const {
  PartitionFacts facts(*this);
  facts.stream_id = cell_->key.stream.value();
  facts.topic_id = cell_->key.topic.value();
  facts.partition_id = cell_->key.partition.value();
  facts.first_offset = log_->first_offset().value();
  facts.next_offset = log_->next_offset().value();
  facts.size_bytes = log_->size_bytes();
  facts.last_append_timestamp = log_->last_timestamp();
  facts.now = waits_.clock().realtime_now();
  return facts;
}

void Partition::publish_figures() {
  cell_->size_bytes.store(log_->size_bytes(), std::memory_order_relaxed);
  cell_->messages_count.store(log_->messages_count(), std::memory_order_relaxed);
  cell_->segments_count.store(log_->segments_count(), std::memory_order_relaxed);
}

}  // namespace hark::core::internal

namespace hark::core {

std::optional<uint64_t> PartitionFacts::stored_offset(const ConsumerRef& consumer) const {
  return partition_.stored_offset(consumer);
}

}  // namespace hark::core
