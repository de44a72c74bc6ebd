#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "hark/core/base/assert.h"

namespace hark::storage {

// A heap block of message bytes shared by a partition log and its readers.
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
// final free may run on whichever shard drops the last reference: nothing bounces back.
// Data plane; one allocation per chunk (about 1 MiB), never per message.
class Chunk {
 public:
  // A chunk of `capacity` bytes holding one reference (the caller's). Requires: capacity > 0.
  static Chunk* create(size_t capacity);

  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;

  std::byte* data() { return reinterpret_cast<std::byte*>(this + 1); }
  const std::byte* data() const { return reinterpret_cast<const std::byte*>(this + 1); }
  size_t capacity() const { return capacity_; }

  void acquire() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release();

  uint32_t refs_for_test() const { return refs_.load(std::memory_order_relaxed); }

 private:
  explicit Chunk(size_t capacity) : capacity_(capacity) {}
  ~Chunk() = default;

  std::atomic<uint32_t> refs_{1};
  size_t capacity_;
};

static_assert(sizeof(Chunk) % alignof(std::max_align_t) == 0,
              "bytes after the header stay aligned");

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
