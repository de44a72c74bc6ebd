#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/name_or_id.h"
#include "hark/core/broker/operations.h"
#include "hark/core/ownership_map.h"
#include "hark/core/partition_key.h"
#include "hark/core/wait/commit_point.h"

namespace hark::core::internal {

// One partition as every shard sees it: its key, its commit point (where polls park), and the
// figures its owner publishes after each append for get_stream/get_topic on any shard.
// Shared (Ref) by every catalog version that lists it, so it outlives the last shard that could
// still reach it; the owner releases its commit point before it drops out of the catalog.
class PartitionCell final : public CommitPoint, public RefCounted {
 public:
  PartitionCell(PartitionKey partition_key, ShardId owner, UnixMicros created)
      : CommitPoint(owner),
        appended(owner),
        offsets(owner),
        key(partition_key),
        created_at(created) {}

  PartitionInfo info() const;
  // Iggy's current_offset: the last offset, 0 when empty.
  uint64_t current_offset() const;

  // The partition's appended end (written or not, committed or not), published at each append:
  // where followers' fetches park (docs/cluster.md §Replication, Built: the core side), on the
  // same machinery as polls on the commit point (the cell itself).
  CommitPoint appended;
  // The version of its stored consumer offsets (Partition::offsets_version), published at each
  // change: where a follower's fetch that holds the current version also waits, so a stored
  // offset reaches the followers at once, not with the next append.
  CommitPoint offsets;
  const PartitionKey key;
  const UnixMicros created_at;
  // Published by the owner (relaxed: figures, not synchronization).
  std::atomic<uint64_t> size_bytes{0};
  std::atomic<uint64_t> messages_count{0};
  std::atomic<uint32_t> segments_count{0};
};

// A consumer group: its members (clients, in join order) and the partitions each is assigned.
// Assignment rule: partition p goes to member p mod members_count, members in join order
// (docs/architecture.md §Consumer groups); recomputed whenever members or partitions change.
// Members are connections, so on one node they are not persisted: after a restart every group
// is empty. In cluster mode they are journaled (Catalog::members_journaled), and the server
// removes a node's members when it leaves or restarts (LeaveMembersInRange).
struct GroupEntry : RefCounted {
  uint32_t id = 0;
  std::string name;
  std::vector<GroupMemberInfo> members;

  const GroupMemberInfo* member(uint32_t client) const;
  void assign(uint32_t partitions_count);
  GroupDetails details(uint32_t partitions_count) const;
};

struct TopicEntry : RefCounted {
  uint32_t id = 0;
  std::string name;
  UnixMicros created_at = 0;
  TopicSettings settings;
  std::vector<Ref<PartitionCell>> partitions;  // Index = partition id.
  std::map<uint32_t, Ref<const GroupEntry>> groups;
  uint32_t next_group_id = 0;

  TopicInfo info() const;
  TopicDetails details() const;
  // Iggy's errors for a missing group: 5000 (by id) or 5003 (by name).
  Result<const GroupEntry*> group(const NameOrId& ref) const;
};

struct StreamEntry : RefCounted {
  uint32_t id = 0;
  std::string name;
  UnixMicros created_at = 0;
  std::map<uint32_t, Ref<const TopicEntry>> topics;
  uint32_t next_topic_id = 0;

  StreamInfo info() const;
  // Iggy's errors for a missing topic: 2010 (by id) or 2011 (by name).
  Result<const TopicEntry*> topic(const NameOrId& ref) const;
};

// Streams, topics and partitions: an immutable snapshot. Shard 0 makes each new version from
// the last one (CatalogEdit) and hands it to every shard; entries that did not change are
// shared between versions.
struct Catalog : RefCounted {
  uint64_t version = 0;
  // The last metadata journal entry this catalog includes (journal.h, RecordKind::entry).
  uint64_t sequence = 0;
  // Group membership is journaled (RecordKind::member_joined/left) when the journal is shared
  // by several nodes (BrokerOptions::journal), so that every node deals a group's partitions
  // to the same members; on one node members are connections and are not journaled.
  bool members_journaled = false;
  std::map<uint32_t, Ref<const StreamEntry>> streams;
  uint32_t next_stream_id = 0;

  // Iggy's errors for a missing stream: 1009 (by id) or 1010 (by name).
  Result<const StreamEntry*> stream(const NameOrId& ref) const;
  Result<const TopicEntry*> topic(const NameOrId& stream_ref, const NameOrId& topic_ref) const;
  // partition_not_found (3007) past the topic's partitions.
  Result<Ref<PartitionCell>> partition(const NameOrId& stream_ref, const NameOrId& topic_ref,
                                       uint32_t partition_id) const;
  // Partitions over every stream and topic (control plane: walks the catalog).
  uint64_t partitions_count() const;
  // By key (the partition a poll or append already resolved), or null if it is gone.
  PartitionCell* find(const PartitionKey& key) const;
};

// The next catalog version, being made on shard 0 by one metadata command (or at start, by
// replaying the metadata log), and what the shards must do to their partitions to get there.
// Every change is also written to `journal` as a metadata log record (journal.h), with the
// ids and times it assigned, so replaying the records rebuilds the same catalog.
class CatalogEdit {
 public:
  CatalogEdit(const Catalog& base, const OwnershipMap& ownership, Clock& clock);

  const Catalog& catalog() const { return *next_; }
  UnixMicros now() const { return clock_.realtime_now(); }

  // A copy of the stream's entry, now part of the next version, to change.
  Result<StreamEntry*> writable_stream(const NameOrId& ref);
  StreamEntry& add_stream(uint32_t id, UnixMicros created_at, std::string name);
  void rename_stream(StreamEntry& stream, std::string name);
  void remove_stream(const StreamEntry& stream);
  TopicEntry& add_topic(StreamEntry& stream, uint32_t id, UnixMicros created_at, std::string name,
                        const TopicSettings& settings);
  // Changes name and settings but not partitions_count (add_partitions / remove_partitions).
  void update_topic(StreamEntry& stream, const TopicEntry& topic, std::string name,
                    const TopicSettings& settings);
  void remove_topic(StreamEntry& stream, const TopicEntry& topic);
  void add_partitions(StreamEntry& stream, const TopicEntry& topic, uint32_t count,
                      UnixMicros created_at);
  // Removes the last `count` partitions. Requires: count <= the topic's partitions.
  void remove_partitions(StreamEntry& stream, const TopicEntry& topic, uint32_t count);
  // Data, journaled all the same (RecordKind::topic_purged) so that every node purges the
  // partitions it hosts; the catalog does not change.
  void purge_topic(const StreamEntry& stream, const TopicEntry& topic);
  GroupEntry& add_group(StreamEntry& stream, const TopicEntry& topic, uint32_t id,
                        std::string name);
  void remove_group(StreamEntry& stream, const TopicEntry& topic, const GroupEntry& group);
  // Membership (journaled only if Catalog::members_journaled). join is idempotent; leave
  // returns false if `client` is not a member.
  void join_group(StreamEntry& stream, const TopicEntry& topic, const GroupEntry& group,
                  uint32_t client);
  bool leave_group(StreamEntry& stream, const TopicEntry& topic, const GroupEntry& group,
                   uint32_t client);

  // The journal entry this version ends with (journal.h, RecordKind::entry).
  void set_sequence(uint64_t sequence);
  // Id counters, as a snapshot carries them (journal.h, RecordKind::next_ids): raised to
  // `next`, never lowered, so an id a deleted entry had is never given again.
  void raise_next_stream_id(uint32_t next);
  void raise_next_topic_id(StreamEntry& stream, uint32_t next);
  void raise_next_group_id(StreamEntry& stream, const TopicEntry& topic, uint32_t next);

  Ref<const Catalog> take() { return std::move(next_); }
  std::vector<std::byte> journal;
  // The extension records (journal.h) this edit journaled or replayed, in order.
  std::vector<std::vector<std::byte>> extensions;
  std::vector<Ref<PartitionCell>> created;
  std::vector<Ref<PartitionCell>> removed;
  std::vector<Ref<PartitionCell>> purged;

 private:
  TopicEntry& writable_topic(StreamEntry& stream, const TopicEntry& topic);
  GroupEntry& writable_group(TopicEntry& topic, const GroupEntry& group);
  void reassign_groups(TopicEntry& topic);
  // True if `stream` is this edit's own copy (writable_stream), which alone may change: the
  // entries it replaces are shared with the catalog versions other shards still read.
  bool writable(const StreamEntry& stream) const;
  Ref<PartitionCell> make_cell(const StreamEntry& stream, const TopicEntry& topic,
                               uint32_t partition, UnixMicros created_at);

  Ref<Catalog> next_;
  const OwnershipMap& ownership_;
  Clock& clock_;
};

}  // namespace hark::core::internal
