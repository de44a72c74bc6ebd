#include "hark/io/sleep_gate.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <sys/eventfd.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"

namespace hark::io {

Result<std::unique_ptr<SleepGate>> SleepGate::create() {
  // Blocking on purpose: io_uring answers a read of a non-blocking fd with -EAGAIN at once
  // instead of waiting for it to become readable, which would turn every sleep into a spin.
  const int fd = ::eventfd(0, EFD_CLOEXEC);
  if (fd < 0) {
    HARK_LOG_ERROR("sleep gate: eventfd failed: %s", strerror(errno));
    return Error::io_error;
  }
  return std::unique_ptr<SleepGate>(new SleepGate(fd));
}

SleepGate::~SleepGate() { ::close(eventfd_); }

bool SleepGate::notify() {
  State expected = State::sleeping;
  if (state_.load(std::memory_order_seq_cst) != State::sleeping ||
      !state_.compare_exchange_strong(expected, State::notified, std::memory_order_seq_cst)) {
    return false;
  }
  const uint64_t one = 1;
  ssize_t written = 0;
  do {
    written = ::write(eventfd_, &one, sizeof one);
  } while (written < 0 && errno == EINTR);
  // EAGAIN means the counter is saturated, i.e. already signalled: the owner wakes anyway.
  HARK_ASSERT(written == sizeof one || errno == EAGAIN);
  eventfd_writes_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace hark::io
