#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <sys/socket.h>
#include <sys/uio.h>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/io/completion.h"
#include "hark/io/ring.h"

namespace hark::io {

// Told once when a Sender has written a whole message or failed.
class SendDone {
 public:
  // `result`: the bytes written (all of them), or Error::disconnected when the peer went away
  // (EPIPE, ECONNRESET), Error::task_timeout when a submission made no progress for the
  // stall timeout or was cancelled (Ring::cancel), Error::io_error for any other failure.
  virtual void send_done(Result<uint64_t> result) = 0;

 protected:
  ~SendDone() = default;
};

// Writes one message made of up to `parts_max` byte ranges (a response header and the stored
// message bytes, say) to a stream socket with sendmsg, resubmitting the rest after a short
// send until every byte is written, then reports once. A connection embeds one per response
// in flight. The first sendmsg of a message does not wait (MSG_DONTWAIT): it takes what the
// socket has room for at once. Every later one (after -EAGAIN or a short send) waits, and with
// a stall timeout carries a linked timeout: a peer that takes nothing for that long (a client
// that never reads) fails the message instead of holding it forever; a slow reader that keeps
// taking bytes is not cut off. Owned by one shard; the parts
// must stay valid until send_done() runs.
class Sender final : public Completion {
 public:
  static constexpr size_t parts_max = 8;

  // `stall_timeout` 0: none.
  explicit Sender(Ring& ring, Duration stall_timeout = Duration(0))
      : ring_(ring), stall_timeout_(stall_timeout) {}
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // Requires: !busy(), 1 <= parts.size() <= parts_max.
  void send(int fd, std::span<const std::span<const std::byte>> parts, SendDone& done);
  bool busy() const { return done_ != nullptr; }
  // sendmsg submissions for the current or last message (more than one: it was sent short).
  uint32_t submissions() const { return submissions_; }

  void complete(int32_t result, uint32_t flags) override;

 private:
  void submit();

  Ring& ring_;
  Duration stall_timeout_;
  SendDone* done_ = nullptr;
  int fd_ = -1;
  iovec vectors_[parts_max] = {};
  msghdr message_{};
  size_t first_ = 0;  // First vector with bytes left.
  size_t count_ = 0;
  uint64_t total_ = 0;
  uint64_t sent_ = 0;
  uint32_t submissions_ = 0;
};

}  // namespace hark::io
