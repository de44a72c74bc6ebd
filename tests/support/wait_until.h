#pragma once

#include <chrono>
#include <thread>

namespace hark::test {

// How long a test waits for a signal before it calls the signal lost: far above any
// scheduling noise on a shared, sanitized machine, and only ever spent when a test fails.
inline constexpr std::chrono::milliseconds signal_timeout{10'000};

// Waits until `ready()` holds, asking again every `every`, for at most `timeout`. Returns
// ready()'s last answer, so a caller asserts on it. The one place a test sleeps while it
// waits for a signal: every "until X" loop in tests/ comes here, and what it polls is the
// signal (a counter, a state, a socket), never the passing of time.
template <typename Ready>
bool wait_until(Ready ready, std::chrono::milliseconds timeout = signal_timeout,
                std::chrono::microseconds every = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return ready();
    std::this_thread::sleep_for(every);
  }
  return true;
}

}  // namespace hark::test
