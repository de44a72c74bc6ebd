#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hark/core/base/assert.h"
#include "hark/core/base/ref.h"
#include "hark/core/broker/offset_written.h"
#include "hark/core/broker/operation.h"
#include "hark/storage/partition_log.h"
#include "hark/storage/read_view.h"

namespace hark::core {

// Messages and offsets: append, poll (with wait), consumer offsets, segments.

// Appends `count` messages in Iggy's format (64-byte header + payload + user headers, back to
// back; the server stamps offsets, timestamps, ids and checksums) to one partition of a topic.
// `messages` must stay valid and unchanged until done(). When done() runs the messages are
// committed: polls see them and parked polls are woken.
// Answered once the batch commits (docs/architecture.md §storage): when its write completed
// (durability `always`: its fdatasync; `memory`: at append); a failed commit answers with its
// error (nothing was kept).
class Append : public PartitionOperation, private storage::CommitCompletion {
 public:
  NameOrId stream;
  NameOrId topic;
  Partitioning partitioning;
  std::span<const std::byte> messages;
  uint32_t count = 0;
  uint32_t partition_id = 0;       // Out: where they went.
  storage::AppendResult appended;  // Out.
  // Out, once the partition was found: the shard that owns it. A client that only uses this
  // partition is served without a hop from there (harkd moves such connections to it).
  std::optional<ShardId> owner_shard;

 private:
  friend class internal::BrokerShard;  // Runs an append a move's fence held (Broker::host).
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
  void committed(Status status) override;

  Instant submitted_at_{};  // For AppendCounters::commit_latency.
};

// Appends messages exactly as another log of this partition stored them, read back from it (a
// partition's copy to its new owner, docs/cluster.md §Moves; storage::PartitionLog::
// append_stored): offsets, timestamps, ids, headers and payloads are kept byte for byte. The
// batch must start at the partition's end (an empty partition starts at the batch's first
// offset); otherwise invalid_offset (4100) and nothing is written. `messages` must stay valid
// and unchanged until done(). Answered once the batch is durable on this partition (durability
// `always`: its fdatasync): on a partition without replication that is its commit, and parked
// polls it satisfies are woken; on a follower (Replicate) the commit follows the leader's.
// A replicated leader refuses it (11001): its followers copy from it.
class AppendStored : public PartitionOperation, private storage::CommitCompletion {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t partition = 0;
  std::span<const std::byte> messages;
  uint32_t count = 0;
  // The other log's sealed segment the batch comes from (PollResult::sealed_segment): this
  // partition's segments start and end where it does (storage::PartitionLog::append_stored).
  std::optional<storage::SegmentBounds> source;
  storage::AppendResult appended;  // Out.
  // Out, once it reached the partition: its end (appended, committed or not) after the call,
  // also when the batch was refused, so a copier learns where to fetch from.
  uint64_t end = 0;

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
  void committed(Status status) override;
};

// A move's fence (docs/cluster.md §Moves): the partition stops admitting appends; those that
// arrive are held at the partition (neither run nor answered; past Partition::held_max refused
// with 11001, retryable) until Broker::host lifts the fence (the move was abandoned: they run)
// or closes the partition (the move committed: 11001, nothing written, a retry reaches the new
// owner). Answered once every append admitted before it committed, with the partition's end
// and its stored consumer and group offsets. Idempotent.
class FencePartition : public PartitionOperation, private storage::CommitCompletion {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t partition = 0;
  uint64_t end = 0;                                       // Out: the log's end.
  std::vector<std::pair<ConsumerRef, uint64_t>> offsets;  // Out: consumer and group offsets.

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
  void committed(Status status) override;

  ShardId owner_shard_{};
};

// What a poll returns: the messages (a view of committed, immutable bytes, valid on any thread
// while held) and where the partition stands.
struct PollResult {
  uint32_t partition_id = 0;
  uint64_t current_offset = 0;  // Last offset of the partition; 0 when empty.
  storage::ReadView messages;
  // The shard that owns the partition, for a poll of one partition (not a group member's
  // tour of its assignment): see Append::owner_shard.
  std::optional<ShardId> owner_shard;
  // A follower's fetch (Poll::replica): the leader's commit point and appended end when it was
  // answered, and where its epoch started (Partition::epoch_start: a follower holding a prefix
  // of the previous epoch's log cuts there).
  uint64_t commit_end = 0;
  uint64_t appended_end = 0;
  uint64_t epoch_start = 0;
  // A follower's fetch: the version of the leader's stored offsets, and all of them when the
  // fetch named another version (docs/cluster.md §Replication, Consumer offsets).
  uint64_t offsets_version = 0;
  std::optional<std::vector<std::pair<ConsumerRef, uint64_t>>> offsets;
  // A copy's (Poll::copy) read at once: the sealed segment the messages come from, if they do
  // (storage::PartitionLog::sealed_segment_at): the copy ends its own segment where this one
  // ends (AppendStored::source), so a follower far behind or a move copies sealed segments.
  std::optional<storage::SegmentBounds> sealed_segment;
};

//
// While it runs, the engine keeps the poll's state (where it reads, what it waits on) in an
// internal::PollJob from its home shard's pool, not in this object
// (core/broker/internal/poll_job.h).
class Poll : public Operation {
 public:
  Poll() = default;
  // Not while it runs: from submit() until done() the broker uses it.
  ~Poll() override { HARK_ASSERT(job_ == nullptr); }

  NameOrId stream;
  NameOrId topic;
  // Absent: partition 0 for a consumer; for a group member, its assignment from a round-robin
  // cursor: with wait 0 the cursor's partition alone (Iggy 0.8.0); with a wait, the first with
  // messages answers, a parked poll waits on all of them, and is evaluated again on its new
  // assignment, with its deadline, when the group rebalances.
  std::optional<uint32_t> partition;
  ConsumerRef consumer;
  NameOrId group;       // When consumer.kind is group.
  uint32_t member = 0;  // The polling client, for a group: it must have joined.
  PollFrom from = PollFrom::next;
  uint64_t value = 0;  // The offset (offset) or µs timestamp (timestamp); else unused.
  uint32_t count = 1;
  Duration wait = Duration(0);  // Clamped to BrokerOptions::max_wait.
  uint32_t min_messages = 1;    // Parked polls wake when this many are committed.
  // Set: a follower's fetch (core/broker/replication_operations.h) from `value`, its durable
  // end, which the leader takes as its acknowledgement of everything below. It reads up to the
  // leader's appended end, written or not, committed or not; parked, it is woken by the next
  // append (not the next commit); its result carries the leader's commit point. Requires
  // `from` offset and a consumer poll. Errors: shard_communication_error (11001) when the
  // partition is not the leader of `epoch`; invalid_replication_factor (2018) for no such
  // member; invalid_offset (4100) for a `value` past the appended end (the follower holds
  // what the leader does not: it truncates to its commit point).
  std::optional<ReplicaFetch> replica;
  // Set: the poll copies the partition (a move's fetch, a follower's): its result names the
  // sealed segment its messages come from when it reads at once (PollResult::sealed_segment).
  bool copy = false;
  PollResult result;  // Out.

 private:
  friend class internal::PollJob;

  void step(internal::BrokerShard& shard) override;

  // The engine's state while the poll runs: taken at its first step, back in the pool before
  // done(). Null otherwise.
  internal::PollJob* job_ = nullptr;
};

// Stores `offset` as the consumer's position on a partition (offset > the partition's last
// offset, or any offset on an empty partition: invalid_offset 4100, as Iggy 0.8.0). Polls see
// it at once; done() runs once it is written (fdatasynced under durability `always`), or with
// cannot_write_to_file / cannot_sync_file when that failed (then the previous offset stays).
class StoreOffset : public PartitionOperation, private OffsetWritten {
 public:
  ConsumerRef consumer;
  NameOrId group;  // When consumer.kind is group.
  NameOrId stream;
  NameOrId topic;
  std::optional<uint32_t> partition;  // Absent: partition 0 (required for a group).
  uint64_t offset = 0;

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
  void offset_written(Status status) override;
};

class GetOffset : public PartitionOperation {
 public:
  ConsumerRef consumer;
  NameOrId group;  // When consumer.kind is group.
  NameOrId stream;
  NameOrId topic;
  std::optional<uint32_t> partition;  // Absent: partition 0 (required for a group).
  uint32_t partition_id = 0;          // Out.
  uint64_t current_offset = 0;        // Out.
  std::optional<uint64_t> stored;     // Out; nullopt when nothing is stored.

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
};

// Deletes the oldest `count` sealed segments of a partition (fewer if fewer are sealed).
class DeleteSegments : public PartitionOperation {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t partition = 0;
  uint32_t count = 0;
  uint32_t deleted = 0;  // Out.

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
};

// Writes a partition's appended messages to disk now (and fdatasyncs them if `fsync`); done()
// once they are, or with the error that stopped the writes.
class FlushUnsavedBuffer : public PartitionOperation, private storage::FlushCompletion {
 public:
  NameOrId stream;
  NameOrId topic;
  uint32_t partition = 0;
  bool fsync = false;

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
  void flushed(Status status) override;
};

// Forgets a consumer's stored offset (consumer_offset_not_found, 3021, if there is none);
// answered once the deletion is written, as StoreOffset.
class DeleteOffset : public PartitionOperation, private OffsetWritten {
 public:
  ConsumerRef consumer;
  NameOrId group;  // When consumer.kind is group.
  NameOrId stream;
  NameOrId topic;
  std::optional<uint32_t> partition;  // Absent: partition 0 (required for a group).

 private:
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
  void offset_written(Status status) override;
};

}  // namespace hark::core
