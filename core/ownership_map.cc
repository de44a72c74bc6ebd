#include "hark/core/ownership_map.h"

#include <xxhash.h>

#include <array>
#include <cstring>

#include "hark/core/base/assert.h"

namespace hark::core {

OwnershipMap::OwnershipMap(uint32_t shards_count) : shards_count_(shards_count) {
  HARK_ASSERT(shards_count > 0);
}

Owner OwnershipMap::lookup(const PartitionKey& key) const {
  std::array<uint32_t, 3> ids = {key.stream.value(), key.topic.value(), key.partition.value()};
  static_assert(sizeof(ids) == 12);
  const uint64_t hash = XXH64(ids.data(), sizeof(ids), 0);
  return Owner{Owner::Kind::local_shard, ShardId(static_cast<uint32_t>(hash % shards_count_)),
               version_};
}

}  // namespace hark::core
