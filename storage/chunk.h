#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "hark/core/base/assert.h"

namespace hark::storage {

// Where a chunk's bytes come from (Chunk::create).
enum class ChunkMemory : uint8_t {
  // operator new: pages become resident only as bytes are written, so a partition holding one
  // message costs a page, not the chunk.
  heap,
  // A 2 MiB block advised for a transparent huge page, kept warm in a per-thread cache of
  // Chunk::cached_blocks_max blocks. One page fault and no page-by-page zeroing per chunk: for a
  // partition that fills chunks fast (Segment::add_chunk decides), faulting 4 KiB pages in was a
  // fifth of the shard's time (docs/bench.md §Throughput and huge pages). The chunk's capacity
  // becomes the whole block, so only a capacity from half a block to the block gets one; others
  // get heap memory.
  huge_page,
};

// A block of message bytes shared by a partition log and its readers.
//
// The owner shard fills a chunk front to back; bytes it has committed are never written again,
// so a reader on any thread may read them while the owner appends further bytes behind them
// (different memory locations: no data race). A reader learns how many bytes are committed from
// the ReadView it was handed, and that hand-over (same thread, or an Inbox push/pop) is the
// happens-before edge for the bytes.
//
// Concurrent: `refs_` is the only field that changes after create(). acquire() is relaxed (the
// caller already holds a reference); release() is acq_rel, so the thread that drops the last
// reference sees every write made before any other release. The chunk is a self-contained block
// with no pointer into its log, and the allocator is thread-safe (mimalloc, glibc), so the
// final free may run on whichever shard drops the last reference: nothing bounces back (a
// huge-page block goes to that thread's cache).
// Data plane; one allocation per chunk (1-2 MiB), never per message.
//
// The bytes are aligned for O_DIRECT: data() is a multiple of chunk_alignment and the block
// holds data() + aligned_capacity() bytes (capacity rounded up to chunk_alignment), so a
// direct write may cover the last partial block (the log zeroes it first; docs/storage-format.md
// §How a commit reaches the disk). The header follows the bytes.
class Chunk {
 public:
  static constexpr size_t chunk_alignment = 4096;
  static constexpr size_t huge_page_bytes = 2u << 20;
  // Huge-page blocks a thread keeps for reuse once their chunks are released there (8 MiB).
  static constexpr size_t cached_blocks_max = 4;

  // A chunk of at least `capacity` bytes holding one reference (the caller's); capacity() tells
  // how many. Requires: capacity > 0.
  static Chunk* create(size_t capacity, ChunkMemory memory = ChunkMemory::heap);
  // Huge-page blocks in the calling thread's cache.
  static size_t cached_blocks_for_test();

  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  ChunkMemory memory() const { return memory_; }
  static size_t aligned(size_t bytes) {
    return (bytes + chunk_alignment - 1) / chunk_alignment * chunk_alignment;
  }
  size_t aligned_capacity() const { return aligned(capacity_); }

  void acquire() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release();

  uint32_t refs_for_test() const { return refs_.load(std::memory_order_relaxed); }

 private:
  Chunk(std::byte* data, size_t capacity, ChunkMemory memory)
      : data_(data), capacity_(capacity), memory_(memory) {}
  ~Chunk() = default;

  std::atomic<uint32_t> refs_{1};
  std::byte* data_;
  size_t capacity_;
  ChunkMemory memory_;
};

// One counted reference to a Chunk. Move-only; copy() takes another reference explicitly, so a
// reference count change is always visible in the code.
class ChunkRef {
 public:
  ChunkRef() = default;
  // Adopts the reference `chunk` already holds (as Chunk::create returns it).
  explicit ChunkRef(Chunk* chunk) : chunk_(chunk) {}
  ChunkRef(ChunkRef&& other) noexcept : chunk_(std::exchange(other.chunk_, nullptr)) {}
  ChunkRef& operator=(ChunkRef&& other) noexcept {
    if (this != &other) {
      reset();
      chunk_ = std::exchange(other.chunk_, nullptr);
    }
    return *this;
  }
  ChunkRef(const ChunkRef&) = delete;
  ChunkRef& operator=(const ChunkRef&) = delete;
  ~ChunkRef() { reset(); }

  ChunkRef copy() const {
    HARK_ASSERT(chunk_ != nullptr);
    chunk_->acquire();
    return ChunkRef(chunk_);
  }
  void reset() {
    if (chunk_ != nullptr) std::exchange(chunk_, nullptr)->release();
  }

  Chunk* get() const { return chunk_; }
  Chunk* operator->() const { return chunk_; }
  explicit operator bool() const { return chunk_ != nullptr; }

 private:
  Chunk* chunk_ = nullptr;
};

}  // namespace hark::storage
