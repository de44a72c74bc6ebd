#pragma once

#include <atomic>

#include "hark/core/base/units.h"

namespace hark {

// The seam through which hark reads time, so timeout tests step a ManualClock instead of
// sleeping. Shared by every shard: implementations are safe to call from any thread.
class Clock {
 public:
  virtual ~Clock() = default;

  // CLOCK_MONOTONIC: deadlines and timers.
  virtual Instant monotonic_now() const = 0;

  // CLOCK_REALTIME in µs since the epoch: message timestamps.
  virtual UnixMicros realtime_now() const = 0;
};

// The operating system's clocks.
class SystemClock final : public Clock {
 public:
  Instant monotonic_now() const override;
  UnixMicros realtime_now() const override;

  // One process-wide instance; it has no state.
  static SystemClock& instance();
};

// A clock that moves only when told. Starts at an arbitrary non-zero instant so code that
// treats zero specially is caught. Concurrent: both readings are relaxed atomics, since a test
// advances the clock and then wakes the threads that read it through its own synchronisation.
class ManualClock final : public Clock {
 public:
  ManualClock();

  Instant monotonic_now() const override;
  UnixMicros realtime_now() const override;

  void advance(Duration duration);
  // Sets only the wall clock (it may go backwards, as a real one can after an NTP step).
  void set_realtime(UnixMicros micros);

 private:
  std::atomic<int64_t> monotonic_ns_;
  std::atomic<uint64_t> realtime_us_;
};

}  // namespace hark
