// Covers the clock seam: the manual clock moves only when told (timeout tests never sleep),
// and the system clock reads the real monotonic and wall clocks.
#include "hark/core/base/clock.h"

#include <chrono>

#include <gtest/gtest.h>

namespace hark {
namespace {

using namespace std::chrono_literals;

TEST(ManualClock, MovesOnlyWhenAdvanced) {
  ManualClock clock;
  const Instant start = clock.monotonic_now();
  const UnixMicros wall = clock.realtime_now();
  EXPECT_EQ(clock.monotonic_now(), start);
  clock.advance(1500us);
  EXPECT_EQ(clock.monotonic_now() - start, Duration(1500us));
  EXPECT_EQ(clock.realtime_now(), wall + 1500);
}

TEST(ManualClock, WallClockCanStepBackwards) {
  ManualClock clock;
  const UnixMicros wall = clock.realtime_now();
  clock.set_realtime(wall - 10);
  EXPECT_EQ(clock.realtime_now(), wall - 10);
}

TEST(SystemClock, MonotonicNeverGoesBack) {
  Clock& clock = SystemClock::instance();
  Instant previous = clock.monotonic_now();
  for (int i = 0; i < 1000; i++) {
    const Instant now = clock.monotonic_now();
    EXPECT_GE(now, previous);
    previous = now;
  }
  // After 2020-01-01 in µs: the wall clock is in microseconds since the epoch.
  EXPECT_GT(clock.realtime_now(), 1'577'836'800'000'000u);
}

TEST(SaturatingAdd, HugeDurationsSaturate) {
  const Instant now = SystemClock::instance().monotonic_now();
  EXPECT_EQ(saturating_add(now, Duration::max()), Instant::max());
  EXPECT_EQ(saturating_add(now, 5us), now + 5us);
}

}  // namespace
}  // namespace hark
