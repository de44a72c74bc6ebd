#include "hark/storage/read_view.h"

#include <utility>

namespace hark::storage {

ReadView::ReadView(ChunkRef chunk, std::span<const std::byte> bytes, uint32_t count, Offset first,
                   Offset last)
    : chunk_(std::move(chunk)), bytes_(bytes), count_(count), first_(first), last_(last) {
  HARK_ASSERT(count_ > 0);
  HARK_ASSERT(first_ <= last_);
  HARK_ASSERT(bytes_.data() >= chunk_->data());
  HARK_ASSERT(bytes_.data() + bytes_.size() <= chunk_->data() + chunk_->capacity());
}

}  // namespace hark::storage
