#pragma once

#include <memory>
#include <vector>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/internal/group_waiter.h"
#include "hark/core/broker/message_operations.h"
#include "hark/core/wait/wait.h"
#include "hark/core/wait/wait_shard.h"
#include "hark/storage/partition_log.h"

namespace hark::core::internal {

class BrokerShard;
class Partition;
class PartitionCell;

// Tag of the hook by which a pool lists its free jobs.
struct PollJobFreeTag;

// The engine's half of a Poll (core/broker/message_operations.h holds its inputs and result):
// which partitions it reads, what it waits on, where its tour stands. Taken from the home
// shard's PollJobPool at the poll's first step and given back before its done(), so a poll
// costs no allocation once the pool is warm. Its stages (internal/stage.h) and the shard each
// runs on:
//
//   start (home): resolve, deadline ──► poll_at_owner (the owner of each partition in turn:
//   one, or a group member's assignment): start offset, read; the first with messages ends
//   the tour ──► poll_at_home (home): messages? answer : park on every partition visited.
//   Parked (home): a commit wins it at an owner, which reads the new messages and hands them
//   back with the registration ──► home: answer (no further hop);
//     timeout / purge / shutdown: answer empty;  delete: the error a poll gets now;
//     woken but nothing to read (the owner could not read from memory, a strategy that needs
//     a fresh look), or the group rebalanced: evaluate again, re-park with the deadline;
//     the client went away (Broker::cancel) ──► poll_cancelled (home): disconnected.
//
// docs/long-polling.md is the contract, docs/architecture.md §4 the design. Touched by one
// shard at a time: the one its stage names (a hop is a post, which orders the accesses).
class PollJob final : private WaitClient,
                      private storage::ReadCompletion,
                      public GroupWaiter,
                      public ListHook<PollJobFreeTag> {
 public:
  PollJob() = default;
  PollJob(const PollJob&) = delete;
  PollJob& operator=(const PollJob&) = delete;

  // Home: Broker::cancel. A parked poll is cancelled now; one in flight ends when it is back.
  static void cancel(Poll& poll, BrokerShard& shard);

  // The step of the poll's stage, on the shard that stage names.
  void step(BrokerShard& shard);

  // Home, for its shard's list of parked group polls.
  const Poll& poll() const { return *poll_; }
  // A group member's partitions when it was last evaluated.
  const std::vector<uint32_t>& assigned() const { return assigned_; }
  GroupAddress group_address() const override;
  // A rebalance changed the group (on the home shard, while parked).
  void rebalanced(BrokerShard& shard) override;

 private:
  friend class PollJobPool;

  void on_wait_done(Wait& parked, WaitState state, Registration* winner) override;
  void read_done(Result<storage::ReadView> view) override;

  void begin(BrokerShard& shard);
  Status resolve_group(BrokerShard& shard);
  void evaluate(BrokerShard& shard);
  void visit_next(BrokerShard& shard);
  void evaluate_at_owner(BrokerShard& shard);
  void evaluate_fetch(BrokerShard& shard, Partition& owner);
  void evaluated_here(BrokerShard& shard);
  void evaluated_at_home(BrokerShard& shard);
  void park(BrokerShard& shard);
  void on_abort(BrokerShard& shard, AbortReason reason);
  // The partition of `winner`, among those the poll waits on.
  const PartitionCell& cell_of(const Registration& winner) const;
  void answer(BrokerShard& shard);
  void answer_empty(BrokerShard& shard);
  // Fills the result's partition and current offset for an answer without messages.
  void report_waited_on();
  void answer_gone(BrokerShard& shard);
  void unpark(BrokerShard& shard);
  // Reads the member's assignment again and evaluates it, keeping the deadline.
  void reassigned(BrokerShard& shard);
  // Ends the poll (home only): the job goes back to the pool, then the poll's done().
  void finish(BrokerShard& shard, Status status);

  Poll* poll_ = nullptr;  // While taken.
  Status status_;         // Of the evaluation under way.
  // The partitions this poll reads, in order (one, or a group member's assignment from its
  // round-robin cursor) and, as each owner is visited, what to wait for there. Capacity is
  // kept across the polls that reuse this job.
  std::vector<Ref<PartitionCell>> cells_;
  std::vector<Watch> watches_;
  std::vector<uint32_t> assigned_;  // A group member's partitions when it was evaluated.
  size_t visiting_ = 0;
  Instant deadline_{};
  Wait* wait_ = nullptr;  // While parked.
  bool cancel_requested_ = false;
  bool woken_ = false;       // Parking again after a wake-up counts as a re-park.
  bool group_wide_ = false;  // A group member polling all its partitions.
};

// A home shard's PollJobs. Grows to the most polls in flight at once from this shard (each
// is a request a client of this shard is waiting on: bounded by its connections), then
// allocates nothing. Used on its shard only.
class PollJobPool {
 public:
  PollJobPool() = default;
  ~PollJobPool();
  PollJobPool(const PollJobPool&) = delete;
  PollJobPool& operator=(const PollJobPool&) = delete;

  // A free job, reset, bound to `poll`.
  PollJob& take(Poll& poll);
  void give_back(PollJob& job);
  // Jobs of polls in flight.
  size_t in_use() const { return jobs_.size() - free_.size(); }

 private:
  std::vector<std::unique_ptr<PollJob>> jobs_;
  IntrusiveList<PollJob, PollJobFreeTag> free_;
};

}  // namespace hark::core::internal
