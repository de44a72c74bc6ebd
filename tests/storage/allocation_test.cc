// Covers the data-plane allocation rule for the partition log: a read from memory allocates
// nothing, and appends allocate per chunk and per index growth, never per message. Counts every
// global operator new in this binary (release build only: sanitizers replace the allocator).
#include <atomic>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace {
std::atomic<uint64_t> allocations{0};
}  // namespace

void* operator new(size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* block = std::malloc(size == 0 ? 1 : size)) return block;
  std::abort();
}
void operator delete(void* block) noexcept { std::free(block); }
void operator delete(void* block, size_t /*size*/) noexcept { std::free(block); }

namespace hark::storage::test {
namespace {

TEST(PartitionLogAllocations, MemoryReadsAllocateNothingAndAppendsNotPerMessage) {
  LogOptions options;
  options.flush_bytes = 1ull << 40;  // No background writes during the count.
  options.flush_interval = std::chrono::hours(1);
  // Commits at append, with no write: this counts the log's own allocations, not the writer's.
  options.durability = Durability::memory;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  const std::vector<std::byte> batch = make_batch(1, "a", 36);  // One 100-byte message.
  ASSERT_TRUE(log.append(batch, 1).ok());                       // Warm-up: first chunk.

  const uint64_t before_appends = allocations.load();
  constexpr int appends_count = 10'000;
  for (int i = 0; i < appends_count; i++) ASSERT_TRUE(log.append(batch, 1).ok());
  const uint64_t append_allocations = allocations.load() - before_appends;
  // ~1 MB of data: one new chunk, plus the index vector doubling (about log2(10 000) times).
  EXPECT_LE(append_allocations, 24u);
  EXPECT_GT(append_allocations, 0u);  // The counter sees the log's allocations at all.

  struct Counter final : ReadCompletion {
    void read_done(Result<ReadView> view) override { count += view.ok() ? view->count() : 0; }
    uint64_t count = 0;
  } counter;
  const uint64_t before_reads = allocations.load();
  for (uint64_t offset = 0; offset < 10'000; offset += 10) {
    log.read(Offset(offset), 10, 1 << 20, counter);
  }
  EXPECT_EQ(allocations.load() - before_reads, 0u);
  EXPECT_EQ(counter.count, 10'000u);
}

}  // namespace
}  // namespace hark::storage::test
