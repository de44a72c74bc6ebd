#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/units.h"

namespace hark::io {

// A timer is an object that embeds this base and says what happens at its deadline. Owned by
// its user (a parked poll's Wait, a connection); the wheel only links it.
class Timer : public ListHook<> {
 public:
  Instant deadline() const { return deadline_; }
  bool armed() const { return linked(); }

  // Runs on the wheel's shard once the deadline has passed. The timer is already disarmed;
  // expire() may re-arm it or destroy it.
  virtual void expire() = 0;

 protected:
  // Virtual only to satisfy -Wnon-virtual-dtor (TimerWheel is a friend); timers are never
  // deleted through a Timer*.
  virtual ~Timer() = default;

 private:
  friend class TimerWheel;
  Instant deadline_{};
  uint64_t tick_ = 0;
  uint8_t level_ = 0;
  uint8_t slot_ = 0;
};

// A hierarchical timing wheel: O(1) add and cancel, and the exact next expiry for the reactor
// to sleep until, so a shard needs one kernel timeout however many timers it holds.
//
// Time is cut into ticks of 2^16 ns (65.5 µs). A timer expires at the first tick boundary at
// or after its deadline, so it never fires early and at most one tick late (plus the kernel's
// wake-up). Eleven levels of 64 slots cover the whole 64-bit tick range: a timer sits in the
// level of the highest 6-bit group in which its expiry tick differs from the current tick, and
// is moved down (cascaded) when the current tick reaches the start of its slot. A 64-bit
// occupancy mask per level finds the next non-empty slot with one count-trailing-zeros.
//
// Owned by one shard and used only there. Not thread-safe.
class TimerWheel {
 public:
  explicit TimerWheel(Instant now);
  TimerWheel(const TimerWheel&) = delete;
  TimerWheel& operator=(const TimerWheel&) = delete;
  ~TimerWheel();

  // Arms `timer` for `deadline`. Requires: not armed. A deadline in the past expires at the
  // next advance().
  void add(Timer& timer, Instant deadline);
  // Disarms `timer` if armed. O(1).
  void cancel(Timer& timer);

  // Expires every timer whose deadline is <= now, in deadline-tick order. Returns how many.
  size_t advance(Instant now);

  // When the earliest armed timer is due (or a cascade must run), or nullopt if none is armed.
  std::optional<Instant> next_expiry() const;

  size_t size() const { return size_; }

 private:
  static constexpr int tick_shift = 16;
  static constexpr int level_bits = 6;
  static constexpr int slots_per_level = 1 << level_bits;
  static constexpr int levels_count = 11;  // ceil(64 / 6)
  // Pseudo-levels recorded in Timer::level_ for timers outside the slots.
  static constexpr uint8_t due_level = levels_count;
  static constexpr uint8_t expiring_level = levels_count + 1;

  using Slot = IntrusiveList<Timer>;

  static uint64_t tick_of(Instant instant);
  static uint64_t expiry_tick_of(Instant deadline);
  static Instant instant_of(uint64_t tick);

  void place(Timer& timer);
  std::optional<uint64_t> next_event_tick() const;
  void process_tick(uint64_t tick, size_t& expired);

  uint64_t current_tick_;
  size_t size_ = 0;
  std::array<uint64_t, levels_count> occupied_{};
  std::array<std::array<Slot, slots_per_level>, levels_count> slots_;
  Slot due_;       // Timers whose expiry tick has passed, waiting for advance().
  Slot expiring_;  // The batch advance() is expiring now.
};

}  // namespace hark::io
