#pragma once

#include <memory>
#include <optional>
#include <span>

#include <absl/container/flat_hash_map.h>

#include "core/base/result.h"
#include "core/broker/internal/catalog.h"
#include "core/broker/operations.h"
#include "core/wait/wait_shard.h"
#include "storage/partition_log.h"

namespace hark::core::internal {

// A partition on its owner shard: the log, the stored consumer offsets, and the commit point
// it publishes to (its PartitionCell). Used on the owner shard only.
class Partition {
 public:
  Partition(std::shared_ptr<PartitionCell> cell, std::unique_ptr<storage::PartitionLog> log);
  ~Partition();
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  PartitionCell& cell() { return *cell_; }
  storage::PartitionLog& log() { return *log_; }

  // Appends and commits: parked polls it satisfies wake at the end of this loop iteration.
  Result<storage::AppendResult> append(WaitShard& waits, std::span<const std::byte> messages,
                                       uint32_t count);
  // Drops every message and stored offset; a new epoch at offset 0 (parked polls: empty).
  Status purge(WaitShard& waits);
  Status apply_retention();

  // The first offset a poll reads (SEMANTICS.md §When a poll parks: it is also the `want` of
  // its registration when the poll parks).
  Result<Offset> start_for(PollFrom from, uint64_t value, uint32_t count,
                           const ConsumerRef& consumer) const;

  std::optional<uint64_t> stored_offset(const ConsumerRef& consumer) const;
  // invalid_offset (4100) past the last offset or on an empty partition, as Iggy 0.8.0.
  Status store_offset(const ConsumerRef& consumer, uint64_t offset);

 private:
  void publish_figures();

  std::shared_ptr<PartitionCell> cell_;
  std::unique_ptr<storage::PartitionLog> log_;
  // Kept in memory for now: persisted with the metadata in the next issue.
  absl::flat_hash_map<ConsumerRef, uint64_t> offsets_;
};

}  // namespace hark::core::internal
