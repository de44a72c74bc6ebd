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
};

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
void journal_partitions_created(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                                uint32_t count, UnixMicros created_at);
void journal_partitions_deleted(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                                uint32_t count);

void journal_group_created(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                           uint32_t id, std::string_view name);
void journal_group_deleted(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                           uint32_t id);

// Applies one record's payload to `edit`. Error::state_file_corrupted if it does not decode or
// does not fit the catalog (an unknown stream, a duplicate id).
Status replay(std::span<const std::byte> payload, CatalogEdit& edit);

}  // namespace hark::core::internal
