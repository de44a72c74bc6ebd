#include "hark/storage/chunk.h"

#include <new>

namespace hark::storage {

Chunk* Chunk::create(size_t capacity) {
  HARK_ASSERT(capacity > 0);
  // One block: the header, then the bytes. Raw storage from operator new because the size is
  // only known at run time; the matching operator delete is in release().
  void* block = ::operator new(sizeof(Chunk) + capacity);
  return new (block) Chunk(capacity);
}

void Chunk::release() {
  const uint32_t before = refs_.fetch_sub(1, std::memory_order_acq_rel);
  HARK_ASSERT(before > 0);
  if (before == 1) {
    this->~Chunk();
    ::operator delete(static_cast<void*>(this));
  }
}

}  // namespace hark::storage
