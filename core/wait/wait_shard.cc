#include "hark/core/wait/wait_shard.h"

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"

namespace hark::core {

WaitShard::WaitShard(io::Reactor& reactor, const WaitShardOptions& options)
    : reactor_(reactor),
      options_(options),
      waits_(std::make_unique<Wait[]>(options.waits_max)),
      registrations_(std::make_unique<Registration[]>(options.registrations_max)),
      conditions_(std::make_unique<ConditionSlot[]>(options.conditions_max)),
      sweep_timer_(*this) {
  for (uint32_t i = 0; i < options.waits_max; i++) free_waits_.push_back(waits_[i]);
  for (uint32_t i = 0; i < options.registrations_max; i++) {
    free_registrations_.push_back(registrations_[i]);
  }
  for (uint32_t i = 0; i < options.conditions_max; i++) free_conditions_.push_back(conditions_[i]);
  // Each adopted point can be dirty at most once per iteration.
  dirty_.reserve(1024);
  after_settle_.reserve(1024);  // Grows only past 1024 acks in one iteration.
  reactor_.set_iteration_hook(this);
}

WaitShard::~WaitShard() {
  reactor_.timers().cancel(sweep_timer_);
  // Every Wait and Registration is back in its pool exactly once (tests rely on this).
  HARK_ASSERT(free_waits_.size() == options_.waits_max);
  HARK_ASSERT(free_registrations_.size() == options_.registrations_max);
  HARK_ASSERT(free_conditions_.size() == options_.conditions_max);
  HARK_ASSERT(owned_.empty());
  while (free_waits_.pop_front() != nullptr) {
  }
  while (free_conditions_.pop_front() != nullptr) {
  }
  while (free_registrations_.pop_front() != nullptr) {
  }
  reactor_.set_iteration_hook(nullptr);
}

Result<ParkResult> WaitShard::park(std::span<const Watch> watches, Instant deadline,
                                   WaitClient& client, uint64_t cookie) {
  HARK_TRY_ASSIGN(Wait* const wait, begin_park(watches, client, cookie));
  return finish_park(*wait, watches, deadline);
}

Result<Wait*> WaitShard::begin_park(std::span<const Watch> watches, WaitClient& client,
                                    uint64_t cookie) {
  HARK_ASSERT(!watches.empty());
  const auto conditions = static_cast<size_t>(std::count_if(
      watches.begin(), watches.end(), [](const Watch& w) { return w.condition != nullptr; }));
  if (free_waits_.empty() || free_registrations_.size() < watches.size() ||
      free_conditions_.size() < conditions) {
    counters_.rejected_full++;
    HARK_LOG_WARN(
        "parked-wait limit reached on this shard (%u waits, %u registrations, %u "
        "condition waiters)",
        options_.waits_max, options_.registrations_max, options_.conditions_max);
    return Error::feature_unavailable;
  }
  Wait& wait = *free_waits_.pop_front();
  // Nobody else references a pooled Wait: all its registrations came back before it did.
  wait.state_.store(WaitState::waiting, std::memory_order_relaxed);
  wait.abort_reason_ = AbortReason::none;
  wait.home_ = reactor_.id();
  wait.shard_ = this;
  wait.client_ = &client;
  wait.cookie_ = cookie;
  wait.outstanding_ = static_cast<uint32_t>(watches.size());
  wait.delivered_ = false;
  for (const Watch& watch : watches) {
    Registration& registration = *free_registrations_.pop_front();
    registration.wait_ = &wait;
    registration.point_ = watch.point;
    registration.want_ = watch.want;
    registration.threshold_ = watch.threshold();
    registration.epoch_ = watch.epoch;
    registration.woken_here_ = false;
    registration.read_count_ = watch.read_count;
    registration.condition_ =
        watch.condition != nullptr ? &take_condition(watch, registration) : nullptr;
    watch.point->register_wait(registration);
  }
  return &wait;
}

ConditionSlot& WaitShard::take_condition(const Watch& watch, Registration& registration) {
  ConditionSlot& slot = *free_conditions_.pop_front();
  const ConditionSlot& request = *watch.condition;
  HARK_ASSERT(request.params_size <= request.params.size());
  slot.condition = request.condition;
  slot.consumer = request.consumer;
  slot.params_size = request.params_size;
  std::copy_n(request.params.begin(), request.params_size, slot.params.begin());
  slot.wake_at = watch.threshold();
  slot.answer_size = 0;
  slot.report.registration = &registration;
  slot.report.in_flight.store(false, std::memory_order_relaxed);  // Nobody else holds it.
  return slot;
}

ParkResult WaitShard::finish_park(Wait& wait, std::span<const Watch> watches, Instant deadline) {
  if (!recheck(watches, wait)) {
    // Answered now: by our re-check, or by an owner that already settled it. Either way the
    // caller handles it; hand-backs still return the registrations later.
    wait.delivered_ = true;
    counters_.ready_at_park++;
    return ParkResult{&wait, wait.state()};
  }
  reactor_.timers().add(wait, deadline);
  counters_.parked++;
  counters_.parked_now++;
  return ParkResult{&wait, WaitState::waiting};
}

bool WaitShard::recheck(std::span<const Watch> watches, Wait& wait) {
#ifndef HARK_MUTANT_SKIP_PARK_RECHECK
  // Register, then re-read: a commit that landed between the poll's evaluation and the push
  // is seen here, or its owner sees our registration when it drains (seq_cst on both sides).
  for (const Watch& watch : watches) {
    const CommitSnapshot now = watch.point->snapshot();
    if (now.epoch != watch.epoch) {
      wait.try_abort(AbortReason::purged);
      break;
    }
    // A condition waiter: anything that may change its verdict since its evaluation.
    const bool offsets_moved = watch.condition != nullptr && now.offsets != watch.offsets;
    if (now.next_offset >= watch.threshold() || offsets_moved) {
      wait.try_complete(WaitState::notified);
      break;
    }
  }
#else
  (void)watches;  // The mutant of tests/core: the lost-wakeup checks must catch it.
#endif
  return wait.state() == WaitState::waiting;
}

void WaitShard::cancel(Wait& wait) {
  HARK_ASSERT(wait.shard_ == this);
  reactor_.timers().cancel(wait);
  if (!wait.delivered_) {
    wait.delivered_ = true;
    counters_.parked_now--;
    if (wait.try_complete(WaitState::cancelled)) counters_.cancelled++;
  }
  wait.client_ = nullptr;
}

void WaitShard::complete(Wait& wait) {
  HARK_ASSERT(wait.shard_ == this);
  if (wait.delivered_ || !wait.try_complete(WaitState::notified)) return;
  counters_.woken++;
  deliver(wait, WaitState::notified, nullptr);
}

void WaitShard::report(Registration& registration) {
  ConditionReport& report = registration.condition()->report;
  if (report.in_flight.exchange(true, std::memory_order_seq_cst)) return;  // It reads ours.
  reactor_.post(registration.wait().home(), report);
}

void WaitShard::report_arrived(Registration& registration) {
  registration.condition()->report.in_flight.store(false, std::memory_order_seq_cst);
  Wait& wait = registration.wait();
  // Reports come before their registration's hand-back (posts from one shard keep their
  // order), so the registration and its Wait are still this shard's.
  if (wait.delivered_ || wait.client_ == nullptr) return;
  counters_.condition_reports++;
  wait.client_->on_report(wait, registration);
}

void WaitShard::wait_expired(Wait& wait) {
  if (wait.delivered_ || !wait.try_complete(WaitState::timed_out)) return;
  counters_.timed_out++;
  deliver(wait, WaitState::timed_out, nullptr);
}

void WaitShard::deliver(Wait& wait, WaitState state, Registration* winner) {
  HARK_ASSERT(!wait.delivered_);
  wait.delivered_ = true;
  counters_.parked_now--;
  reactor_.timers().cancel(wait);
  if (wait.client_ != nullptr) wait.client_->on_wait_done(wait, state, winner);
  if (winner != nullptr && winner->condition() == nullptr) record_wake(*winner);
}

void WaitShard::record_wake(const Registration& winner) {
  counters_.wake_latency.record(reactor_.clock().monotonic_now() - winner.committed_at());
}

void WaitShard::registration_returned(Registration& registration) {
  Wait& wait = registration.wait();
  const WaitState state = wait.state();
  HARK_ASSERT(state != WaitState::waiting);
  HARK_ASSERT(wait.outstanding_ > 0);
  if (!wait.delivered_) {
    // A notified Wait is answered by its winning registration, which carries the data; the
    // others only come home. An abort is answered by the first one back.
    if (state == WaitState::notified && registration.woken_here()) {
      deliver(wait, state, &registration);
    } else if (state == WaitState::aborted) {
      counters_.aborted++;
      deliver(wait, state, nullptr);
    }
  }
  wait.outstanding_--;
  registration.view_ = storage::ReadView();  // Unclaimed messages (a cancelled poll's).
  if (registration.condition_ != nullptr) {
    free_conditions_.push_back(*registration.condition_);
    registration.condition_ = nullptr;
  }
  registration.wait_ = nullptr;
  registration.point_ = nullptr;
  free_registrations_.push_back(registration);
  maybe_release(wait);
}

void WaitShard::maybe_release(Wait& wait) {
  if (!wait.delivered_ || wait.outstanding_ > 0) return;
  HARK_ASSERT(!wait.armed());
  wait.client_ = nullptr;
  free_waits_.push_back(wait);
}

void WaitShard::hand_back(Registration& registration) {
  WinHook* const hook = registration.point().win_hook();
  if (registration.woken_here() && registration.read_count() > 0 && hook != nullptr) {
    hook->on_won(registration);
  }
  registration.committed_at_ = wake_stamp(registration.point());
  reactor_.post(registration.wait().home(), registration);
  // Flush as we go, in doubling chunks (16, 32, 64, ...): a commit waking thousands must not
  // hold the first answer back, and a woken home shard should not be put back to sleep and
  // woken again for every small chunk (each wake of a sleeping core costs ~20 µs).
  if (++hand_backs_unflushed_ == flush_chunk_) {
    hand_backs_unflushed_ = 0;
    flush_chunk_ *= 2;
    reactor_.flush_posts();
  }
}

void WaitShard::adopt(CommitPoint& point, WinHook* hook) {
  HARK_ASSERT(point.owner() == reactor_.id());
  point.set_win_hook(hook);
  owned_.push_back(point);
  if (!sweep_timer_.armed()) {
    reactor_.timers().add(sweep_timer_, reactor_.clock().monotonic_now() + options_.sweep_interval);
  }
}

void WaitShard::release(CommitPoint& point, AbortReason reason) {
  point.abort_all(reason, [this](Registration& r) { hand_back(r); });
  if (point.dirty()) {
    std::erase(dirty_, &point);
    point.clear_dirty();
  }
  owned_.remove(point);
  point.set_win_hook(nullptr);
  if (owned_.empty()) reactor_.timers().cancel(sweep_timer_);
}

void WaitShard::publish(CommitPoint& point, uint64_t next_offset) {
  if (point.publish(next_offset)) mark_dirty(point);
}

void WaitShard::mark_dirty(CommitPoint& point) {
  dirty_.push_back(&point);
  // A commit nobody waits for reads no clock; a registration that arrives before the settle
  // is stamped at its hand-back (wake_stamp).
  point.set_committed_at(point.watched() ? reactor_.clock().monotonic_now() : Instant{});
}

Instant WaitShard::wake_stamp(CommitPoint& point) {
  if (point.committed_at() == Instant{}) point.set_committed_at(reactor_.clock().monotonic_now());
  return point.committed_at();
}

void WaitShard::reset(CommitPoint& point, uint64_t next_offset) {
  point.reset(next_offset);
  point.abort_all(AbortReason::purged, [this](Registration& r) { hand_back(r); });
}

void WaitShard::offsets_changed(CommitPoint& point) {
  if (point.offsets_changed()) mark_dirty(point);
}

void WaitShard::abort_all(AbortReason reason) {
  owned_.for_each([&](CommitPoint& point) {
    point.abort_all(reason, [this](Registration& r) { hand_back(r); });
  });
}

void WaitShard::on_iteration_end() {
  for (CommitPoint* point : dirty_) {
    point->clear_dirty();
    counters_.woken += point->settle([this](Registration& r) { hand_back(r); });
  }
  dirty_.clear();
  // After the hand-backs to this shard, and after the ring took the answers they queue.
  for (io::Task* task : after_settle_) reactor_.post_after_submit(*task);
  after_settle_.clear();
  hand_backs_unflushed_ = 0;  // The reactor flushes the rest right after this hook.
  flush_chunk_ = first_flush_chunk;
}

void WaitShard::after_settle(io::Task& task) { after_settle_.push_back(&task); }

void WaitShard::sweep() {
  owned_.for_each([&](CommitPoint& point) {
    const CommitPoint::Swept swept = point.sweep([this](Registration& r) { hand_back(r); });
    counters_.zombies_swept += swept.zombies;
    counters_.woken += swept.won;
  });
}

void WaitShard::SweepTimer::expire() {
  shard_.sweep();
  if (!shard_.owned_.empty()) {
    shard_.reactor_.timers().add(
        *this, shard_.reactor_.clock().monotonic_now() + shard_.options_.sweep_interval);
  }
}

}  // namespace hark::core
