#pragma once

#include <cstddef>
#include <span>

#include "hark/protocol/framing.h"
#include "hark/protocol/writer.h"

namespace hark::server {

// The bytes one connection has received and the request frames they hold.
//
// Frames are assembled in one buffer: a frame may span many receives, and one receive may
// carry many frames. next() hands out the first complete frame and *pins* it: its payload is
// a view into the buffer, which the request's operation may read until it is done (an
// Append's messages point straight into it). While a frame is pinned, newly received bytes go
// to a side buffer instead, so the pinned bytes never move; release() drops the frame and
// moves the side bytes in.
//
// Memory follows the bytes that arrived, never what a header announces: the buffer grows
// geometrically as a frame's bytes come in (the scanner rejects frames over the limits from
// their header), so a header alone costs nothing. What the client sent past the frame in
// progress (ahead_bytes()) is bounded by the connection, which stops receiving once
// ahead_full() (docs/operations.md §Connections): append() itself never refuses bytes, since
// the kernel may deliver a few more receives before the stop lands.
//
// Owned by its connection, on its shard. Data plane: no allocation once the buffers have
// grown to the largest frame seen; capacity over `keep_bytes_max` is given back when empty.
class RequestBuffer {
 public:
  static constexpr size_t keep_bytes_max = 1 << 20;

  // `ahead_max`: ahead_full() once this many bytes are buffered past the frame in progress.
  RequestBuffer(const protocol::FrameLimits& limits, size_t ahead_max)
      : limits_(limits), ahead_max_(ahead_max) {}
  RequestBuffer(const RequestBuffer&) = delete;
  RequestBuffer& operator=(const RequestBuffer&) = delete;
  // A connection that migrates to another shard takes its unread bytes along.
  RequestBuffer(RequestBuffer&&) = default;

  // Adds received bytes.
  void append(std::span<const std::byte> bytes);

  // Scans the first unhandled frame. ready: the frame is pinned until release(), and the
  // scan's payload is valid until then. need_more: nothing is pinned. rejected: nothing is
  // pinned; the connection answers the error and closes. Requires: !pinned().
  protocol::FrameScan next();

  // Drops the pinned frame. Requires: pinned().
  void release();

  bool pinned() const { return pinned_bytes_ != 0; }
  // Received bytes not yet released (pinned frame included).
  size_t buffered_bytes() const { return main_.size() - head_ + side_.size(); }
  // Bytes past the pinned frame (none while no frame is pinned: the bytes buffered then are
  // at most one receive past the first, incomplete, frame).
  size_t ahead_bytes() const { return pinned() ? buffered_bytes() - pinned_bytes_ : 0; }
  bool ahead_full() const { return ahead_bytes() >= ahead_max_; }
  // Down to half the bound: a paused receive resumes (not at every request taken, so a
  // client that pipelines costs one pause and resume per ahead_max / 2 bytes).
  bool ahead_low() const { return ahead_bytes() <= ahead_max_ / 2; }
  // Bytes the buffers hold room for (what this connection's requests cost in memory).
  size_t capacity_bytes() const { return main_.capacity() + side_.capacity(); }

 private:
  void compact();

  protocol::FrameLimits limits_;
  size_t ahead_max_;
  protocol::Bytes main_;
  size_t head_ = 0;          // main_[0, head_) is released.
  size_t pinned_bytes_ = 0;  // The pinned frame is main_[head_, head_ + pinned_bytes_).
  protocol::Bytes side_;
};

}  // namespace hark::server
