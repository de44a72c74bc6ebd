#include "hark/io/buffer_ring.h"

#include <string.h>

#include <sys/mman.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"

namespace hark::io {
namespace {

void* map_anonymous(size_t bytes) {
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return memory == MAP_FAILED ? nullptr : memory;
}

}  // namespace

Result<std::unique_ptr<BufferRing>> BufferRing::create(Ring& ring, uint16_t group, uint32_t count,
                                                       uint32_t buffer_bytes) {
  HARK_ASSERT(count > 0 && count <= 32768);
  HARK_ASSERT((count & (count - 1)) == 0);
  HARK_ASSERT(buffer_bytes > 0);
  auto pool = std::unique_ptr<BufferRing>(new BufferRing(ring, group, count, buffer_bytes));
  pool->entries_bytes_ = count * sizeof(io_uring_buf);
  pool->buffers_bytes_ = size_t{count} * buffer_bytes;
  pool->entries_ = static_cast<io_uring_buf_ring*>(map_anonymous(pool->entries_bytes_));
  pool->buffers_ = static_cast<std::byte*>(map_anonymous(pool->buffers_bytes_));
  if (pool->entries_ == nullptr || pool->buffers_ == nullptr) {
    HARK_LOG_ERROR("buffer ring: cannot map %zu bytes of receive buffers: %s", pool->buffers_bytes_,
                   strerror(errno));
    return Error::io_error;
  }
  io_uring_buf_reg registration{};
  registration.ring_addr = reinterpret_cast<uint64_t>(pool->entries_);
  registration.ring_entries = count;
  registration.bgid = group;
  if (const int result = io_uring_register_buf_ring(ring.raw(), &registration, 0); result < 0) {
    HARK_LOG_ERROR("buffer ring: io_uring_register_buf_ring failed: %s (needs Linux >= 5.19)",
                   strerror(-result));
    return Error::io_error;
  }
  pool->registered_ = true;
  io_uring_buf_ring_init(pool->entries_);
  const int mask = io_uring_buf_ring_mask(count);
  for (uint32_t id = 0; id < count; id++) {
    io_uring_buf_ring_add(pool->entries_, pool->buffer(static_cast<uint16_t>(id)), buffer_bytes,
                          static_cast<uint16_t>(id), mask, static_cast<int>(id));
  }
  io_uring_buf_ring_advance(pool->entries_, static_cast<int>(count));
  return pool;
}

BufferRing::~BufferRing() {
  if (registered_) io_uring_unregister_buf_ring(ring_.raw(), group_);
  if (entries_ != nullptr) ::munmap(entries_, entries_bytes_);
  if (buffers_ != nullptr) ::munmap(buffers_, buffers_bytes_);
}

uint16_t BufferRing::buffer_id(uint32_t flags) {
  return static_cast<uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT);
}

std::span<const std::byte> BufferRing::take(uint32_t flags, uint32_t length) {
  HARK_ASSERT((flags & IORING_CQE_F_BUFFER) != 0);
  HARK_ASSERT(length <= buffer_bytes_);
  const uint16_t id = buffer_id(flags);
  HARK_ASSERT(id < count_);
  held_++;
  HARK_ASSERT(held_ <= count_);
  return {buffer(id), length};
}

void BufferRing::recycle(uint16_t id) {
  HARK_ASSERT(id < count_);
  HARK_ASSERT(held_ > 0);
  held_--;
  io_uring_buf_ring_add(entries_, buffer(id), buffer_bytes_, id, io_uring_buf_ring_mask(count_), 0);
  io_uring_buf_ring_advance(entries_, 1);
}

}  // namespace hark::io
