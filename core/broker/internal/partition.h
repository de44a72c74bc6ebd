#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/condition.h"
#include "hark/core/broker/internal/catalog.h"
#include "hark/core/broker/internal/offset_store.h"
#include "hark/core/broker/operations.h"
#include "hark/core/wait/wait_shard.h"
#include "hark/storage/partition_log.h"
#include "hark/storage/replica_state.h"

namespace hark::core::internal {

// A partition on its owner shard: the log, the stored consumer offsets, and the commit point
// it publishes to (its PartitionCell): every commit advance of the log (when a write, or under
// `always` an fdatasync, completes; at append under `memory`) is published to `waits`. It is its
// cell's WinHook: a woken poll gets the committed messages from here, up to `poll_bytes_max`.
// Used on the owner shard only.
class Partition final : private storage::CommitListener,
                        private OffsetStore::Listener,
                        public WinHook {
 public:
  // `waits` (the owner shard's) must outlive the partition.
  Partition(WaitShard& waits, Ref<PartitionCell> cell, std::unique_ptr<storage::PartitionLog> log,
            std::unique_ptr<OffsetStore> offsets, uint64_t poll_bytes_max);
  ~Partition();
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  PartitionCell& cell() { return *cell_; }
  const PartitionCell& cell() const { return *cell_; }
  storage::PartitionLog& log() { return *log_; }

  // Appends. The batch commits when its write completes (durability `always`: its fdatasync;
  // `memory`: at once; log().when_committed() hears of it); parked polls it satisfies wake at the
  // end of the loop iteration of the commit.
  Result<storage::AppendResult> append(std::span<const std::byte> messages, uint32_t count);
  // The same for messages another log stored (storage::PartitionLog::append_stored).
  // shard_communication_error (11001) on a replicated leader: its followers copy from it.
  Result<storage::AppendResult> append_stored(std::span<const std::byte> messages, uint32_t count,
                                              std::optional<storage::SegmentBounds> source);

  // Replication (docs/cluster.md §Replication). Takes its place: a leader of `place.replicas`
  // members (storage::PartitionLog::lead, again only when the epoch, the set or the size
  // changes) whose in-sync members are `place.in_sync` plus those expand_in_sync() added and the
  // place does not name yet; or a follower (PartitionLog::follow) that learns `leader_commit`.
  // A leader taking an epoch its replica state does not hold yet records it, with its log's end
  // as the epoch's start, fdatasynced, before it takes anything in it. Errors:
  // shard_communication_error (11001) for an epoch older than the partition's;
  // invalid_replication_factor (2018); a replica state write's error.
  Status replicate(const ReplicaPlace& place, Offset leader_commit);
  // A leader counts `member` in sync from now on, before the controller records it (so the set
  // the controller elects from never holds a member the commit point did not wait for).
  // shard_communication_error unless it leads `epoch` with `set`.
  Status expand_in_sync(uint64_t epoch, uint64_t set, uint32_t member);
  // A follower's fetch from `from` arrives: its durable end, reported to the log, and the
  // version of this partition's offsets it holds (offset changes it held up end). Errors:
  // shard_communication_error (11001) when this is not the leader of `epoch` with that set;
  // those of PartitionLog::report_durable.
  Status follower_fetch(const ReplicaFetch& fetch, Offset from);
  // PartitionLog::truncate, then the appended end is published again. `epoch` (nonzero): the
  // follower now holds a prefix of that epoch's log: recorded (fdatasynced) in its replica state.
  Status truncate(Offset end, uint64_t epoch);
  // The last epoch the replica state records (0: none) and the start of the epoch it leads.
  uint64_t recorded_epoch() const { return state_ ? state_->epoch : 0; }
  uint64_t epoch_start() const { return state_ ? state_->epoch_start : 0; }
  uint64_t epoch() const { return epoch_; }
  // Who reads for the fetches an append wins on the cell's appended point (up to the
  // appended end).
  WinHook& appended_hook() { return appended_hook_; }
  // A move's fence (docs/cluster.md §Moves; FencePartition): while set, appends are held here,
  // neither run nor answered, at most `held_max`; hold() refuses more (the caller answers
  // 11001, retryable). lift_fence() clears it and hands the held appends back, in order.
  static constexpr size_t held_max = 4096;
  bool fenced() const { return fenced_; }
  void fence() { fenced_ = true; }
  bool hold(Append& append);
  size_t held_count() const { return held_.size(); }
  std::vector<Append*> lift_fence();

  // Drops every message and stored offset; a new epoch at offset 0 (parked polls: empty).
  Status purge(WaitShard& waits);
  Status apply_retention();
  Result<uint32_t> delete_segments(uint32_t count);

  // The first offset a poll reads (docs/long-polling.md §When a poll parks: it is also the `want`
  // of its registration when the poll parks).
  Result<Offset> start_for(PollFrom from, uint64_t value, uint32_t count,
                           const ConsumerRef& consumer) const;

  std::optional<uint64_t> stored_offset(const ConsumerRef& consumer) const;
  // What a condition sees of this partition now.
  PartitionFacts facts() const;
  // Calls fn(consumer) for every consumer and group with an offset stored here.
  template <typename Fn>
  void for_each_consumer(Fn&& fn) const {
    offsets_->for_each([&](const ConsumerRef& consumer, uint64_t) { fn(consumer); });
  }
  // Evaluates `condition` on this partition now (docs/notifications.md): for a request's
  // evaluation and, through judge(), for its parked waiters. Counted by the owner's WaitShard.
  Verdict evaluate(const Condition& condition, const ConditionRequest& request,
                   std::span<std::byte, condition_answer_max> answer);
  // invalid_offset (4100) past the last offset or on an empty partition, as Iggy 0.8.0;
  // shard_communication_error (11001, retryable at the leader) on a follower; else ok, and
  // `done` hears once the offset is written (OffsetStore) and, on a replicated leader, held by
  // its followers (offset_written below).
  Status store_offset(const ConsumerRef& consumer, uint64_t offset, OffsetWritten& done);
  // consumer_offset_not_found (3021) if nothing was stored; 11001 on a follower; else ok, and
  // `done` hears later.
  Status delete_offset(const ConsumerRef& consumer, OffsetWritten& done);
  // Replicated offsets (docs/cluster.md §Replication, Consumer offsets). The version of the
  // stored offsets: grows with every change, and starts past any version an earlier opening of
  // this partition on this node published, so a follower that holds a leader's version holds
  // exactly its offsets.
  uint64_t offsets_version() const { return offsets_version_; }
  std::vector<std::pair<ConsumerRef, uint64_t>> stored_offsets() const;
  // A follower takes its leader's stored offsets, all of them (those it holds and the leader
  // does not are deleted). Returns true if a write is under way (`done` hears of it), false if
  // it held them already. shard_communication_error (11001) unless it follows.
  Result<bool> adopt_offsets(std::span<const std::pair<ConsumerRef, uint64_t>> offsets,
                             OffsetWritten& done);

  // Writes out what is pending and closes the log and the offsets (drives the ring).
  void close();

 private:
  // Reads for a follower's fetch woken on the appended point: up to the appended end.
  class AppendedHook final : public WinHook {
   public:
    explicit AppendedHook(Partition& partition) : partition_(partition) {}
    void on_won(Registration& registration) override;
    bool judge(Registration& registration) override;

   private:
    Partition& partition_;
  };

  void publish_figures();
  // A stored offset changed: conditions are evaluated again, followers' fetches woken.
  void offsets_changed();
  // A change of the offsets is answered once every in-sync follower and a majority hold its
  // version (none to wait for without followers); those waiting, in version order, are
  // answered once they do, or with `error` when the partition stops leading.
  void offset_written(OffsetWritten& done, Status status) override;
  bool offsets_replicated(uint64_t version) const;
  void settle_offsets();
  void fail_offset_waiters(Error error);
  // Publishes the appended end on the cell's appended point (wakes parked follower fetches);
  // after a roll-back or a truncation below what was published, a new epoch there.
  void publish_appended();
  void commit_advanced(Offset next_offset) override;
  void on_won(Registration& registration) override;
  bool judge(Registration& registration) override;
  // A condition over a total: its measure and answer go to the request's home.
  void report(Registration& registration, const Verdict& verdict);

  WaitShard& waits_;
  Ref<PartitionCell> cell_;
  std::unique_ptr<storage::PartitionLog> log_;
  std::unique_ptr<OffsetStore> offsets_;
  const uint64_t poll_bytes_max_;
  bool fenced_ = false;
  std::vector<Append*> held_;
  AppendedHook appended_hook_{*this};
  uint64_t epoch_ = 0;  // The leader epoch the partition's role was given in.
  uint64_t offsets_version_ = 0;
  // Leader: the offsets version each follower's last fetch held (0: the leader's own slot).
  std::array<uint64_t, storage::PartitionLog::replicas_max> offsets_held_{};
  IntrusiveList<OffsetWritten, OffsetWrittenTag> offset_waiters_;
  uint64_t set_ = 0;
  uint32_t view_in_sync_ = 1;  // The in-sync members its last place named.
  uint32_t expanded_ = 0;      // Counted in sync before a place names them.
  std::optional<storage::ReplicaState> state_;
  // Writes state_ (with its commit raised to the log's), synced or not.
  Status store_state(bool sync);
};

}  // namespace hark::core::internal
