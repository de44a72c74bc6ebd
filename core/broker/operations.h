#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/base/units.h"
#include "core/broker/name_or_id.h"
#include "core/wait/wait.h"
#include "core/wait/wait_shard.h"
#include "io/reactor.h"
#include "storage/partition_log.h"
#include "storage/read_view.h"

namespace hark::core {

class Broker;
namespace internal {
class BrokerShard;
class CatalogEdit;
class Coordinator;
class PartitionCell;
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

// Who polls or stores an offset. A named consumer is hashed to its id by the caller (the
// server uses Iggy's XXH32 rule).
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

// Where a poll starts (SEMANTICS.md §When a poll parks): the same values as Iggy's wire.
enum class PollFrom : uint8_t { offset = 1, timestamp = 2, first = 3, last = 4, next = 5 };

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
  friend class Broker;
  friend class internal::BrokerShard;
  friend class internal::Coordinator;

  void run() final;
  // One step of the operation on the shard that runs it; `stage_` says which.
  virtual void step(internal::BrokerShard& shard) = 0;

 protected:
  // Ends the operation: back to the home shard if needed, then done().
  void finish(internal::BrokerShard& shard, Status status);
  void go_to(internal::BrokerShard& shard, ShardId target, uint8_t stage);

  Status status_;
  ShardId home_{};
  uint8_t stage_ = 0;
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
};

class CreateStream : public MetadataCommand {
 public:
  std::string name;
  StreamInfo stream;  // Out.

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class DeleteStream : public MetadataCommand {
 public:
  NameOrId stream;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Drops every message of every partition of the stream and its stored offsets; each
// partition restarts empty at offset 0 in a new epoch (parked polls are answered empty).
class PurgeStream : public MetadataCommand {
 public:
  NameOrId stream;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class CreateTopic : public MetadataCommand {
 public:
  NameOrId stream;
  std::string name;
  TopicSettings settings;
  TopicDetails topic;  // Out.

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class DeleteTopic : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class PurgeTopic : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Reads of the catalog: answered on the home shard from its view.
class GetStream : public Operation {
 public:
  NameOrId stream;
  std::optional<StreamDetails> result;  // Out; nullopt if there is no such stream.

 private:
  void step(internal::BrokerShard& shard) override;
};

class GetStreams : public Operation {
 public:
  std::vector<StreamInfo> streams;  // Out, by id.

 private:
  void step(internal::BrokerShard& shard) override;
};

class GetTopic : public Operation {
 public:
  NameOrId stream;
  NameOrId topic;
  // Out; nullopt if there is no such topic. A missing stream is an error (1009/1010).
  std::optional<TopicDetails> result;

 private:
  void step(internal::BrokerShard& shard) override;
};

class GetTopics : public Operation {
 public:
  NameOrId stream;
  std::vector<TopicInfo> topics;  // Out, by id.

 private:
  void step(internal::BrokerShard& shard) override;
};

// Appends `count` messages in Iggy's format (64-byte header + payload + user headers, back to
// back; the server stamps offsets, timestamps, ids and checksums) to one partition of a topic.
// `messages` must stay valid and unchanged until done(). When done() runs the messages are
// committed: polls see them and parked polls are woken.
class Append : public Operation {
 public:
  NameOrId stream;
  NameOrId topic;
  Partitioning partitioning;
  std::span<const std::byte> messages;
  uint32_t count = 0;
  uint32_t partition_id = 0;       // Out: where they went.
  storage::AppendResult appended;  // Out.

 private:
  void step(internal::BrokerShard& shard) override;
  void resolve(internal::BrokerShard& shard);
  void at_owner(internal::BrokerShard& shard);

  std::shared_ptr<internal::PartitionCell> cell_;
};

// What a poll returns: the messages (a view of committed, immutable bytes, valid on any thread
// while held) and where the partition stands.
struct PollResult {
  uint32_t partition_id = 0;
  uint64_t current_offset = 0;  // Last offset of the partition; 0 when empty.
  storage::ReadView messages;
};

// Reads messages from one partition and, with `wait` > 0, parks until some are committed or
// the wait ends (SEMANTICS.md; docs/long-polling.md). A poll that ends without messages
// (timeout, purge, shutdown) succeeds with an empty result. One read returns contiguous bytes:
// fewer than `count` messages may come back at a segment or memory-chunk boundary; poll again
// from the last offset + 1 for the rest. The broker stores no offset for a poll: store it with
// StoreOffset once the messages are delivered (harkd does so after the response is written).
class Poll : public Operation, private WaitClient {
 public:
  NameOrId stream;
  NameOrId topic;
  // Absent: partition 0 for a consumer. A group consumer must name its partition until
  // consumer groups exist (issue 7); without one it gets consumer_group_member_not_found.
  std::optional<uint32_t> partition;
  ConsumerRef consumer;
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
  void evaluate(internal::BrokerShard& shard);
  void evaluate_at_owner(internal::BrokerShard& shard);
  void back_home(internal::BrokerShard& shard);
  void evaluated_at_home(internal::BrokerShard& shard);
  void park(internal::BrokerShard& shard);
  void on_abort(internal::BrokerShard& shard, AbortReason reason);
  void answer(internal::BrokerShard& shard);
  void answer_empty(internal::BrokerShard& shard);
  void answer_gone(internal::BrokerShard& shard);

  class Reader final : public storage::ReadCompletion {
   public:
    explicit Reader(Poll& poll) : poll_(poll) {}
    void read_done(Result<storage::ReadView> view) override;

   private:
    Poll& poll_;
  };

  Reader reader_{*this};
  std::shared_ptr<internal::PartitionCell> cell_;  // While in flight.
  Instant deadline_{};
  Offset want_{};
  uint64_t epoch_ = 0;
  Wait* wait_ = nullptr;  // While parked.
  bool cancel_requested_ = false;
  bool woken_ = false;  // Parking again after a wake-up counts as a re-park.
};

// Stores `offset` as the consumer's position on a partition (offset > the partition's last
// offset, or any offset on an empty partition: invalid_offset 4100, as Iggy 0.8.0).
class StoreOffset : public Operation {
 public:
  ConsumerRef consumer;
  NameOrId stream;
  NameOrId topic;
  std::optional<uint32_t> partition;  // Absent: partition 0.
  uint64_t offset = 0;

 private:
  void step(internal::BrokerShard& shard) override;

  std::shared_ptr<internal::PartitionCell> cell_;
};

class GetOffset : public Operation {
 public:
  ConsumerRef consumer;
  NameOrId stream;
  NameOrId topic;
  std::optional<uint32_t> partition;  // Absent: partition 0.
  uint32_t partition_id = 0;          // Out.
  uint64_t current_offset = 0;        // Out.
  std::optional<uint64_t> stored;     // Out; nullopt when nothing is stored.

 private:
  void step(internal::BrokerShard& shard) override;

  std::shared_ptr<internal::PartitionCell> cell_;
};

// Counters of every shard, summed (docs/long-polling.md §Counters).
struct BrokerStats {
  WaitCounters waits;
  uint64_t reevaluated = 0;     // Woken polls the owner could not answer with data at once.
  uint64_t reparked = 0;        // Woken polls that found nothing and parked again.
  uint64_t eventfd_writes = 0;  // Cross-shard wakes of sleeping shards.
  uint64_t partitions = 0;
  uint64_t messages_count = 0;
  uint64_t size_bytes = 0;
};

class GetStats : public Operation {
 public:
  BrokerStats stats;  // Out.

 private:
  void step(internal::BrokerShard& shard) override;
  uint32_t visited_ = 0;
};

}  // namespace hark::core
