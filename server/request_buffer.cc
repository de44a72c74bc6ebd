#include "hark/server/request_buffer.h"

#include "hark/core/base/assert.h"

namespace hark::server {
namespace {

// Gives a large, empty buffer's memory back (after one big frame, say).
void trim(protocol::Bytes& bytes) {
  if (bytes.empty() && bytes.capacity() > RequestBuffer::keep_bytes_max) {
    protocol::Bytes().swap(bytes);
  }
}

}  // namespace

void RequestBuffer::append(std::span<const std::byte> bytes) {
  // insert() grows the capacity geometrically: a large frame is copied O(1) times per byte.
  protocol::Bytes& target = pinned() ? side_ : main_;
  target.insert(target.end(), bytes.begin(), bytes.end());
}

protocol::FrameScan RequestBuffer::next() {
  HARK_ASSERT(!pinned());
  HARK_ASSERT(side_.empty());
  protocol::FrameScan scan =
      protocol::scan_request(std::span<const std::byte>(main_).subspan(head_), limits_);
  if (scan.state == protocol::FrameState::ready) {
    HARK_ASSERT(scan.frame_size > 0);
    pinned_bytes_ = static_cast<size_t>(scan.frame_size);
  } else if (scan.state == protocol::FrameState::need_more) {
    // Move the partial frame to the front. No room is reserved for the size its header
    // announces: a header alone must not cost its declared size (docs/operations.md).
    compact();
  }
  return scan;
}

void RequestBuffer::release() {
  HARK_ASSERT(pinned());
  head_ += pinned_bytes_;
  HARK_ASSERT(head_ <= main_.size());
  pinned_bytes_ = 0;
  if (!side_.empty()) {
    compact();
    main_.insert(main_.end(), side_.begin(), side_.end());
    side_.clear();
    trim(side_);
  } else if (head_ == main_.size()) {
    compact();
  }
}

void RequestBuffer::compact() {
  HARK_ASSERT(!pinned());
  if (head_ == 0) return;
  main_.erase(main_.begin(), main_.begin() + static_cast<std::ptrdiff_t>(head_));
  head_ = 0;
  trim(main_);
}

}  // namespace hark::server
