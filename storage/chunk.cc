#include "hark/storage/chunk.h"

#include <new>

namespace hark::storage {

Chunk* Chunk::create(size_t capacity) {
  HARK_ASSERT(capacity > 0);
  // One aligned block: the bytes, then the header (aligned_capacity() is a multiple of
  // alignof(Chunk)). Raw storage from operator new because the size is only known at run time;
  // the matching operator delete is in release().
  const size_t bytes = aligned(capacity);
  auto* block = static_cast<std::byte*>(
      ::operator new(bytes + sizeof(Chunk), std::align_val_t(chunk_alignment)));
  return new (block + bytes) Chunk(block, capacity);
}

void Chunk::release() {
  const uint32_t before = refs_.fetch_sub(1, std::memory_order_acq_rel);
  HARK_ASSERT(before > 0);
  if (before == 1) {
    std::byte* block = data_;
    this->~Chunk();
    ::operator delete(static_cast<void*>(block), std::align_val_t(chunk_alignment));
  }
}

}  // namespace hark::storage
