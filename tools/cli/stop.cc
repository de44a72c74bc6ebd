#include "hark/tools/cli/stop.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>

#include "hark/core/base/assert.h"
#include "hark/core/base/clock.h"

namespace hark::cli {
namespace {

// The write end for the signal handler; -1 when no Stop handles signals.
std::atomic<int> signal_write_fd{-1};

void on_stop_signal(int /*signal*/) {
  const int saved_errno = errno;
  const int fd = signal_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const char byte = 's';
    [[maybe_unused]] const ssize_t written = ::write(fd, &byte, 1);  // Full pipe: already set.
  }
  errno = saved_errno;
}

void install(void (*handler)(int), int flags) {
  struct sigaction action {};
  action.sa_handler = handler;
  action.sa_flags = flags;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

Stop::Stop() {
  std::array<int, 2> fds;
  HARK_ASSERT(::pipe2(fds.data(), O_CLOEXEC | O_NONBLOCK) == 0);
  read_fd_ = fds[0];
  write_fd_ = fds[1];
}

Stop::~Stop() {
  if (handling_signals_) {
    install(SIG_DFL, 0);
    signal_write_fd.store(-1, std::memory_order_relaxed);
  }
  ::close(read_fd_);
  ::close(write_fd_);
}

void Stop::handle_signals() {
  int expected = -1;
  HARK_ASSERT(signal_write_fd.compare_exchange_strong(expected, write_fd_));
  handling_signals_ = true;
  // No SA_RESTART: not needed (the client retries EINTR and watches fd()), and SA_RESETHAND
  // makes a second signal act as if there were no handler.
  install(on_stop_signal, SA_RESETHAND);
}

void Stop::request() {
  const char byte = 's';
  [[maybe_unused]] const ssize_t written = ::write(write_fd_, &byte, 1);
}

bool Stop::requested() const { return !sleep_for(Duration::zero()); }

bool Stop::sleep_for(Duration duration) const {
  const Clock& clock = SystemClock::instance();
  const Instant deadline = saturating_add(clock.monotonic_now(), duration);
  for (;;) {
    const Duration left = deadline - clock.monotonic_now();
    // Rounded up, so a timeout means the deadline has passed.
    const int64_t ms = std::clamp<int64_t>(
        std::chrono::ceil<std::chrono::milliseconds>(left).count(), 0, INT32_MAX);
    pollfd waiting{.fd = read_fd_, .events = POLLIN, .revents = 0};
    const int result = ::poll(&waiting, 1, static_cast<int>(ms));
    if (result > 0) return false;
    if (result == 0) return true;
  }  // EINTR: a signal, possibly the stop itself, which the next poll() sees.
}

}  // namespace hark::cli
