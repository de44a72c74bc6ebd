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
  // The first try never waits, so it needs no timer; what it leaves is sent waiting.
  waiting_ = submissions_ > 0;
  submissions_++;
  Submission submission = ring_.sendmsg(fd_, &message_, *this, waiting_ ? 0 : MSG_DONTWAIT);
  if (waiting_ && stall_timeout_ > Duration(0)) submission.with_timeout(stall_timeout_);
}

void Sender::complete(int32_t result, uint32_t /*flags*/) {
  HARK_ASSERT(busy());
  if (result == -EAGAIN && !waiting_) {
    submit();  // The socket was full: wait for room, under the stall timeout.
    return;
  }
  SendDone& done = *done_;
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
  resubmit_rest(static_cast<size_t>(result));
}

void Sender::resubmit_rest(size_t written) {
  // A short send: skip what went out and resubmit the rest.
  while (written >= vectors_[first_].iov_len) {
    written -= vectors_[first_].iov_len;
    first_++;
  }
  vectors_[first_].iov_base = static_cast<std::byte*>(vectors_[first_].iov_base) + written;
  vectors_[first_].iov_len -= written;
  submit();
}

}  // namespace hark::io
