#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include <absl/functional/function_ref.h>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/units.h"
#include "hark/core/wait/waiter_list.h"

namespace hark::core {

class WinHook;

// A consistent reading of a partition's commit state, for a home shard's re-check.
struct CommitSnapshot {
  uint64_t next_offset = 0;  // Exclusive end of committed data (0 when empty).
  uint64_t epoch = 0;        // Bumped by purge and delete.
  uint64_t offsets = 0;      // Bumped by every stored-offset change (condition waiters).
};

// Where one partition publishes what is committed, and where polls wait for it. Owned by the
// partition's owner shard, which alone publishes, drains and judges; homes on any shard read
// the snapshot and push registrations. Lives as long as its partition; a partition is freed
// only after every shard stopped parking on it and abort_all() handed everything back.
//
// Owner side, the registrations it has drained and not yet satisfied wait in a min-heap by
// threshold, so a commit that satisfies nobody costs one comparison, and one that wakes K
// costs O(K log n). Condition waiters (docs/notifications.md) wait in a list beside it, with
// the lowest commit end that can satisfy any of them: a commit below it (or with no condition
// waiter) evaluates none; a stored-offset change evaluates them all.
//
// Concurrent: `next_offset_` and `epoch_` are seq_cst atomics (they pair with the WaiterList
// push: see waiter_list.h). Purge bumps the epoch before resetting the offset, so a reader
// that sees the same epoch before and after reading the offset has an offset of that epoch.
class CommitPoint : public ListHook<> {
 public:
  explicit CommitPoint(ShardId owner) : owner_(owner) {}
  CommitPoint(const CommitPoint&) = delete;
  CommitPoint& operator=(const CommitPoint&) = delete;
  ~CommitPoint();

  ShardId owner() const { return owner_; }
  // Owner only: who attaches the committed messages to a registration this point's commit
  // won (set by WaitShard::adopt; null: none, the home evaluates the poll again).
  WinHook* win_hook() const { return win_hook_; }
  void set_win_hook(WinHook* hook) { win_hook_ = hook; }

  // Any shard.
  CommitSnapshot snapshot() const;
  void register_wait(Registration& registration) { waiters_.push(registration); }

  // Owner only. Publishes a new commit end; returns true if the point just became dirty (the
  // caller queues it for this iteration's drain).
  bool publish(uint64_t next_offset);
  // Owner only. Starts a new epoch at `next_offset` (purge: 0).
  void reset(uint64_t next_offset);
  // Owner only. A consumer's stored offset changed: condition waiters are evaluated at the
  // next settle. Returns true if the point just became dirty (as publish()).
  bool offsets_changed();

  using HandBack = absl::FunctionRef<void(Registration&)>;

  // Owner only, at the end of a loop iteration. Drains new registrations and calls
  // `hand_back` for each one that is satisfied (after trying to win its Wait), whose Wait is
  // already complete, or that is from an older epoch (after aborting its Wait as purged).
  // Returns how many registrations this call satisfied and won.
  size_t settle(HandBack hand_back);
  // Owner only. Hands back every registration whose Wait is complete (zombies), and
  // evaluates time-dependent condition waiters. Bounds memory on partitions that never commit
  // again.
  struct Swept {
    size_t zombies = 0;
    size_t won = 0;  // Time-dependent condition waiters satisfied and won.
  };
  Swept sweep(HandBack hand_back);
  // Owner only. Aborts every waiting registration with `reason` and hands all back.
  void abort_all(AbortReason reason, HandBack hand_back);

  bool dirty() const { return dirty_; }
  void clear_dirty() { dirty_ = false; }
  // Owner only: whether a registration may be waiting here (drained or still on the list).
  bool watched() const { return !pending_.empty() || !conditioned_.empty() || !waiters_.empty(); }
  // Owner only: when the first commit since the last settle was published, for the wake
  // latency (Instant{}: not read, nobody was waiting then).
  Instant committed_at() const { return committed_at_; }
  void set_committed_at(Instant at) { committed_at_ = at; }
  size_t pending() const { return pending_.size() + conditioned_.size(); }

 private:
  struct Absorbed {
    size_t stale = 0;  // Handed back because their Wait was already complete.
    size_t won = 0;    // Satisfied on arrival and won here.
  };
  // Drains new registrations: hands back stale and already-satisfied ones at once and moves
  // the rest into the heap.
  Absorbed absorb(HandBack hand_back);
  // CASes the registration's Wait to notified; marks it the winner if that succeeded.
  static bool try_win(Registration& registration);
  // Evaluates the condition waiters a commit to `next_offset` (or an offset change, or the
  // sweep for time-dependent ones) may satisfy; hands back the satisfied and the completed.
  // Returns how many it won.
  size_t settle_conditions(HandBack hand_back, bool sweeping);
  bool due(const Registration& registration, uint64_t next_offset, bool sweeping) const;

  ShardId owner_;
  std::atomic<uint64_t> next_offset_{0};
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> offsets_{0};
  WaiterList waiters_;
  std::vector<Registration*> pending_;      // Owner: a min-heap by threshold.
  std::vector<Registration*> conditioned_;  // Owner: condition waiters.
  uint64_t conditioned_wake_ = UINT64_MAX;  // Owner: min wake_at over conditioned_.
  WinHook* win_hook_ = nullptr;             // Owner.
  Instant committed_at_{};                  // Owner.
  bool dirty_ = false;
  bool offsets_dirty_ = false;  // Owner: an offset changed since the last settle.
};

}  // namespace hark::core
