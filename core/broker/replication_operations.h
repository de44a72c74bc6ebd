#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "hark/core/broker/offset_written.h"
#include "hark/core/broker/operation.h"

namespace hark::core {

// Replication, the core side (docs/cluster.md §Replication, Built: the core side; the design is
// Kafka's: a leader, followers fetching from it through the deferred poll, a leader epoch given
// by the controller). A partition's commit point — what polls see, what wakes parked polls, what
// acknowledges an Append — is the largest offset a majority of its replica set holds durably
// (storage::quorum_end; the leader counts once its own write is durable). A partition starts as
// the leader of a set of one, so without replication it commits at its own write as ever.
//
// The server moves the bytes: a follower's fetch is a Poll with `replica` set, parked on the
// leader's appended end and woken by the next append; its answer carries the messages and the
// leader's commit point; the follower stores them with AppendStored, learns the commit point
// with Replicate, and fetches again from its durable end, which acknowledges them.

// Takes a role in a leader epoch: leader of `replicas` members (itself included), or follower.
// The same role and epoch again only learns `leader_commit` (a follower) or changes nothing; a
// new epoch resets what the leader knows of its followers (they report again at their next
// fetch). A follower refuses Append (11001: sends go to the leader) and, like every partition,
// serves polls only up to its commit point: the leader's as it learned it, never past its own
// durable end. The epoch is held in memory: the controller (etcd) is its record. Errors:
// shard_communication_error (11001) for an epoch older than the partition's,
// invalid_replication_factor (2018) for 0 or more than storage::PartitionLog::replicas_max.
class Replicate : public PartitionOperation {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t partition = 0;
  ReplicaRole role = ReplicaRole::leader;
  uint64_t epoch = 0;
  uint32_t replicas = 1;       // A leader's replica set, itself included.
  uint64_t set = 0;            // ReplicaPlace::set.
  uint32_t in_sync = 1;        // ReplicaPlace::in_sync.
  uint64_t leader_commit = 0;  // A follower's: the commit point of the leader's last answer.
  // Nonzero: only count this member in sync from now on (a leader of `epoch` and `set`, before
  // the controller records it; Partition::expand_in_sync); the rest of the place is not taken.
  uint32_t expand = 0;
  // Out: the partition's three ends after the call.
  uint64_t commit_end = 0;      // The commit point (exclusive end).
  uint64_t durable_end = 0;     // What its own writes made durable.
  uint64_t appended_end = 0;    // What it appended, committed or not.
  uint64_t recorded_epoch = 0;  // The last epoch its replica state records (0: none).

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
};

// Drops every message of a partition at or after `end` (a follower after a leader change cuts
// what the new leader epoch does not hold, as Kafka's followers truncate to the epoch's end):
// written and synced first, so a restart recovers the truncated log; then cut from memory and
// files. A follower fetch parked on it ends (empty). Runs blocking file calls on the owner
// shard (rare: once per leader change). Errors: invalid_offset (4100) for an `end` below the
// commit point, which never goes back, or past the appended end; a write failure's code.
class TruncatePartition : public PartitionOperation {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t partition = 0;
  uint64_t end = 0;
  // Nonzero: the follower holds a prefix of this epoch's log once cut: recorded, fdatasynced,
  // in its replica state (docs/cluster.md §Replication, Truncation). An `end` at the appended
  // end then cuts nothing and only records.
  uint64_t epoch = 0;

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
};

// A follower takes the stored consumer offsets of its leader (a fetch's PollResult::offsets):
// exactly those, written (fdatasynced under `always`) before it is done, so the follower's next
// fetch can name their version as held. Errors: shard_communication_error (11001) unless the
// partition follows; an offsets write's error.
class AdoptOffsets : public PartitionOperation, private OffsetWritten {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t partition = 0;
  std::vector<std::pair<ConsumerRef, uint64_t>> offsets;

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
  void offset_written(Status status) override;
};

}  // namespace hark::core
