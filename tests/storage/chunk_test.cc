// Chunk memory (storage/chunk.h): huge-page blocks for partitions that stream, heap memory for
// the rest, and the per-thread cache of released blocks.
#include "hark/storage/chunk.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

constexpr size_t huge_capacity = Chunk::huge_page_bytes - Chunk::chunk_alignment;

bool aligned_to(const void* pointer, size_t alignment) {
  return reinterpret_cast<uintptr_t>(pointer) % alignment == 0;
}

TEST(Chunk, AHugePageChunkFillsItsAlignedBlockAndOtherSizesGetHeapMemory) {
  ChunkRef huge(Chunk::create(1 << 20, ChunkMemory::huge_page));
  EXPECT_EQ(huge->memory(), ChunkMemory::huge_page);
  EXPECT_EQ(huge->capacity(), huge_capacity);
  EXPECT_TRUE(aligned_to(huge->data(), Chunk::huge_page_bytes));
  std::memset(huge->data(), 0x5a, huge->aligned_capacity());  // Every byte is the chunk's.

  // Under half a block, or more than the block holds: rounding up would waste too much, or
  // cannot hold it.
  for (const size_t capacity : {size_t{4096}, size_t{(1 << 20) - 1}, huge_capacity + 1}) {
    ChunkRef heap(Chunk::create(capacity, ChunkMemory::huge_page));
    EXPECT_EQ(heap->memory(), ChunkMemory::heap) << capacity;
    EXPECT_EQ(heap->capacity(), capacity);
    EXPECT_TRUE(aligned_to(heap->data(), Chunk::chunk_alignment));
    std::memset(heap->data(), 0x5a, heap->aligned_capacity());
  }
  ChunkRef heap(Chunk::create(1 << 20));
  EXPECT_EQ(heap->memory(), ChunkMemory::heap);
  EXPECT_EQ(heap->capacity(), size_t{1} << 20);
}

TEST(Chunk, ReleasedHugePageBlocksAreReusedByTheReleasingThreadUpToTheBound) {
  std::vector<ChunkRef> chunks;
  std::vector<const std::byte*> blocks;
  for (size_t i = 0; i < Chunk::cached_blocks_max + 2; i++) {
    chunks.emplace_back(Chunk::create(huge_capacity, ChunkMemory::huge_page));
    blocks.push_back(chunks.back()->data());
  }
  const size_t before = Chunk::cached_blocks_for_test();
  EXPECT_EQ(before, 0u);  // Every cached block was taken by the chunks above.

  // Released on another thread: that thread's cache takes the block, not this one's.
  ChunkRef elsewhere = std::move(chunks.back());
  chunks.pop_back();
  std::thread([&elsewhere] {
    elsewhere.reset();
    EXPECT_EQ(Chunk::cached_blocks_for_test(), 1u);
  }).join();
  EXPECT_EQ(Chunk::cached_blocks_for_test(), 0u);

  chunks.clear();
  EXPECT_EQ(Chunk::cached_blocks_for_test(), Chunk::cached_blocks_max);  // The rest unmapped.

  ChunkRef again(Chunk::create(huge_capacity, ChunkMemory::huge_page));
  EXPECT_EQ(Chunk::cached_blocks_for_test(), Chunk::cached_blocks_max - 1);
  EXPECT_NE(std::find(blocks.begin(), blocks.end(), again->data()), blocks.end());
  // A heap chunk neither takes nor gives a cached block.
  ChunkRef(Chunk::create(1 << 20)).reset();
  EXPECT_EQ(Chunk::cached_blocks_for_test(), Chunk::cached_blocks_max - 1);
}

// Appends 1 KiB messages until the log holds a second chunk, and returns that chunk's capacity
// (as the log's memory account sees it).
uint64_t second_chunk_capacity(LogHarness& harness, Duration before_second) {
  PartitionLog& log = harness.reopen();
  const std::vector<std::byte> batch = make_batch(1, "m", 1000);
  EXPECT_TRUE(log.append(batch, 1).ok());
  const uint64_t first = log.memory_bytes();
  harness.clock.advance(before_second);
  // 1 MiB of 1 KiB messages fills the first chunk; a log that never adds one fails, not hangs.
  for (int i = 0; i < 2000 && log.memory_bytes() == first; i++) {
    EXPECT_TRUE(log.append(batch, 1).ok());
  }
  return log.memory_bytes() - first;
}

LogOptions memory_only() {
  LogOptions options;
  options.durability = Durability::memory;  // Nothing is written or evicted during the count.
  options.flush_bytes = 1ull << 40;
  options.flush_interval = std::chrono::hours(1);
  return options;
}

TEST(PartitionLogChunks, AChunkFollowingOneMadeWithinTheStreamingWindowGetsAHugePage) {
  LogHarness harness(memory_only());
  EXPECT_EQ(second_chunk_capacity(harness, internal::streaming_fill_max), huge_capacity);
}

TEST(PartitionLogChunks, ASlowPartitionsNextChunkIsHeapMemoryOfTheChunkSize) {
  LogHarness harness(memory_only());
  const uint64_t capacity =
      second_chunk_capacity(harness, internal::streaming_fill_max + std::chrono::milliseconds(1));
  // The chunk size plus the lead that lines it up with the file's blocks.
  EXPECT_GE(capacity, harness.options.chunk_bytes);
  EXPECT_LT(capacity, harness.options.chunk_bytes + Chunk::chunk_alignment);
}

}  // namespace
}  // namespace hark::storage::test
