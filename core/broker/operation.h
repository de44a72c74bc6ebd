#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/core/broker/name_or_id.h"
#include "hark/core/partition_key.h"
#include "hark/io/reactor.h"

namespace hark::core {

class Broker;
namespace internal {
class BrokerShard;
class CatalogEdit;
class Coordinator;
class Flow;
class Partition;
class PartitionCell;
class PollJob;
class NotifyJob;
// Where an operation is in its run (core/broker/internal/stage.h): the engine's, not yours.
enum class Stage : uint8_t;
}  // namespace internal

// What the broker reports about a stream, a topic and a partition (Iggy's fields; times are
// µs since the epoch, sizes in bytes).
struct StreamInfo {
  uint32_t id = 0;
  UnixMicros created_at = 0;
  std::string name;
  uint32_t topics_count = 0;
  uint64_t size_bytes = 0;
  uint64_t messages_count = 0;
};

// How a topic is created. message_expiry_us: 0 = server default, UINT64_MAX = never;
// max_topic_size: 0 = server default, UINT64_MAX = unlimited (both kept and reported; retention
// by them is applied by the log). compression: 1 none, 2 gzip (reported, not applied: messages
// are stored as sent).
struct TopicSettings {
  uint32_t partitions_count = 1;
  uint8_t compression = 1;
  uint64_t message_expiry_us = 0;
  uint64_t max_topic_size = 0;
  uint8_t replication_factor = 1;
};

struct PartitionInfo {
  uint32_t id = 0;
  UnixMicros created_at = 0;
  uint32_t segments_count = 0;
  uint64_t current_offset = 0;  // Last offset; 0 when empty (as Iggy reports it).
  uint64_t size_bytes = 0;
  uint64_t messages_count = 0;
};

// One partition's figures with its key, as its owning shard last published them (zero on a
// cluster node that does not host it): Broker::partition_figures.
struct PartitionFigures {
  PartitionKey key;
  PartitionInfo info;
};

struct TopicInfo {
  uint32_t id = 0;
  UnixMicros created_at = 0;
  std::string name;
  TopicSettings settings;
  uint64_t size_bytes = 0;
  uint64_t messages_count = 0;
};

struct TopicDetails {
  TopicInfo topic;
  std::vector<PartitionInfo> partitions;
};

struct StreamDetails {
  StreamInfo stream;
  std::vector<TopicInfo> topics;
};

struct GroupInfo {
  uint32_t id = 0;
  std::string name;
  uint32_t partitions_count = 0;
  uint32_t members_count = 0;
};

struct GroupMemberInfo {
  uint32_t id = 0;                   // The member's client id.
  std::vector<uint32_t> partitions;  // Assigned to it.
};

struct GroupDetails {
  GroupInfo group;
  std::vector<GroupMemberInfo> members;
};

// Who polls or stores an offset. A named consumer is hashed to its id by the caller (the
// server uses Iggy's XXH32 rule). For a group, operations take the group by id or name in a
// separate `group` field and fill in `id` themselves.
struct ConsumerRef {
  enum class Kind : uint8_t { consumer = 1, group = 2 };
  Kind kind = Kind::consumer;
  uint32_t id = 0;

  bool operator==(const ConsumerRef&) const = default;
  template <typename H>
  friend H AbslHashValue(H state, const ConsumerRef& consumer) {
    return H::combine(std::move(state), consumer.kind, consumer.id);
  }
};

// Where a poll starts (docs/long-polling.md §When a poll parks): the same values as Iggy's wire.
enum class PollFrom : uint8_t { offset = 1, timestamp = 2, first = 3, last = 4, next = 5 };

// Replication (core/broker/replication_operations.h): a partition's role in its leader epoch.
enum class ReplicaRole : uint8_t { leader, follower };
// A follower's fetch (Poll::replica): which member of the replica set (1 .. replicas - 1) asks,
// in which leader epoch.
struct ReplicaFetch {
  uint32_t member = 0;
  uint64_t epoch = 0;
  uint64_t set = 0;  // ReplicaPlace::set as the follower's leader numbered its members.
  // The version of the leader's stored offsets the follower holds (0: none yet). Another one
  // than the leader's gets them all in the answer, at once (PollResult::offsets).
  uint64_t offsets_version = 0;
};
// A partition's place in replication (Broker::host, Replicate): its role in a leader epoch, the
// size of its replica set and, for a leader, who is in sync. `set` names the members' order
// (the server's hash of the node list): a fetch numbered under another order is refused, so one
// node's acknowledgement never lands in another's place.
struct ReplicaPlace {
  ReplicaRole role = ReplicaRole::leader;
  uint64_t epoch = 0;
  uint32_t replicas = 1;  // Leader included.
  uint64_t set = 0;
  uint32_t in_sync = 1;  // A leader's: bit i for member i (bit 0, itself, always set).
  bool operator==(const ReplicaPlace&) const = default;
};
struct HostedPlace {
  PartitionKey key;
  ReplicaPlace place;
};

// Which partition of a topic an append goes to.
struct Partitioning {
  enum class Kind : uint8_t {
    balanced,   // Round robin per topic (per home shard).
    partition,  // `value` is the partition id.
    key_hash,   // `value` is a hash of the message key: partition = value % partitions_count.
  };
  Kind kind = Kind::balanced;
  uint32_t value = 0;
};

// Everything a Broker does is an Operation: the caller fills in the inputs, submits it with
// Broker::submit() and reads the outputs in done(). The object travels between shards as a task
// (no allocation per operation) and belongs to the broker from submit() until done() returns;
// the caller keeps it alive meanwhile and may destroy or reuse it from inside done().
//
// done() runs exactly once, on the operation's home shard: the shard that submitted it, or
// shard 0 for a submit from a thread outside the broker (hand the result to your own thread
// from done(), as Blocking<Op> in blocking.h does). It may run before submit() returns.
//
// The private part is how the engine runs it (core/broker/internal/flow.h); an embedder
// overrides done() and reads status() and the outputs, nothing else.
class Operation : public io::Task {
 public:
  virtual ~Operation() = default;
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  virtual void done() = 0;

  // ok, or the Iggy error the operation failed with.
  const Status& status() const { return status_; }

 protected:
  Operation() = default;

 private:
  friend class internal::Flow;

  void run() final;
  // The step of the operation's stage, on the shard that stage names.
  virtual void step(internal::BrokerShard& shard) = 0;

  Status status_;
  ShardId home_{};
  internal::Stage stage_{};
};

// An operation on one partition: resolved on its home shard, run on the partition's owner
// (one hop when they differ). A partition deleted on the way is PartitionNotFound (3007).
class PartitionOperation : public Operation {
 protected:
  PartitionOperation() = default;

 private:
  void step(internal::BrokerShard& shard) final;
  void run_at_owner(internal::BrokerShard& shard);
  // Home: which partition, or Iggy's error for what is missing.
  virtual Result<Ref<internal::PartitionCell>> resolve(internal::BrokerShard& shard) = 0;
  // Owner: the work, which ends with finish() (at once or later).
  virtual void at_owner(internal::BrokerShard& shard, internal::Partition& owner) = 0;

  Ref<internal::PartitionCell> cell_;  // From resolve() to the owner.
};

// A change of the catalog (streams, topics, partitions). Applied by shard 0, then by every
// shard; answered only after every shard applied it, so a following command on any connection
// sees it (read-your-writes).
class MetadataCommand : public Operation {
 protected:
  MetadataCommand() = default;

 private:
  friend class internal::Coordinator;
  void step(internal::BrokerShard& shard) final;
  // On shard 0: checks the command against the catalog and records the change in `edit`.
  virtual Status apply(internal::CatalogEdit& edit) = 0;
  // Nonzero for an entry of the metadata journal another node wrote (ApplyJournalEntry):
  // its sequence, which orders it among the others.
  virtual uint64_t journaled_sequence() const { return 0; }
};

}  // namespace hark::core
