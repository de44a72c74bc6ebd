#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>

#include "hark/core/base/assert.h"
#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/units.h"
#include "hark/core/broker/condition.h"
#include "hark/io/reactor.h"
#include "hark/io/timer_wheel.h"
#include "hark/storage/read_view.h"

namespace hark::core {

class CommitPoint;
class Registration;
class Wait;
class WaitShard;

// Tag of the hook by which pooled objects sit on their shard's free list.
struct PoolTag;

// How a parked poll ended. Exactly one party moves a Wait out of `waiting`, by CAS.
enum class WaitState : uint32_t { waiting, notified, timed_out, cancelled, aborted };

// Why a Wait was aborted: the partition was purged or deleted, the server is shutting down,
// or (later, with several nodes) the partition moved to another owner.
enum class AbortReason : uint8_t { none, purged, deleted, shutdown, moved };

// What the owner of a partition last measured for a condition over a total
// (Condition::totals()), sent to the request's home as a Task: at most one in flight per
// registration, so changes coalesce; the home reads the latest values when it runs.
//
// Concurrent: every field is a seq_cst atomic, and the values are a seqlock: the owner (the
// only writer) makes `version_` odd, writes, makes it even, then sets `in_flight` (posting the
// task if it was clear); the home clears `in_flight`, then read()s. A read that overlapped a
// write fails instead of mixing two measurements (an older measure with a newer answer): that
// write's own report follows, since its `in_flight` exchange comes after the home's clear.
class ConditionReport final : public io::Task {
 public:
  struct Values {
    uint64_t measure = 0;
    uint32_t answer_size = 0;
    std::array<std::byte, condition_answer_max> answer{};
  };
  Registration* registration = nullptr;
  std::atomic<bool> in_flight{false};

  // Owner: one measurement, its answer and measure together.
  void write(uint64_t measure, std::span<const std::byte, condition_answer_max> answer,
             uint32_t answer_size);
  // Home, after clearing `in_flight`: false if a write overlapped (its report follows).
  bool read(Values& values) const;

  void run() override;  // On the home shard.

 private:
  static constexpr size_t words = condition_answer_max / sizeof(uint64_t);
  std::atomic<uint64_t> version_{0};  // Odd while the owner writes.
  std::atomic<uint64_t> measure_{0};
  std::atomic<uint32_t> answer_size_{0};
  std::array<std::atomic<uint64_t>, words> answer_{};
};

// A condition waiter's request, held by its Registration while parked (docs/notifications.md):
// the condition, who asks, the parameter bytes, and, owner side, when to evaluate it next and
// the answer it wrote. Pooled per home shard like Registrations; the home fills it before the
// push, the owner writes `answer`/`wake_at` while it holds the registration, the home reads
// the answer after the hand-back (or, for a total, `report` while it is parked).
struct ConditionSlot final : ListHook<PoolTag> {
  const Condition* condition = nullptr;
  ConsumerRef consumer;
  uint32_t params_size = 0;
  std::array<std::byte, condition_params_max> params{};
  uint64_t wake_at = 0;  // See Verdict::wake_at.
  uint32_t answer_size = 0;
  std::array<std::byte, condition_answer_max> answer{};
  ConditionReport report;

  ConditionRequest request() const { return {consumer, std::span(params).first(params_size)}; }
  std::span<const std::byte> answer_bytes() const { return std::span(answer).first(answer_size); }
};

// One watched partition of a Wait: pushed on the partition's WaiterList by the home shard,
// drained and judged by the partition's owner, handed back to the home shard as a Task.
// Immutable once pushed, except `next_` (the WaiterList link, written before the push) and
// `woken_here_` (owner side, before the hand-back). Comes from its home shard's pool.
class Registration final : public io::Task, public ListHook<PoolTag> {
 public:
  Wait& wait() const { return *wait_; }
  CommitPoint& point() const { return *point_; }
  Offset want() const { return want_; }
  // Satisfied iff the partition's next_offset >= threshold (= want + min_messages).
  uint64_t threshold() const { return threshold_; }
  uint64_t epoch() const { return epoch_; }
  // True if this registration's partition is the one whose commit won the Wait.
  bool woken_here() const { return woken_here_; }
  // When the commit that woke it was published (set by the owner with woken_here).
  Instant committed_at() const { return committed_at_; }
  // How many messages the owner may read for the poll when this registration wins (0: none;
  // the home evaluates the poll again instead).
  uint32_t read_count() const { return read_count_; }
  // A condition waiter's request and answer; null for a poll's threshold registration.
  ConditionSlot* condition() const { return condition_; }
  // The messages the owner read when this registration won, if it could (data in memory):
  // the woken poll is answered without another hop (docs/long-polling.md §Where the data of a
  // woken poll comes from).
  void attach(storage::ReadView view) { view_ = std::move(view); }
  storage::ReadView take_view() { return std::move(view_); }

  // Runs on the home shard when the owner hands this registration back.
  void run() override;

 private:
  friend class CommitPoint;
  friend class WaitShard;
  friend class WaiterList;

  Wait* wait_ = nullptr;
  CommitPoint* point_ = nullptr;
  Offset want_{};
  uint64_t threshold_ = 0;
  uint64_t epoch_ = 0;
  Registration* next_ = nullptr;  // WaiterList link.
  storage::ReadView view_;        // Owner writes before the hand-back; home reads after.
  uint32_t read_count_ = 0;
  ConditionSlot* condition_ = nullptr;
  bool woken_here_ = false;
  Instant committed_at_{};
};

// What the home shard is told when a parked poll ends (never for a cancelled one).
class WaitClient {
 public:
  // `wait` is valid only during the call. For `notified`, `winner` is the registration whose
  // partition satisfied it; for other states it is null.
  virtual void on_wait_done(Wait& wait, WaitState state, Registration* winner) = 0;
  // A parked condition waiter over a total: `registration`'s owner measured a change
  // (ConditionSlot::report holds it). Not called once the Wait is complete.
  virtual void on_report(Wait& wait, Registration& registration) {
    (void)wait;
    (void)registration;
  }

 protected:
  ~WaitClient() = default;
};

// One parked poll: its deadline (a timer on the home shard's wheel), its registrations, and
// the single atomic state that decides who completes it. Pooled per home shard; returned to
// the pool by its home only, once every registration is back (docs/architecture.md §4).
//
// Concurrent: `state_` (any shard, CAS only, seq_cst) and `abort_reason_` (written by the CAS
// winner before the hand-back that publishes it). Everything else belongs to the home shard.
class Wait final : public io::Timer, public ListHook<PoolTag> {
 public:
  WaitState state() const { return state_.load(std::memory_order_seq_cst); }
  AbortReason abort_reason() const { return abort_reason_; }
  ShardId home() const { return home_; }
  WaitClient* client() const { return client_; }
  // Home-side identity for the client (e.g. the request it parked), set at park().
  uint64_t cookie() const { return cookie_; }

  // Moves waiting -> `to`. Returns false if another party completed the Wait first.
  bool try_complete(WaitState to) {
    HARK_ASSERT(to != WaitState::waiting);
    WaitState expected = WaitState::waiting;
    return state_.compare_exchange_strong(expected, to, std::memory_order_seq_cst);
  }
  // Owner side: abort with a reason, visible to the home with the hand-back.
  bool try_abort(AbortReason reason);

  void expire() override;  // The deadline: runs on the home shard's wheel.

 private:
  friend class WaitShard;
  friend class Registration;
  friend class ConditionReport;

  std::atomic<WaitState> state_{WaitState::waiting};
  AbortReason abort_reason_ = AbortReason::none;
  ShardId home_{};
  WaitShard* shard_ = nullptr;
  WaitClient* client_ = nullptr;
  uint64_t cookie_ = 0;
  uint32_t outstanding_ = 0;  // Registrations pushed and not yet handed back.
  bool delivered_ = false;    // The client has been told (or cancelled).
};

}  // namespace hark::core
