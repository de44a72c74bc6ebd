#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "hark/core/base/result.h"
#include "hark/io/ring.h"

namespace hark::io {

// A provided buffer ring: a pool of equal receive buffers the kernel picks from for multishot
// receives (IOSQE_BUFFER_SELECT with this group id). Set up by hand, because liburing 2.3 has
// no io_uring_setup_buf_ring: one page-aligned mmap holds the ring entries, a second the
// buffers, and io_uring_register_buf_ring hands the ring to the kernel.
//
// Owned by one shard, like its Ring. A CQE names the buffer it filled; whoever consumes the
// bytes calls recycle() when done, which gives the buffer back to the kernel. When every buffer
// is held, multishot receives end with -ENOBUFS (backpressure): recycle, then re-arm.
class BufferRing {
 public:
  // `count` must be a power of two (<= 32768); `buffer_bytes` a multiple of 4096 is best.
  static Result<std::unique_ptr<BufferRing>> create(Ring& ring, uint16_t group, uint32_t count,
                                                    uint32_t buffer_bytes);
  ~BufferRing();
  BufferRing(const BufferRing&) = delete;
  BufferRing& operator=(const BufferRing&) = delete;

  uint16_t group() const { return group_; }
  uint32_t buffer_bytes() const { return buffer_bytes_; }
  uint32_t count() const { return count_; }
  // Buffers currently held by consumers (not available to the kernel).
  uint32_t held() const { return held_; }

  // The buffer a CQE filled: `flags` is the CQE's flags (IORING_CQE_F_BUFFER must be set),
  // `length` its result. Marks the buffer held until recycle().
  std::span<const std::byte> take(uint32_t flags, uint32_t length);
  static uint16_t buffer_id(uint32_t flags);

  // Gives buffer `id` back to the kernel.
  void recycle(uint16_t id);

 private:
  BufferRing(Ring& ring, uint16_t group, uint32_t count, uint32_t buffer_bytes)
      : ring_(ring), group_(group), count_(count), buffer_bytes_(buffer_bytes) {}

  std::byte* buffer(uint16_t id) const { return buffers_ + size_t{id} * buffer_bytes_; }

  Ring& ring_;
  uint16_t group_;
  uint32_t count_;
  uint32_t buffer_bytes_;
  uint32_t held_ = 0;
  io_uring_buf_ring* entries_ = nullptr;
  size_t entries_bytes_ = 0;
  std::byte* buffers_ = nullptr;
  size_t buffers_bytes_ = 0;
  bool registered_ = false;
};

}  // namespace hark::io
