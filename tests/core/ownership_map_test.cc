// Covers the partition -> shard map: stable (the same key always maps to the same shard, and
// the values are pinned so a change of hash is caught), within range, and spread evenly.
#include "hark/core/ownership_map.h"

#include <vector>

#include <gtest/gtest.h>

namespace hark::core {
namespace {

PartitionKey key(uint32_t stream, uint32_t topic, uint32_t partition) {
  return PartitionKey{StreamId(stream), TopicId(topic), PartitionId(partition)};
}

TEST(OwnershipMap, IsStableAcrossInstances) {
  const OwnershipMap first(4);
  const OwnershipMap second(4);
  for (uint32_t p = 0; p < 100; p++) {
    EXPECT_EQ(first.lookup(key(1, 2, p)).shard, second.lookup(key(1, 2, p)).shard);
  }
}

TEST(OwnershipMap, PinnedValuesCatchAChangeOfHash) {
  // A different hash would move every partition's directory to another shard on upgrade.
  const OwnershipMap map(8);
  std::vector<uint32_t> shards;
  for (uint32_t p = 0; p < 8; p++) shards.push_back(map.lookup(key(0, 0, p)).shard.value());
  EXPECT_EQ(shards, (std::vector<uint32_t>{2, 7, 0, 5, 2, 7, 4, 1}));
}

TEST(OwnershipMap, SpreadsPartitionsOverShards) {
  const OwnershipMap map(4);
  std::vector<int> counts(4, 0);
  for (uint32_t p = 0; p < 4000; p++) {
    const Owner owner = map.lookup(key(p % 7, p % 3, p));
    ASSERT_LT(owner.shard.value(), 4u);
    EXPECT_EQ(owner.kind, Owner::Kind::local_shard);
    counts[owner.shard.value()]++;
  }
  for (int count : counts) EXPECT_NEAR(count, 1000, 150);
}

TEST(OwnershipMap, OneShardOwnsEverything) {
  const OwnershipMap map(1);
  EXPECT_EQ(map.lookup(key(5, 6, 7)).shard, ShardId(0));
}

}  // namespace
}  // namespace hark::core
