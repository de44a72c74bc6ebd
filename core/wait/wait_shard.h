#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hark/core/base/histogram.h"
#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/result.h"
#include "hark/core/wait/commit_point.h"
#include "hark/core/wait/wait.h"
#include "hark/io/reactor.h"

namespace hark::core {

struct WaitShardOptions {
  // Parked polls this shard can hold at once (its Wait pool). Full: park() fails.
  uint32_t waits_max = 16384;
  // Registrations (watched partitions) across those polls: one per plain poll, one per
  // assigned partition for a consumer-group member.
  uint32_t registrations_max = 65536;
  // Of those, condition waiters (notifications: docs/notifications.md), each holding its
  // request's parameters and answer inline.
  uint32_t conditions_max = 4096;
  // How often the owner hands back registrations of completed Waits on partitions that do
  // not commit (zombies), bounding the memory a timed-out or cancelled poll holds.
  Duration sweep_interval = std::chrono::seconds(1);
};

// One shard's wait-path counters, written by that shard only and read on it (GetStats visits
// each shard), so plain integers; a cache line of its own, so no other shard's writes share it.
struct alignas(64) WaitCounters {
  uint64_t parked_now = 0;     // Waiting polls whose home is this shard.
  uint64_t parked = 0;         // Parks that stayed parked after the re-check.
  uint64_t ready_at_park = 0;  // Parks whose re-check found them satisfied or aborted.
  uint64_t woken = 0;          // Waits this shard (as owner) notified.
  uint64_t timed_out = 0;
  uint64_t cancelled = 0;
  uint64_t aborted = 0;  // Waits this shard (as home) learned were aborted.
  uint64_t zombies_swept = 0;
  uint64_t rejected_full = 0;  // park() refused: pool full.
  // Condition evaluations this shard ran as owner (when a request is evaluated, and for its
  // parked waiters at commits, offset changes and sweeps): zero between events proves a
  // waiter costs nothing while nothing happens.
  uint64_t conditions_evaluated = 0;
  // Lag changes (reports of a condition over a total) this shard, as home, received while
  // their request waited: several changes in flight at once arrive as one.
  uint64_t condition_reports = 0;
  // Woken polls (not notifications), home side: from the publish of the commit that woke
  // them (the first of its loop iteration) to their answer handed to the WaitClient.
  LatencyHistogram wake_latency;
};

// One partition a poll waits on: where, from which offset, and the epoch the poll saw.
struct Watch {
  CommitPoint* point = nullptr;
  Offset want{};
  uint32_t min_messages = 1;
  uint64_t epoch = 0;
  uint32_t read_count = 0;  // See Registration::read_count().
  // A condition waiter (docs/notifications.md): its request (copied into a pooled slot at the
  // push), `want` = the next_offset its evaluation saw and `offsets` the offsets version it
  // saw; it is re-checked or evaluated again once next_offset >= max(wake_at, want + 1) or a
  // stored offset changes. Null for a poll.
  const ConditionSlot* condition = nullptr;
  uint64_t wake_at = 0;
  uint64_t offsets = 0;

  // The next_offset from which a commit is worth looking at (satisfies a poll's watch).
  uint64_t threshold() const {
    return condition != nullptr ? std::max(wake_at, want.value() + 1) : want.value() + min_messages;
  }
};

// Owner side: called for each registration whose partition's commit won its Wait, before it
// is handed back, so the owner can attach the committed messages (Registration::attach). One
// per adopted point (WaitShard::adopt): the owner's own object for that partition, so it reads
// its own log without looking the partition up.
class WinHook {
 public:
  virtual void on_won(Registration& registration) = 0;
  // Evaluates a condition waiter's condition on this partition (docs/notifications.md):
  // writes its answer and next wake_at into its slot; true if satisfied.
  virtual bool judge(Registration& registration) = 0;

 protected:
  ~WinHook() = default;
};

struct ParkResult {
  Wait* wait = nullptr;
  // `waiting`: parked; the client hears of the end through WaitClient (unless cancelled).
  // Anything else: the re-check found the answer at once; the client is NOT called, and the
  // caller evaluates the poll again now (notified) or answers as the abort says (aborted).
  WaitState state = WaitState::waiting;
};

// The wait machinery of one shard (docs/architecture.md §4), in both roles:
// - as home, it parks polls (register, then re-check), times them out on its wheel, cancels
//   them on disconnect, receives hand-backs and returns Waits and Registrations to its pools;
// - as owner, it publishes commits of the partitions it owns and, once per loop iteration
//   (the reactor's IterationHook), settles the dirty ones: satisfied registrations win their
//   Wait by CAS and go back to their homes through the reactor's batched posts (one Inbox
//   push and at most one eventfd write per home shard per iteration).
// Used only on its shard's thread. Data plane: pools are sized at construction; parking,
// waking and handing back never allocate.
class WaitShard final : public io::IterationHook {
 public:
  WaitShard(io::Reactor& reactor, const WaitShardOptions& options);
  ~WaitShard();
  WaitShard(const WaitShard&) = delete;
  WaitShard& operator=(const WaitShard&) = delete;

  // Home. Parks a poll on `watches` (1 or more partitions) until `deadline`. The watches'
  // epochs are those the poll saw when it found nothing. Error::feature_unavailable when this
  // shard's pool of Waits or Registrations is exhausted.
  Result<ParkResult> park(std::span<const Watch> watches, Instant deadline, WaitClient& client,
                          uint64_t cookie);
  // park() in its two steps, so tests can run owner actions between the push and the re-check:
  // begin_park() takes a Wait and pushes its registrations; finish_park() re-checks and arms
  // the deadline. park() is exactly begin_park() then finish_park().
  Result<Wait*> begin_park(std::span<const Watch> watches, WaitClient& client, uint64_t cookie);
  ParkResult finish_park(Wait& wait, std::span<const Watch> watches, Instant deadline);
  // Home. The poll's connection went away: the client is never called for `wait`. O(1).
  void cancel(Wait& wait);
  // Home. A condition over a total holds (its client summed the reports): completes `wait` as
  // notified, with no winner; its registrations come home from their owners later.
  void complete(Wait& wait);

  // Owner. The points this shard owns: swept periodically, aborted at shutdown. `hook`
  // (optional) attaches messages for the polls this point's commits win; it must outlive the
  // adoption (until release()).
  void adopt(CommitPoint& point, WinHook* hook = nullptr);
  // Owner. Aborts everything parked on `point` (delete) and forgets it.
  void release(CommitPoint& point, AbortReason reason);
  // Owner. A commit: parked polls it satisfies are woken at the end of this iteration.
  void publish(CommitPoint& point, uint64_t next_offset);
  // Owner. Purge: a new epoch starting at `next_offset`; parked polls are aborted as purged.
  void reset(CommitPoint& point, uint64_t next_offset);
  // Owner. A stored offset changed on `point`'s partition: its condition waiters are
  // evaluated at the end of this iteration.
  void offsets_changed(CommitPoint& point);
  // Owner. Counts one evaluation of a condition (WaitCounters::conditions_evaluated).
  void count_condition_evaluation() { counters_.conditions_evaluated++; }
  // Owner. Sends a condition waiter's new measure (ConditionSlot::report, already written)
  // to its home, unless a report of it is still on its way there.
  void report(Registration& registration);
  // Owner. Shutdown: aborts every poll parked on any adopted point.
  void abort_all(AbortReason reason);
  // Owner. Runs `task` on this shard once this iteration's commits are settled, after the
  // polls they woke were handed back and what their answers queued on the ring was submitted
  // (io::Reactor::post_after_submit). Appends acknowledge through it, so a parked consumer's
  // answer leaves in an io_uring_enter of its own, before its producer's acknowledgement is
  // built: the wake-up is the latency that counts.
  void after_settle(io::Task& task);

  const WaitCounters& counters() const { return counters_; }
  Clock& clock() { return reactor_.clock(); }
  uint32_t waits_free() const { return static_cast<uint32_t>(free_waits_.size()); }
  uint32_t registrations_free() const { return static_cast<uint32_t>(free_registrations_.size()); }
  uint32_t conditions_free() const { return static_cast<uint32_t>(free_conditions_.size()); }

  void on_iteration_end() override;

 private:
  friend class Registration;
  friend class Wait;
  friend class ConditionReport;

  class SweepTimer final : public io::Timer {
   public:
    explicit SweepTimer(WaitShard& shard) : shard_(shard) {}
    void expire() override;

   private:
    WaitShard& shard_;
  };

  void hand_back(Registration& registration);
  void report_arrived(Registration& registration);
  void registration_returned(Registration& registration);
  void wait_expired(Wait& wait);
  void deliver(Wait& wait, WaitState state, Registration* winner);
  void record_wake(const Registration& winner);
  // Queues a point that just became dirty for this iteration's settle, stamping the time.
  void mark_dirty(CommitPoint& point);
  // The commit time a registration handed back from `point` carries (read now if not yet).
  Instant wake_stamp(CommitPoint& point);
  void maybe_release(Wait& wait);
  bool recheck(std::span<const Watch> watches, Wait& wait);
  void sweep();
  // A pooled slot holding `watch`'s condition request (begin_park checked there is one).
  ConditionSlot& take_condition(const Watch& watch, Registration& registration);

  io::Reactor& reactor_;
  WaitShardOptions options_;
  std::unique_ptr<Wait[]> waits_;
  std::unique_ptr<Registration[]> registrations_;
  std::unique_ptr<ConditionSlot[]> conditions_;
  IntrusiveList<Wait, PoolTag> free_waits_;
  IntrusiveList<Registration, PoolTag> free_registrations_;
  IntrusiveList<ConditionSlot, PoolTag> free_conditions_;
  IntrusiveList<CommitPoint> owned_;
  std::vector<CommitPoint*> dirty_;
  std::vector<io::Task*> after_settle_;  // Capacity reused.
  SweepTimer sweep_timer_;
  WaitCounters counters_;
  static constexpr uint32_t first_flush_chunk = 16;
  uint32_t flush_chunk_ = first_flush_chunk;
  uint32_t hand_backs_unflushed_ = 0;
};

}  // namespace hark::core
