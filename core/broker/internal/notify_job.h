#pragma once

#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/internal/group_waiter.h"
#include "hark/core/broker/notify_operations.h"
#include "hark/core/wait/wait.h"
#include "hark/core/wait/wait_shard.h"

namespace hark::core::internal {

class BrokerShard;
class PartitionCell;
struct TopicEntry;

// The engine's half of a Notify (docs/notifications.md), on the same wait path as a poll
// (internal/poll_job.h): its stages and the shard each runs on:
//
//   start (home): find the condition, resolve the partitions, deadline ──► notify_at_owner
//   (each partition's owner in turn): evaluate the condition; satisfied: record the answer,
//   else a Watch with its verdict's wake_at ──► notify_at_home (home): answers, no wait, or
//   past the deadline? answer : park a condition waiter on every partition not satisfied.
//   Parked: an owner's commit, offset change or sweep satisfies one; it writes the answer
//   into the registration's slot and wins the Wait ──► home: answer that partition.
//     timeout / purge / shutdown: answer empty; delete: the error a request gets now;
//     satisfied before the park took (its re-check): evaluate again;
//     the group rebalanced: evaluate on the new assignment, with the deadline;
//     the client went away (Broker::cancel) ──► notify_cancelled (home): disconnected.
//
// Owned by its Notify and touched by one shard at a time: the one its stage names.
class NotifyJob final : private WaitClient, public GroupWaiter {
 public:
  explicit NotifyJob(Notify& notify) : notify_(notify) {}
  NotifyJob(const NotifyJob&) = delete;
  NotifyJob& operator=(const NotifyJob&) = delete;

  static void cancel(Notify& notify, BrokerShard& shard);
  void step(BrokerShard& shard);

  GroupAddress group_address() const override;
  void rebalanced(BrokerShard& shard) override;

 private:
  void on_wait_done(Wait& parked, WaitState state, Registration* winner) override;
  void on_report(Wait& parked, Registration& registration) override;

  void begin(BrokerShard& shard);
  Status check_condition(BrokerShard& shard);
  // The partitions the request addresses (cells_), or Iggy's error for what is missing.
  Status resolve(BrokerShard& shard);
  Status resolve_group(BrokerShard& shard, const TopicEntry& topic);
  void evaluate(BrokerShard& shard);
  void visit_next(BrokerShard& shard);
  void evaluate_at_owner(BrokerShard& shard);
  void evaluated_here(BrokerShard& shard);
  void evaluated_at_home(BrokerShard& shard);
  void park(BrokerShard& shard);
  void unpark(BrokerShard& shard);
  void on_abort(BrokerShard& shard, AbortReason reason);
  // A partition went away: the error a request gets now, or (a request over several
  // partitions) evaluated again on those left.
  void answer_gone(BrokerShard& shard);
  // Resolves the partitions again (a rebalance, a partition gone) and evaluates them, keeping
  // the deadline.
  void rebalanced_while_away(BrokerShard& shard);
  void finish(BrokerShard& shard, Status status);
  // A condition over a total: the latest measure of each partition, from the evaluation and
  // then from its owner's reports (docs/notifications.md §WaitForLag).
  struct Measured {
    NotifyAnswer answer;
    uint64_t measure = 0;
    bool known = false;  // False for a partition skipped (gone, or not open yet).
  };
  // Sums the measures into the Notify's `total`; true if the condition holds for it.
  bool total_holds();
  // The Notify's answers for a total that holds: every partition measured.
  void answer_total();

  Notify& notify_;
  ConditionSlot request_;  // The condition, who asks and the parameters: copied per watch.
  Status status_;
  std::vector<Ref<PartitionCell>> cells_;
  std::vector<Watch> watches_;
  std::vector<Measured> measured_;  // By cell, for a condition over a total.
  std::vector<uint32_t> assigned_;  // A group member's partitions when it was evaluated.
  size_t visiting_ = 0;
  Instant deadline_{};
  Wait* wait_ = nullptr;  // While parked.
  bool cancel_requested_ = false;
  bool group_wide_ = false;  // A group member on its whole assignment.
  bool many_ = false;        // Several partitions: a gone one is skipped, not an error.
  bool totals_ = false;      // The condition is over a total (Condition::totals()).
};

}  // namespace hark::core::internal
