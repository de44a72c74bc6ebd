#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/core/broker/operations.h"

namespace hark::core::internal {

class CatalogEdit;
struct Catalog;

// Metadata log records (docs/storage-format.md §Metadata log): one per catalog change, with the
// ids and times the change assigned, so replaying them in order rebuilds the catalog exactly.
// Payload = [kind u8][fields, little-endian]; names are [length u8][bytes]. The framing
// (length, checksum) is storage::RecordFile's, shared with harkd's users log.
enum class RecordKind : uint8_t {
  stream_created = 1,
  stream_deleted = 2,
  stream_updated = 3,
  topic_created = 4,
  topic_deleted = 5,
  topic_updated = 6,
  partitions_created = 7,
  partitions_deleted = 8,
  group_created = 9,
  group_deleted = 10,
  // One metadata command's records as one record, with its number in the journal (1, 2,
  // 3..., no gap), so the command is kept whole or not at all, and a node knows where its copy
  // stands against a shared journal: [u64 sequence][the command's framed records].
  entry = 11,
  // Group membership, journaled only when the journal is shared by several nodes (cluster
  // mode: Catalog::members_journaled), so every node deals a group's partitions to the same
  // members: [u32 stream][u32 topic][u32 group][u32 member].
  member_joined = 12,
  member_left = 13,
  // A topic's messages were purged (data, but journaled so that every node applies it to the
  // partitions it hosts: docs/cluster.md §Metadata). Replaying it changes no catalog.
  topic_purged = 14,
  // Bytes the core keeps in an entry but never reads: an embedder's own state journaled in
  // the same order as the catalog (harkd's users in a cluster, docs/cluster.md §Metadata).
  // [the bytes]. Replaying one hands it to CatalogEdit::extensions.
  extension = 15,
  // The whole catalog at entry n, as records that rebuild it on an empty catalog through the
  // same replay (a compacted metadata.log starts with one; docs/storage-format.md §Metadata
  // log): [u64 n][framed records: kinds 1, 4, 7, 9, 12, 15, 17].
  snapshot = 16,
  // An id counter, so that a snapshot keeps ids of deleted streams, topics and groups from
  // being reused: [u8 level][u32 stream][u32 topic][u32 next]; level 0 the catalog's next
  // stream id, 1 the stream's next topic id, 2 the topic's next group id. Raises, never lowers.
  next_ids = 17,
};

enum class IdLevel : uint8_t { stream = 0, topic = 1, group = 2 };

// Each appends one whole framed record to `out` (storage/record_file.h frames it).
void journal_stream_created(std::vector<std::byte>& out, uint32_t id, UnixMicros created_at,
                            std::string_view name);
void journal_stream_deleted(std::vector<std::byte>& out, uint32_t id);
void journal_stream_updated(std::vector<std::byte>& out, uint32_t id, std::string_view name);
void journal_topic_created(std::vector<std::byte>& out, uint32_t stream, uint32_t id,
                           UnixMicros created_at, std::string_view name,
                           const TopicSettings& settings);
void journal_topic_deleted(std::vector<std::byte>& out, uint32_t stream, uint32_t id);
void journal_topic_updated(std::vector<std::byte>& out, uint32_t stream, uint32_t id,
                           std::string_view name, const TopicSettings& settings);
void journal_topic_purged(std::vector<std::byte>& out, uint32_t stream, uint32_t id);
void journal_partitions_created(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                                uint32_t count, UnixMicros created_at);
void journal_partitions_deleted(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                                uint32_t count);

void journal_group_created(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                           uint32_t id, std::string_view name);
void journal_group_deleted(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                           uint32_t id);

void journal_member(std::vector<std::byte>& out, RecordKind kind, uint32_t stream, uint32_t topic,
                    uint32_t group, uint32_t member);
// Appends one framed extension record holding `bytes`.
void journal_extension(std::vector<std::byte>& out, std::span<const std::byte> bytes);

void journal_next_ids(std::vector<std::byte>& out, IdLevel level, uint32_t stream, uint32_t topic,
                      uint32_t next);

// Appends one framed snapshot record of `catalog` at its sequence (>= 1): every stream, topic,
// partition (with its creation time), group and id counter, the members when
// Catalog::members_journaled, then `extensions` (an embedder's state, JournalExtensions::
// snapshot) as extension records. Replayed on an empty catalog it makes an equal one.
void journal_snapshot(std::vector<std::byte>& out, const Catalog& catalog,
                      std::span<const std::vector<std::byte>> extensions);

// Appends one framed entry record holding `records` (framed, none of them an entry).
void journal_entry(std::vector<std::byte>& out, uint64_t sequence,
                   std::span<const std::byte> records);

// Applies one record's payload to `edit`. Error::state_file_corrupted if it does not decode or
// does not fit the catalog (an unknown stream, a duplicate id).
Status replay(std::span<const std::byte> payload, CatalogEdit& edit);
// Applies every framed record of `records` (as storage::RecordFile frames them; a journal
// entry is one). state_file_corrupted as replay(), or if the framing is damaged.
Status replay_records(std::span<const std::byte> records, CatalogEdit& edit);

}  // namespace hark::core::internal
