#include "hark/core/wait/commit_point.h"

#include <algorithm>

#include "hark/core/base/assert.h"
#include "hark/core/wait/wait_shard.h"

namespace hark::core {
namespace {

// std heap algorithms build a max-heap: order by "greater threshold" to get a min-heap.
bool later_threshold(const Registration* a, const Registration* b) {
  return a->threshold() > b->threshold();
}

}  // namespace

CommitPoint::~CommitPoint() {
  HARK_ASSERT(pending_.empty());
  HARK_ASSERT(conditioned_.empty());
  HARK_ASSERT(waiters_.empty());
}

CommitSnapshot CommitPoint::snapshot() const {
  while (true) {
    const uint64_t epoch = epoch_.load(std::memory_order_seq_cst);
    const uint64_t next_offset = next_offset_.load(std::memory_order_seq_cst);
    const uint64_t offsets = offsets_.load(std::memory_order_seq_cst);
    if (epoch_.load(std::memory_order_seq_cst) == epoch) return {next_offset, epoch, offsets};
  }
}

bool CommitPoint::publish(uint64_t next_offset) {
  HARK_ASSERT(next_offset >= next_offset_.load(std::memory_order_relaxed));
  next_offset_.store(next_offset, std::memory_order_seq_cst);
  if (dirty_) return false;
  dirty_ = true;
  return true;
}

void CommitPoint::reset(uint64_t next_offset) {
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  next_offset_.store(next_offset, std::memory_order_seq_cst);
}

bool CommitPoint::offsets_changed() {
  // seq_cst, like publish(): pairs with a home's push-then-re-check (WaitShard::recheck).
  offsets_.fetch_add(1, std::memory_order_seq_cst);
  offsets_dirty_ = true;
  if (dirty_) return false;
  dirty_ = true;
  return true;
}

CommitPoint::Absorbed CommitPoint::absorb(HandBack hand_back) {
  Absorbed absorbed;
  if (waiters_.empty()) return absorbed;  // The common commit: nobody new is waiting. No RMW.
  const uint64_t epoch = epoch_.load(std::memory_order_relaxed);
  const uint64_t next_offset = next_offset_.load(std::memory_order_relaxed);
  for (Registration* registration = waiters_.drain(); registration != nullptr;) {
    Registration* next = WaiterList::next(*registration);
    Wait& wait = registration->wait();
    if (wait.state() != WaitState::waiting) {
      hand_back(*registration);
      absorbed.stale++;
    } else if (registration->epoch() != epoch) {
      // Parked against an epoch a purge or delete has ended: answer as the purge would.
      wait.try_abort(AbortReason::purged);
      hand_back(*registration);
    } else if (registration->condition() != nullptr) {
      // Evaluated at the owner when its request was, against the snapshot the home re-checked
      // after the push: only what happens from now on can change its verdict.
      conditioned_.push_back(registration);
      conditioned_wake_ = std::min(conditioned_wake_, registration->condition()->wake_at);
    } else if (registration->threshold() <= next_offset) {
      // Already satisfied: settle it now rather than through the heap, so the first of many
      // woken polls is handed back before the rest are even looked at.
      absorbed.won += try_win(*registration) ? 1 : 0;
      hand_back(*registration);
    } else {
      pending_.push_back(registration);
      std::push_heap(pending_.begin(), pending_.end(), later_threshold);
    }
    registration = next;
  }
  return absorbed;
}

bool CommitPoint::try_win(Registration& registration) {
  if (!registration.wait().try_complete(WaitState::notified)) return false;
  registration.woken_here_ = true;
  return true;
}

size_t CommitPoint::settle(HandBack hand_back) {
  size_t won = absorb(hand_back).won;
  const uint64_t next_offset = next_offset_.load(std::memory_order_relaxed);
  while (!pending_.empty() && pending_.front()->threshold() <= next_offset) {
    std::pop_heap(pending_.begin(), pending_.end(), later_threshold);
    Registration* registration = pending_.back();
    pending_.pop_back();
    won += try_win(*registration) ? 1 : 0;
    hand_back(*registration);
  }
  // The one check a commit pays for condition waiters: none, or none due, evaluates nothing.
  if (!conditioned_.empty() && (offsets_dirty_ || conditioned_wake_ <= next_offset)) {
    won += settle_conditions(hand_back, false);
  }
  offsets_dirty_ = false;
  return won;
}

bool CommitPoint::due(const Registration& registration, uint64_t next_offset, bool sweeping) const {
  const ConditionSlot& slot = *registration.condition();
  return offsets_dirty_ || slot.wake_at <= next_offset ||
         (sweeping && slot.condition->time_dependent());
}

size_t CommitPoint::settle_conditions(HandBack hand_back, bool sweeping) {
  HARK_ASSERT(win_hook_ != nullptr);  // Condition waiters park only on adopted partitions.
  const uint64_t next_offset = next_offset_.load(std::memory_order_relaxed);
  size_t won = 0;
  uint64_t wake = UINT64_MAX;
  size_t kept = 0;
  for (Registration* registration : conditioned_) {
    const bool waiting = registration->wait().state() == WaitState::waiting;
    if (waiting && due(*registration, next_offset, sweeping) && win_hook_->judge(*registration)) {
      won += try_win(*registration) ? 1 : 0;
      hand_back(*registration);
    } else if (!waiting) {
      hand_back(*registration);  // Timed out, cancelled or won elsewhere.
    } else {
      wake = std::min(wake, registration->condition()->wake_at);
      conditioned_[kept++] = registration;
    }
  }
  conditioned_.resize(kept);
  conditioned_wake_ = wake;
  return won;
}

CommitPoint::Swept CommitPoint::sweep(HandBack hand_back) {
  const size_t stale = absorb(hand_back).stale;
  const auto complete = std::partition(pending_.begin(), pending_.end(), [](Registration* r) {
    return r->wait().state() == WaitState::waiting;
  });
  const auto swept = static_cast<size_t>(pending_.end() - complete);
  for (auto it = complete; it != pending_.end(); ++it) hand_back(**it);
  pending_.erase(complete, pending_.end());
  std::make_heap(pending_.begin(), pending_.end(), later_threshold);
  // Time-dependent conditions are evaluated here, and completed condition waiters go home.
  const size_t conditioned = conditioned_.size();
  const size_t won = conditioned_.empty() ? 0 : settle_conditions(hand_back, true);
  return Swept{.zombies = stale + swept + (conditioned - conditioned_.size() - won), .won = won};
}

void CommitPoint::abort_all(AbortReason reason, HandBack hand_back) {
  for (Registration* registration = waiters_.drain(); registration != nullptr;) {
    Registration* next = WaiterList::next(*registration);
    pending_.push_back(registration);
    registration = next;
  }
  pending_.insert(pending_.end(), conditioned_.begin(), conditioned_.end());
  conditioned_.clear();
  conditioned_wake_ = UINT64_MAX;
  for (Registration* registration : pending_) {
    registration->wait().try_abort(reason);
    hand_back(*registration);
  }
  pending_.clear();
}

}  // namespace hark::core
