#include "hark/core/base/clock.h"

#include <time.h>

#include "hark/core/base/assert.h"

namespace hark {
namespace {

int64_t read_ns(clockid_t clock) {
  timespec now{};
  HARK_ASSERT(::clock_gettime(clock, &now) == 0);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// 2026-01-01T00:00:00Z: a plausible wall clock for tests.
constexpr uint64_t manual_realtime_start_us = 1'767'225'600'000'000;
constexpr int64_t manual_monotonic_start_ns = 1'000'000'000'000;

}  // namespace

Instant SystemClock::monotonic_now() const { return Instant(Duration(read_ns(CLOCK_MONOTONIC))); }

UnixMicros SystemClock::realtime_now() const {
  return static_cast<UnixMicros>(read_ns(CLOCK_REALTIME) / 1000);
}

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  return clock;
}

ManualClock::ManualClock()
    : monotonic_ns_(manual_monotonic_start_ns), realtime_us_(manual_realtime_start_us) {}

Instant ManualClock::monotonic_now() const {
  return Instant(Duration(monotonic_ns_.load(std::memory_order_relaxed)));
}

UnixMicros ManualClock::realtime_now() const {
  return realtime_us_.load(std::memory_order_relaxed);
}

void ManualClock::advance(Duration duration) {
  HARK_ASSERT(duration.count() >= 0);
  monotonic_ns_.fetch_add(duration.count(), std::memory_order_relaxed);
  realtime_us_.fetch_add(static_cast<uint64_t>(duration.count() / 1000), std::memory_order_relaxed);
}

void ManualClock::set_realtime(UnixMicros micros) {
  realtime_us_.store(micros, std::memory_order_relaxed);
}

}  // namespace hark
