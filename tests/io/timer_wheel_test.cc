// Covers the hierarchical timer wheel with explicit instants (no clock, no sleeping): timers
// never fire early and at most one tick late, in order; cancel is O(1) and exact; 100k timers;
// next_expiry() is never later than the earliest expiry; a random model check (rapidcheck).
#include "hark/io/timer_wheel.h"

#include <algorithm>
#include <map>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace hark::io {
namespace {

using namespace std::chrono_literals;

constexpr Duration tick = Duration(1 << 16);

struct TestTimer final : Timer {
  void expire() override {
    fired = true;
    if (log != nullptr) log->push_back(id);
    if (rearm_wheel != nullptr) {
      rearm_wheel->add(*this, deadline() + 1ms);
      rearm_wheel = nullptr;
    }
  }
  int id = 0;
  bool fired = false;
  std::vector<int>* log = nullptr;
  TimerWheel* rearm_wheel = nullptr;
};

const Instant start = Instant(Duration(5'000'000'000));

TEST(TimerWheel, FiresAtTheDeadlineNeverBefore) {
  TimerWheel wheel(start);
  TestTimer timer;
  wheel.add(timer, start + 10ms);
  EXPECT_EQ(wheel.advance(start + 10ms - 1ns), 0u);
  EXPECT_FALSE(timer.fired);
  EXPECT_EQ(wheel.advance(start + 10ms + tick), 1u);
  EXPECT_TRUE(timer.fired);
  EXPECT_FALSE(timer.armed());
  EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimerWheel, FiresInDeadlineOrderAcrossLevels) {
  TimerWheel wheel(start);
  std::vector<int> log;
  std::vector<TestTimer> timers(5);
  const Duration deadlines[] = {3h, 1ms, 10s, 200ms, 50us};
  for (int i = 0; i < 5; i++) {
    timers[static_cast<size_t>(i)].id = i;
    timers[static_cast<size_t>(i)].log = &log;
    wheel.add(timers[static_cast<size_t>(i)], start + deadlines[i]);
  }
  wheel.advance(start + 4h);
  EXPECT_EQ(log, (std::vector<int>{4, 1, 3, 2, 0}));
}

TEST(TimerWheel, CancelledTimersNeverFire) {
  TimerWheel wheel(start);
  TestTimer kept, cancelled;
  wheel.add(kept, start + 5ms);
  wheel.add(cancelled, start + 5ms);
  wheel.cancel(cancelled);
  wheel.cancel(cancelled);  // Harmless when not armed.
  EXPECT_EQ(wheel.size(), 1u);
  wheel.advance(start + 1s);
  EXPECT_TRUE(kept.fired);
  EXPECT_FALSE(cancelled.fired);
}

TEST(TimerWheel, PastDeadlinesFireAtTheNextAdvance) {
  TimerWheel wheel(start);
  TestTimer timer;
  wheel.add(timer, start - 1s);
  EXPECT_EQ(wheel.next_expiry(), std::optional<Instant>(wheel.next_expiry()));
  EXPECT_LE(*wheel.next_expiry(), start);
  wheel.advance(start);
  EXPECT_TRUE(timer.fired);
}

TEST(TimerWheel, ExpireMayRearmTheSameTimer) {
  TimerWheel wheel(start);
  TestTimer timer;
  timer.rearm_wheel = &wheel;
  wheel.add(timer, start + 1ms);
  wheel.advance(start + 2ms);
  EXPECT_TRUE(timer.armed());
  timer.fired = false;
  wheel.advance(start + 3ms);
  EXPECT_TRUE(timer.fired);
  EXPECT_FALSE(timer.armed());
}

TEST(TimerWheel, NextExpiryIsEmptyWithNoTimers) {
  TimerWheel wheel(start);
  EXPECT_FALSE(wheel.next_expiry().has_value());
}

TEST(TimerWheel, HandlesAHundredThousandTimers) {
  TimerWheel wheel(start);
  std::vector<TestTimer> timers(100'000);
  for (size_t i = 0; i < timers.size(); i++) {
    wheel.add(timers[i], start + Duration(static_cast<int64_t>((i * 7919) % 60'000) * 1'000'000));
  }
  for (size_t i = 0; i < timers.size(); i += 3) wheel.cancel(timers[i]);
  size_t fired = 0;
  for (Instant now = start; now <= start + 61s; now += 250ms) fired += wheel.advance(now);
  EXPECT_EQ(fired, timers.size() - (timers.size() + 2) / 3);
  EXPECT_EQ(wheel.size(), 0u);
  for (size_t i = 0; i < timers.size(); i++) EXPECT_EQ(timers[i].fired, i % 3 != 0);
}

// A random schedule of adds, cancels and advances against a std::multimap model: a timer fires
// in the first advance whose `now` is past its deadline rounded up to a tick, and never before.
RC_GTEST_PROP(TimerWheel, AgreesWithAModel, ()) {
  TimerWheel wheel(start);
  std::vector<TestTimer> timers(64);
  std::map<int, Instant> armed;  // id -> deadline
  Instant now = start;
  const auto steps = *rc::gen::container<std::vector<std::tuple<int, int, int64_t>>>(
      rc::gen::resize(100, rc::gen::tuple(rc::gen::inRange(0, 3), rc::gen::inRange(0, 64),
                                          rc::gen::inRange<int64_t>(0, 20'000'000'000))));
  for (const auto& [kind, id, amount] : steps) {
    TestTimer& timer = timers[static_cast<size_t>(id)];
    if (kind == 0 && !timer.armed()) {
      const Instant deadline = now + Duration(amount / (1 + id % 7 * 1000));
      wheel.add(timer, deadline);
      armed[id] = deadline;
    } else if (kind == 1) {
      wheel.cancel(timer);
      armed.erase(id);
    } else {
      if (std::optional<Instant> next = wheel.next_expiry(); next.has_value()) {
        Instant earliest = Instant::max();
        for (const auto& [armed_id, deadline] : armed) earliest = std::min(earliest, deadline);
        RC_ASSERT(*next <= earliest + tick);
      }
      now += Duration(amount / 1000);
      for (TestTimer& t : timers) t.fired = false;
      wheel.advance(now);
      for (auto it = armed.begin(); it != armed.end();) {
        const bool due = now >= it->second + tick;
        const bool early = now < it->second;
        const bool fired = timers[static_cast<size_t>(it->first)].fired;
        RC_ASSERT(!(fired && early));
        if (due) RC_ASSERT(fired);
        it = fired ? armed.erase(it) : std::next(it);
      }
    }
    RC_ASSERT(wheel.size() == armed.size());
  }
  for (TestTimer& timer : timers) wheel.cancel(timer);
}

}  // namespace
}  // namespace hark::io
