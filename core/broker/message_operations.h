#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/base/intrusive_list.h"
#include "core/base/ref.h"
#include "core/broker/offset_written.h"
#include "core/broker/operation.h"
#include "core/wait/wait.h"
#include "core/wait/wait_shard.h"
#include "storage/partition_log.h"
#include "storage/read_view.h"

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
  Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) override;
  void at_owner(internal::BrokerShard& shard, internal::Partition& owner) override;
  void committed(Status status) override;
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
};

// Tag of the hook by which a shard lists its parked group polls (to re-evaluate them when
// their group rebalances).
struct GroupPollTag;

// Reads messages from one partition and, with `wait` > 0, parks until some are committed or
// the wait ends (docs/long-polling.md). A poll that ends without messages
// (timeout, purge, shutdown) succeeds with an empty result. One read returns contiguous bytes:
// fewer than `count` messages may come back at a segment or memory-chunk boundary; poll again
// from the last offset + 1 for the rest. The broker stores no offset for a poll: store it with
// StoreOffset once the messages are delivered (harkd does so after the response is written).
class Poll : public Operation, private WaitClient, public ListHook<GroupPollTag> {
 public:
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
  PollResult result;            // Out.

 private:
  friend class internal::BrokerShard;
  friend class Broker;

  enum Stage : uint8_t { start, at_owner, at_home, cancelled };

  void step(internal::BrokerShard& shard) override;
  void on_wait_done(Wait& parked, WaitState state, Registration* winner) override;
  void begin(internal::BrokerShard& shard);
  Status resolve_group(internal::BrokerShard& shard);
  void evaluate(internal::BrokerShard& shard);
  void visit_next(internal::BrokerShard& shard);
  void evaluate_at_owner(internal::BrokerShard& shard);
  void evaluated_here(internal::BrokerShard& shard);
  void evaluated_at_home(internal::BrokerShard& shard);
  void park(internal::BrokerShard& shard);
  void on_abort(internal::BrokerShard& shard, AbortReason reason);
  void answer(internal::BrokerShard& shard);
  void answer_empty(internal::BrokerShard& shard);
  // Fills the result's partition and current offset for an answer without messages.
  void report_waited_on();
  void answer_gone(internal::BrokerShard& shard);
  void unpark(internal::BrokerShard& shard);
  // A rebalance changed the group (on the home shard, while parked).
  void rebalanced(internal::BrokerShard& shard);
  // Reads the member's assignment again and evaluates it, keeping the deadline.
  void reassigned(internal::BrokerShard& shard);

  class Reader final : public storage::ReadCompletion {
   public:
    explicit Reader(Poll& poll) : poll_(poll) {}
    void read_done(Result<storage::ReadView> view) override;

   private:
    Poll& poll_;
  };

  Reader reader_{*this};
  // The partitions this poll reads, in order (one, or a group member's assignment from its
  // round-robin cursor) and, as each owner is visited, what to wait for there.
  std::vector<Ref<internal::PartitionCell>> cells_;
  std::vector<Watch> watches_;
  std::vector<uint32_t> assigned_;  // A group member's partitions when it parked.
  size_t visiting_ = 0;
  Instant deadline_{};
  Wait* wait_ = nullptr;  // While parked.
  bool cancel_requested_ = false;
  bool woken_ = false;       // Parking again after a wake-up counts as a re-park.
  bool group_wide_ = false;  // A group member polling all its partitions.
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
