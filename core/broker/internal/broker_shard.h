#pragma once

#include <memory>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/functional/function_ref.h>

#include "hark/core/broker/broker.h"
#include "hark/core/broker/internal/catalog.h"
#include "hark/core/broker/internal/conditions.h"
#include "hark/core/broker/internal/coordinator.h"
#include "hark/core/broker/internal/group_waiter.h"
#include "hark/core/broker/internal/partition.h"
#include "hark/core/broker/internal/poll_job.h"
#include "hark/core/wait/wait_shard.h"
#include "hark/io/reactor.h"
#include "hark/io/timer_wheel.h"

namespace hark::core::internal {

// GetStats' working state for the series while it tours the shards (stats.h).
struct SeriesGather {
  using TopicKey = std::pair<uint32_t, uint32_t>;  // (stream id, topic id)
  using LagKey = std::tuple<uint32_t, uint32_t, ConsumerRef>;
  // Σ (next_offset − first_offset) over every partition of a topic: what a consumer that
  // stored nothing there lags by.
  absl::flat_hash_map<TopicKey, uint64_t> topic_unread;
  // Index into MetricSeries::lags, and per entry how much less than topic_unread it lags
  // (Σ over its stored partitions of their unread minus its lag there).
  absl::flat_hash_map<LagKey, size_t> lag_index;
  std::vector<uint64_t> shortfall;
  std::vector<TopicKey> lag_topic;
  absl::flat_hash_set<LagKey> dropped;
};

// The broker's part of one shard: its wait machinery, the partitions it owns, its copy of the
// catalog, and (shard 0) the coordinator of metadata commands. Created and used on the shard's
// thread only; operations reach it as tasks.
class BrokerShard final {
 public:
  BrokerShard(Broker& broker, io::Reactor& reactor, Ref<const Catalog> catalog);
  // At start: opens the partitions of the catalog this shard owns.
  Status open_partitions();
  ~BrokerShard();
  BrokerShard(const BrokerShard&) = delete;
  BrokerShard& operator=(const BrokerShard&) = delete;

  // The broker shard of the calling thread, or null.
  static BrokerShard* current();

  ShardId id() const { return reactor_.id(); }
  // Shard affinity (docs/style.md §5): the caller runs on this shard's thread, and this is
  // the shard `expected` names. Every step of an operation asserts it on entry.
  void expect_on(ShardId expected) const {
    HARK_ASSERT(on_own_thread());
    HARK_ASSERT(id() == expected);
  }
  bool on_own_thread() const { return current() == this; }
  Broker& broker() { return broker_; }
  const BrokerOptions& options() const { return broker_.options(); }
  const OwnershipMap& ownership() const { return broker_.ownership_; }
  io::Reactor& reactor() { return reactor_; }
  WaitShard& waits() { return waits_; }
  const Catalog& catalog() const { return *catalog_; }
  Coordinator& coordinator() { return *coordinator_; }
  const ConditionRegistry& conditions() const { return *broker_.conditions_; }
  bool shutting_down() const { return shutting_down_; }

  // The partition this shard owns for `cell`'s key, if it is still that partition.
  Partition* owned(const PartitionCell& cell);
  // True if this node hosts `key` (BrokerOptions::hosted_only: Broker::host named it).
  bool hosts(const PartitionKey& key) const {
    return !options().hosted_only || hosted_.contains(key);
  }
  // The error for a request that reached this shard for `cell` and found it not open: not
  // hosted by this node (shard_communication_error, retryable), else partition_not_found.
  Error missing(const PartitionCell& cell) const;
  // Broker::host on this shard.
  Status host(std::span<const PartitionKey> keys, std::span<const PartitionKey> moving,
              std::span<const HostedPlace> places);
  // Appends held by the fences of this shard's partitions now (BrokerStats::held).
  uint64_t held_appends() const;
  // Balanced partitioning: the next partition of `topic` for appends from this shard.
  // Requires: the topic has partitions.
  uint32_t next_balanced(const TopicEntry& topic);
  // A group member's round-robin cursor: where its next group-wide poll starts.
  uint32_t next_group_start(const GroupEntry& group, uint32_t member);

  // Operations whose home is this shard, from their first step here to their done(): what
  // the shard still holds of its embedder's requests (counted by Flow).
  void operation_started() { operations_in_flight_++; }
  void operation_done() {
    HARK_ASSERT(operations_in_flight_ > 0);
    operations_in_flight_--;
  }
  size_t operations_in_flight() const { return operations_in_flight_; }

  // The engine's state of the polls whose home is this shard.
  PollJobPool& poll_jobs() { return poll_jobs_; }
  // Group waiters (polls, notifications) parked here, re-evaluated when their group
  // rebalances.
  void park_group_poll(GroupWaiter& waiter) { parked_group_polls_.push_back(waiter); }
  void unpark_group_poll(GroupWaiter& waiter) { parked_group_polls_.remove(waiter); }
  // True if the member `waiter` names still has the partitions it was evaluated on.
  bool group_unchanged(const GroupWaiter& waiter) const;

  // Metadata, in the coordinator's two rounds: apply a new catalog (open created partitions
  // this shard owns, purge purged ones), then retire removed ones (abort their parked polls
  // as deleted, close, delete their files) once no shard can reach them any more.
  Status apply(const Change& change);
  void retire(const Change& change);

  // Shutdown, first step: no new waits (polls are answered at once from now on).
  void refuse_waits() { shutting_down_ = true; }
  // Second step: polls parked on partitions this shard owns are answered empty.
  void shut_down_waits();
  // Shutdown, last step (before the reactor goes): hands back what is parked here, closes
  // every partition. On shard 0 metadata commands stop waiting for other nodes' entries
  // (Coordinator::stop_waiting).
  void release_partitions();
  void close_partitions();

  // One step of a walk over the partitions this shard owns, in key order: calls
  // visit(partition) for each one after `after` (from the first when it is empty), which
  // returns what the visit cost (1 + the stored offsets it read), until `budget` is spent (at
  // least one is visited); `after` is left at the last one visited. True once the last was.
  // Between two steps the shard runs other work: partitions created meanwhile after `after`
  // are visited, those deleted are not, and none is visited twice, since the walk resumes at
  // the first key past `after` (not at a position in a hash map that a change would shift).
  bool walk_partitions(std::optional<PartitionKey>& after, uint32_t budget,
                       absl::FunctionRef<uint32_t(const Partition&)> visit) const;
  // Adds one owned partition's figures.
  static void add_partition_figures(const Partition& partition, BrokerStats& stats);
  // Adds one owned partition's series; returns how many stored offsets it read.
  uint32_t add_series(const Partition& partition, const SeriesLimits& limits, SeriesGather& gather,
                      MetricSeries& series) const;
  // Appends this shard committed as owner.
  AppendCounters& append_counters() { return append_counters_; }
  const AppendCounters& append_counters() const { return append_counters_; }

  // Counted by polls whose home is this shard.
  struct PollCounters {
    uint64_t reevaluated = 0;
    uint64_t reparked = 0;
  };
  PollCounters& poll_counters() { return poll_counters_; }

  // Polls parked on this broker, all shards (the total limit and the shutdown wait).
  std::atomic<uint64_t>& parked_total() { return broker_.parked_total_; }

 private:
  class RetentionTimer final : public io::Timer {
   public:
    explicit RetentionTimer(BrokerShard& shard) : shard_(shard) {}
    void expire() override;

   private:
    BrokerShard& shard_;
  };

  Status open_partition(const Ref<PartitionCell>& cell);
  // Closes an open partition this node no longer hosts: parked polls end as moved.
  void unhost(const PartitionKey& key);
  // Takes an open partition out of owned_, then ends its parked polls with `reason`, answers
  // the appends its fence held with `held` and closes it (unhost, retire).
  void close_owned(const PartitionKey& key, AbortReason reason, Error held);
  // Lifts the fence of every open partition `moving` does not name (Broker::host).
  void lift_fences(std::span<const PartitionKey> moving);

  // Answers the appends a partition's fence held with `error` (nothing of them was written).
  void refuse_held(Partition& partition, Error error);
  storage::LogOptions log_options(const PartitionCell& cell) const;
  void arm_retention();
  // The catalog's names of a partition's stream and topic (its ids if the catalog has none).
  std::pair<std::string, std::string> names_of(const PartitionKey& key) const;
  void add_partition_series(const PartitionKey& key, const PartitionFacts& facts, uint32_t limit,
                            MetricSeries& series) const;
  std::string group_name(std::pair<uint32_t, uint32_t> topic, uint32_t group) const;
  uint32_t add_lag_series(const Partition& partition, const PartitionFacts& facts, uint32_t limit,
                          SeriesGather& gather, MetricSeries& series) const;

  Broker& broker_;
  io::Reactor& reactor_;
  WaitShard waits_;
  Ref<const Catalog> catalog_;
  std::unique_ptr<Coordinator> coordinator_;  // Shard 0 only.
  absl::flat_hash_map<PartitionKey, std::unique_ptr<Partition>> owned_;
  // The keys of owned_, in order: the stable cursor of walk_partitions (changed only where a
  // partition opens or goes, never per request).
  std::set<PartitionKey> owned_order_;
  absl::flat_hash_set<PartitionKey> hosted_;  // BrokerOptions::hosted_only: Broker::host's.
  // Broker::host's places: a partition takes its place as it opens, whatever opened it.
  absl::flat_hash_map<PartitionKey, ReplicaPlace> places_;
  // Takes `key`'s place, if host() gave it one (logged on failure).
  Status take_place(const PartitionKey& key, Partition& partition);
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> balanced_;  // (stream, topic)
  // (group id, member) -> polls so far. Group ids repeat across topics: two members sharing
  // a cursor only shifts where their round robin starts.
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> group_cursors_;
  PollJobPool poll_jobs_;
  IntrusiveList<GroupWaiter, GroupPollTag> parked_group_polls_;
  RetentionTimer retention_timer_{*this};
  PollCounters poll_counters_;
  AppendCounters append_counters_;
  size_t operations_in_flight_ = 0;
  bool shutting_down_ = false;
};

// The partition an append with `partitioning` goes to on `topic`, picked on `shard` (balanced:
// its next turn). The one rule for Append and Broker::pick_partition. Errors: no_partitions,
// partition_not_found.
Result<uint32_t> pick_partition(BrokerShard& shard, const TopicEntry& topic,
                                const Partitioning& partitioning);

}  // namespace hark::core::internal
