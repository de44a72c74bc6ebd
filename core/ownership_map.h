#pragma once

#include <cstdint>

#include "hark/core/base/units.h"
#include "hark/core/partition_key.h"

namespace hark::core {

// Where a partition lives. Single-node hark only has local owners; the other kinds are the
// seam for running several nodes later (docs/architecture.md §7): a request for a remote partition
// will be forwarded, one for an unavailable partition answered with an error.
struct Owner {
  enum class Kind : uint8_t { local_shard, remote_node, unavailable };
  Kind kind = Kind::local_shard;
  ShardId shard{};
  uint64_t version = 0;  // Bumped whenever any partition changes owner.
};

// Maps partitions to their owner shard. The single place where a partition key is turned
// into a shard: xxh64 (seed 0) over the key's three ids as 12 little-endian bytes, modulo the
// number of shards. Stable across restarts and across machines, so a partition's directory is
// always opened by the same shard for a given shard count (docs/architecture.md §ownership).
// Immutable after construction; safe to read from any thread.
class OwnershipMap {
 public:
  explicit OwnershipMap(uint32_t shards_count);

  Owner lookup(const PartitionKey& key) const;
  uint32_t shards_count() const { return shards_count_; }
  uint64_t version() const { return version_; }

 private:
  uint32_t shards_count_;
  uint64_t version_ = 1;
};

}  // namespace hark::core
