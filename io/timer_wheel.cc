#include "hark/io/timer_wheel.h"

#include <bit>

#include "hark/core/base/assert.h"

namespace hark::io {

TimerWheel::TimerWheel(Instant now) : current_tick_(tick_of(now)) {}

TimerWheel::~TimerWheel() { HARK_ASSERT(size_ == 0); }

uint64_t TimerWheel::tick_of(Instant instant) {
  const int64_t ns = instant.time_since_epoch().count();
  return ns <= 0 ? 0 : static_cast<uint64_t>(ns) >> tick_shift;
}

uint64_t TimerWheel::expiry_tick_of(Instant deadline) {
  const int64_t ns = deadline.time_since_epoch().count();
  if (ns <= 0) return 0;
  const auto value = static_cast<uint64_t>(ns);
  // Round up: a timer never expires before its deadline.
  return (value >> tick_shift) + ((value & ((uint64_t{1} << tick_shift) - 1)) != 0 ? 1 : 0);
}

Instant TimerWheel::instant_of(uint64_t tick) {
  if (tick >= (uint64_t{1} << (63 - tick_shift))) return Instant::max();
  return Instant(Duration(static_cast<int64_t>(tick << tick_shift)));
}

void TimerWheel::add(Timer& timer, Instant deadline) {
  HARK_ASSERT(!timer.armed());
  timer.deadline_ = deadline;
  timer.tick_ = expiry_tick_of(deadline);
  place(timer);
  size_++;
}

void TimerWheel::place(Timer& timer) {
  if (timer.tick_ <= current_tick_) {
    timer.level_ = due_level;
    due_.push_back(timer);
    return;
  }
  const uint64_t differing = timer.tick_ ^ current_tick_;
  const int level = (63 - std::countl_zero(differing)) / level_bits;
  const auto slot = static_cast<int>((timer.tick_ >> (level * level_bits)) & (slots_per_level - 1));
  timer.level_ = static_cast<uint8_t>(level);
  timer.slot_ = static_cast<uint8_t>(slot);
  slots_[level][slot].push_back(timer);
  occupied_[level] |= uint64_t{1} << slot;
}

void TimerWheel::cancel(Timer& timer) {
  if (!timer.armed()) return;
  if (timer.level_ == due_level) {
    due_.remove(timer);
  } else if (timer.level_ == expiring_level) {
    expiring_.remove(timer);
  } else {
    Slot& slot = slots_[timer.level_][timer.slot_];
    slot.remove(timer);
    if (slot.empty()) occupied_[timer.level_] &= ~(uint64_t{1} << timer.slot_);
  }
  size_--;
}

std::optional<uint64_t> TimerWheel::next_event_tick() const {
  std::optional<uint64_t> earliest;
  for (int level = 0; level < levels_count; level++) {
    if (occupied_[level] == 0) continue;
    const int shift = level * level_bits;
    const auto index = static_cast<int>((current_tick_ >> shift) & (slots_per_level - 1));
    // Pending slots of a level are strictly after the current index (see place()).
    const uint64_t later = index == slots_per_level - 1 ? 0 : ~uint64_t{0} << (index + 1);
    const uint64_t candidates = occupied_[level] & later;
    HARK_ASSERT(candidates == occupied_[level]);
    const auto slot = static_cast<uint64_t>(std::countr_zero(candidates));
    const int block_shift = shift + level_bits;
    const uint64_t block = block_shift >= 64 ? 0 : (current_tick_ >> block_shift) << block_shift;
    const uint64_t tick = block | (slot << shift);
    if (!earliest.has_value() || tick < *earliest) earliest = tick;
  }
  return earliest;
}

std::optional<Instant> TimerWheel::next_expiry() const {
  if (!due_.empty()) return instant_of(current_tick_);
  const std::optional<uint64_t> tick = next_event_tick();
  if (!tick.has_value()) return std::nullopt;
  return instant_of(*tick);
}

void TimerWheel::process_tick(uint64_t tick, size_t& expired) {
  current_tick_ = tick;
  // Every slot that starts at this tick, top level first, cascades down; timers due now land
  // in due_ and expire below.
  for (int level = levels_count - 1; level >= 0; level--) {
    const int shift = level * level_bits;
    if (shift > 0 && (tick & ((uint64_t{1} << shift) - 1)) != 0) continue;
    const auto index = static_cast<int>((tick >> shift) & (slots_per_level - 1));
    if ((occupied_[level] >> index & 1) == 0) continue;
    Slot& slot = slots_[level][index];
    occupied_[level] &= ~(uint64_t{1} << index);
    while (Timer* timer = slot.pop_front()) place(*timer);
  }
  // Expire a snapshot: a timer re-armed in the past from expire() waits for the next advance
  // instead of looping here.
  due_.for_each([](Timer& timer) { timer.level_ = expiring_level; });
  expiring_.splice_back(due_);
  while (Timer* timer = expiring_.pop_front()) {
    size_--;
    expired++;
    timer->expire();
  }
}

size_t TimerWheel::advance(Instant now) {
  const uint64_t now_tick = tick_of(now);
  size_t expired = 0;
  if (!due_.empty()) process_tick(current_tick_, expired);
  while (true) {
    const std::optional<uint64_t> next = next_event_tick();
    if (!next.has_value() || *next > now_tick) break;
    process_tick(*next, expired);
  }
  if (now_tick > current_tick_) current_tick_ = now_tick;
  return expired;
}

}  // namespace hark::io
