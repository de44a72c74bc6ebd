#include "hark/storage/chunk.h"

#include <array>
#include <cstdint>
#include <new>

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

namespace hark::storage {

namespace {

constexpr size_t huge_bytes = Chunk::huge_page_bytes;

// Released huge-page blocks of this thread, reused by its next huge-page chunks. Trivially
// destructible, so a chunk released while the thread exits (after CacheCloser ran) still finds
// it, closed: its block is unmapped instead.
struct BlockCache {
  std::array<std::byte*, Chunk::cached_blocks_max> blocks{};
  size_t count = 0;
  bool closed = false;
};
constinit thread_local BlockCache cache;

void unmap(std::byte* block) { ::munmap(block, huge_bytes); }

// Unmaps the cached blocks when the thread exits.
struct CacheCloser {
  CacheCloser() = default;
  CacheCloser(const CacheCloser&) = delete;
  CacheCloser& operator=(const CacheCloser&) = delete;
  ~CacheCloser() {
    for (size_t i = 0; i < cache.count; i++) {
      ASAN_UNPOISON_MEMORY_REGION(cache.blocks[i], huge_bytes);
      unmap(cache.blocks[i]);
    }
    cache.count = 0;
    cache.closed = true;
  }
};

// A huge_bytes block aligned to huge_bytes (a transparent huge page needs both), or nullptr when
// the kernel has no memory to map. Maps twice the size and trims both ends to the alignment.
std::byte* map_block() {
  void* raw =
      ::mmap(nullptr, 2 * huge_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + huge_bytes - 1) & ~(uintptr_t{huge_bytes} - 1);
  const uintptr_t end = start + 2 * huge_bytes;
  if (aligned > start) ::munmap(raw, aligned - start);
  if (end > aligned + huge_bytes) {
    ::munmap(reinterpret_cast<void*>(aligned + huge_bytes), end - aligned - huge_bytes);
  }
  auto* block = reinterpret_cast<std::byte*>(aligned);
  // Fails only where transparent huge pages are compiled out: the block then faults in 4 KiB
  // pages like heap memory, which is still correct.
  (void)::madvise(block, huge_bytes, MADV_HUGEPAGE);
  return block;
}

std::byte* take_block() {
  if (cache.count == 0) return map_block();
  std::byte* block = cache.blocks[--cache.count];
  ASAN_UNPOISON_MEMORY_REGION(block, huge_bytes);
  return block;
}

void give_back(std::byte* block) {
  if (cache.closed || cache.count == cache.blocks.size()) {
    unmap(block);
    return;
  }
  static thread_local CacheCloser closer;  // Constructed on the thread's first cached block.
  // Under AddressSanitizer a read through a stale reference to a cached block is reported, as
  // it would be for freed heap memory (no-op in other builds).
  ASAN_POISON_MEMORY_REGION(block, huge_bytes);
  cache.blocks[cache.count++] = block;
}

}  // namespace

Chunk* Chunk::create(size_t capacity, ChunkMemory memory) {
  HARK_ASSERT(capacity > 0);
  // One aligned block: the bytes, then the header (aligned_capacity() is a multiple of
  // alignof(Chunk)). The huge-page block's last chunk_alignment bytes hold the header.
  const size_t huge_capacity = huge_bytes - chunk_alignment;
  if (memory == ChunkMemory::huge_page && capacity >= huge_bytes / 2 && capacity <= huge_capacity) {
    if (std::byte* block = take_block()) {
      return new (block + huge_capacity) Chunk(block, huge_capacity, ChunkMemory::huge_page);
    }
  }
  // Raw storage from operator new because the size is only known at run time; the matching
  // operator delete is in release().
  const size_t bytes = aligned(capacity);
  auto* block = static_cast<std::byte*>(
      ::operator new(bytes + sizeof(Chunk), std::align_val_t(chunk_alignment)));
  return new (block + bytes) Chunk(block, capacity, ChunkMemory::heap);
}

size_t Chunk::cached_blocks_for_test() { return cache.count; }

void Chunk::release() {
  const uint32_t before = refs_.fetch_sub(1, std::memory_order_acq_rel);
  HARK_ASSERT(before > 0);
  if (before == 1) {
    std::byte* block = data_;
    const ChunkMemory memory = memory_;
    this->~Chunk();
    if (memory == ChunkMemory::huge_page) {
      give_back(block);
    } else {
      ::operator delete(static_cast<void*>(block), std::align_val_t(chunk_alignment));
    }
  }
}

}  // namespace hark::storage
