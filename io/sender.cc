#include "hark/io/sender.h"

#include <errno.h>

#include "hark/core/base/assert.h"

namespace hark::io {

void Sender::send(int fd, std::span<const std::span<const std::byte>> parts, SendDone& done) {
  HARK_ASSERT(!busy());
  HARK_ASSERT(!parts.empty() && parts.size() <= parts_max);
  done_ = &done;
  fd_ = fd;
  first_ = 0;
  count_ = parts.size();
  total_ = 0;
  sent_ = 0;
  submissions_ = 0;
  for (size_t i = 0; i < parts.size(); i++) {
    // sendmsg takes non-const iovecs but never writes through them.
    vectors_[i].iov_base = const_cast<std::byte*>(parts[i].data());
    vectors_[i].iov_len = parts[i].size();
    total_ += parts[i].size();
  }
  submit();
}

void Sender::submit() {
  message_ = msghdr{};
  message_.msg_iov = vectors_ + first_;
  message_.msg_iovlen = count_ - first_;
  submissions_++;
  // The first sendmsg of a message tries without waiting and without a timer: a socket with
  // room (an answer or an acknowledgement, usually) takes it inline, and no linked timeout is
  // armed and cancelled for it (two SQEs, an hrtimer and a CQE less per message). A send that
  // has to wait for the peer (-EAGAIN, or the rest after a short send) waits with the stall
  // timeout.
  const bool first = submissions_ == 1;
  Submission submission = ring_.sendmsg(fd_, &message_, *this, first ? MSG_DONTWAIT : 0);
  if (!first && stall_timeout_ > Duration(0)) submission.with_timeout(stall_timeout_);
}

void Sender::complete(int32_t result, uint32_t /*flags*/) {
  HARK_ASSERT(busy());
  SendDone& done = *done_;
  if (result == -EAGAIN && submissions_ == 1) {
    submit();  // The socket was full: wait for room, now with the stall timeout.
    return;
  }
  if (result <= 0) {
    // 0 bytes for a non-empty message on a stream socket only happens when it is shut down.
    done_ = nullptr;
    const bool peer_gone = result == 0 || result == -EPIPE || result == -ECONNRESET;
    if (result == -ECANCELED) {
      done.send_done(Error::task_timeout);
    } else {
      done.send_done(peer_gone ? Error::disconnected : Error::io_error);
    }
    return;
  }
  sent_ += static_cast<uint64_t>(result);
  HARK_ASSERT(sent_ <= total_);
  if (sent_ == total_) {
    done_ = nullptr;
    done.send_done(total_);
    return;
  }
  // A short send: skip what went out and resubmit the rest.
  auto remaining = static_cast<size_t>(result);
  while (remaining >= vectors_[first_].iov_len) {
    remaining -= vectors_[first_].iov_len;
    first_++;
  }
  vectors_[first_].iov_base = static_cast<std::byte*>(vectors_[first_].iov_base) + remaining;
  vectors_[first_].iov_len -= remaining;
  submit();
}

}  // namespace hark::io
