// Stresses the wait machinery across shards (run under ThreadSanitizer and AddressSanitizer):
// three shards park random polls on one to three partitions owned by any shard, commit, purge,
// cancel and let polls time out, for HARK_STRESS_SECONDS (default 2). Checked: no poll is
// answered twice or after a cancel; a poll that stays parked more than a second after its data
// was committed is a lost wake-up; at the end every Wait and Registration is back in its pool
// exactly once (the WaitShard destructor asserts it).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/wait/wait_shard.h"
#include "hark/io/shard_group.h"
#include "hark/tests/support/prng.h"
#include "hark/tests/support/wait_until.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t shards_count = 3;
constexpr uint32_t points_count = 6;

struct Shared {
  std::vector<std::unique_ptr<CommitPoint>> points;
  std::atomic<bool> running{true};
  std::atomic<int> double_answers{0};
  std::atomic<int> answers_after_cancel{0};
  std::atomic<int> lost_wakeups{0};
  std::atomic<uint64_t> answered{0};
  std::atomic<uint64_t> parks{0};
};

// One shard's driver: a timer that acts every ~20-200 µs, and the client its polls report to.
class Driver final : public io::Timer, public WaitClient {
 public:
  Driver(io::Reactor& reactor, WaitShard& shard, Shared& shared, uint64_t seed)
      : reactor_(reactor), shard_(shard), shared_(shared), random_(seed) {}

  void start() { arm(); }

  void expire() override {
    if (!shared_.running.load(std::memory_order_relaxed)) return;
    act();
    check_lost_wakeups();
    arm();
  }

  void on_wait_done(Wait& wait, WaitState, Registration*) override {
    auto it = active_.find(wait.cookie());
    if (it == active_.end()) {
      (cancelled_.count(wait.cookie()) ? shared_.answers_after_cancel : shared_.double_answers)++;
      return;
    }
    active_.erase(it);
    shared_.answered++;
  }

  // At the end: cancel what is still parked (as a disconnect would).
  void cancel_all() {
    for (auto& [cookie, poll] : active_) shard_.cancel(*poll.wait);
    active_.clear();
  }

 private:
  struct Active {
    Wait* wait;
    std::vector<Watch> watches;
    SteadyClock::time_point satisfiable_since{};
  };

  void arm() {
    const auto delay = std::chrono::microseconds(20 + random_.below(180));
    reactor_.timers().add(*this, reactor_.clock().monotonic_now() + delay);
  }

  void act() {
    const uint64_t dice = random_.below(100);
    if (dice < 45) {
      park();
    } else if (dice < 85) {
      commit();
    } else if (dice < 95) {
      cancel_one();
    } else if (dice < 97) {
      purge();
    }
  }

  void park() {
    std::vector<Watch> watches;
    const uint64_t wanted = 1 + random_.below(3);
    for (uint64_t i = 0; i < wanted; i++) {
      CommitPoint& point = *shared_.points[random_.below(points_count)];
      const CommitSnapshot seen = point.snapshot();
      watches.push_back(Watch{&point, Offset(seen.next_offset + random_.below(2)),
                              static_cast<uint32_t>(1 + random_.below(2)), seen.epoch});
    }
    const auto wait_for = std::chrono::milliseconds(1 + random_.below(3000));
    const uint64_t cookie = next_cookie_++;
    Result<ParkResult> parked =
        shard_.park(watches, reactor_.clock().monotonic_now() + wait_for, *this, cookie);
    if (!parked.ok()) return;  // Pool full: a clean error, fine here.
    shared_.parks++;
    if (parked->state == WaitState::waiting) active_.emplace(cookie, Active{parked->wait, watches});
  }

  void commit() {
    for (const auto& point : shared_.points) {
      if (point->owner() != reactor_.id() || random_.below(2) == 0) continue;
      shard_.publish(*point, point->snapshot().next_offset + 1 + random_.below(2));
    }
  }

  void cancel_one() {
    if (active_.empty()) return;
    auto it = active_.begin();
    std::advance(it, static_cast<long>(random_.below(active_.size())));
    shard_.cancel(*it->second.wait);
    cancelled_.insert(it->first);
    active_.erase(it);
  }

  void purge() {
    for (const auto& point : shared_.points) {
      if (point->owner() == reactor_.id() && random_.below(4) == 0) shard_.reset(*point, 0);
    }
  }

  // A poll whose data has been committed for over a second and is still parked was lost.
  void check_lost_wakeups() {
    const auto now = SteadyClock::now();
    for (auto& [cookie, poll] : active_) {
      bool satisfiable = false;
      for (const Watch& watch : poll.watches) {
        const CommitSnapshot snapshot = watch.point->snapshot();
        satisfiable =
            satisfiable || (snapshot.epoch == watch.epoch &&
                            snapshot.next_offset >= watch.want.value() + watch.min_messages);
      }
      if (!satisfiable) {
        poll.satisfiable_since = {};
      } else if (poll.satisfiable_since == SteadyClock::time_point{}) {
        poll.satisfiable_since = now;
      } else if (now - poll.satisfiable_since > 1s) {
        shared_.lost_wakeups++;
        poll.satisfiable_since = now + 1h;  // Count each once.
      }
    }
  }

  io::Reactor& reactor_;
  WaitShard& shard_;
  Shared& shared_;
  test::Prng random_;
  uint64_t next_cookie_ = 1;
  std::map<uint64_t, Active> active_;
  std::set<uint64_t> cancelled_;
};

class StressSetup final : public io::ShardSetup {
 public:
  explicit StressSetup(Shared& shared, uint64_t seed) : shared_(shared), seed_(seed) {}

  Status on_start(io::Reactor& reactor) override {
    const uint32_t index = reactor.id().value();
    shards_[index] = std::make_unique<WaitShard>(
        reactor,
        WaitShardOptions{.waits_max = 512, .registrations_max = 2048, .sweep_interval = 50ms});
    for (const auto& point : shared_.points) {
      if (point->owner() == reactor.id()) shards_[index]->adopt(*point);
    }
    drivers_[index] = std::make_unique<Driver>(reactor, *shards_[index], shared_, seed_ + index);
    return ok_status();
  }

  void on_stop(io::Reactor& reactor) override {
    const uint32_t index = reactor.id().value();
    reactor.timers().cancel(*drivers_[index]);
    for (const auto& point : shared_.points) {
      if (point->owner() == reactor.id()) shards_[index]->release(*point, AbortReason::shutdown);
    }
  }

  // Asserts every Wait and Registration came home, on the shard, before its reactor goes.
  void on_drained(io::Reactor& reactor) override {
    drivers_[reactor.id().value()].reset();
    shards_[reactor.id().value()].reset();
  }

  std::unique_ptr<WaitShard> shards_[shards_count];
  std::unique_ptr<Driver> drivers_[shards_count];

 private:
  Shared& shared_;
  uint64_t seed_;
};

// Runs `f` on shard `index` and waits for it.
template <typename F>
void run_on(io::ShardGroup& group, uint32_t index, F f) {
  struct Call final : io::Task {
    explicit Call(F function) : body(std::move(function)) {}
    void run() override {
      body();
      done.store(true, std::memory_order_release);
    }
    F body;
    std::atomic<bool> done{false};
  } call(std::move(f));
  group.post(ShardId(index), call);
  // `call` lives on this stack: never return before the shard ran it.
  HARK_ASSERT(test::wait_until([&] { return call.done.load(std::memory_order_acquire); },
                               test::signal_timeout, 100us));
}

TEST(WaitConcurrency, RandomParksCommitsPurgesAndCancelsStayExactlyOnce) {
  Shared shared;
  for (uint32_t i = 0; i < points_count; i++) {
    shared.points.push_back(std::make_unique<CommitPoint>(ShardId(i % shards_count)));
  }
  const uint64_t seed = test::test_seed();
  StressSetup setup(shared, seed);
  auto group =
      std::move(io::ShardGroup::start(io::ShardGroupOptions{.shards_count = shards_count}, &setup))
          .value();
  for (uint32_t i = 0; i < shards_count; i++) {
    run_on(*group, i, [&setup, i] { setup.drivers_[i]->start(); });
  }
  const char* seconds = std::getenv("HARK_STRESS_SECONDS");
  // Not a wait for a signal: how long the stress runs (HARK_STRESS_SECONDS) is the test.
  std::this_thread::sleep_for(std::chrono::seconds(seconds != nullptr ? std::atoi(seconds) : 2));
  shared.running.store(false);
  // Drivers act in their shard's timers: once a task has run on each shard after the store,
  // every later expire sees the flag and no driver acts any more.
  for (uint32_t i = 0; i < shards_count; i++) run_on(*group, i, [] {});
  for (uint32_t i = 0; i < shards_count; i++) {
    run_on(*group, i, [&setup, i] { setup.drivers_[i]->cancel_all(); });
  }
  group->stop();  // on_stop releases the points; the drains bring every registration home.
  EXPECT_EQ(shared.double_answers.load(), 0);
  EXPECT_EQ(shared.answers_after_cancel.load(), 0);
  EXPECT_EQ(shared.lost_wakeups.load(), 0);
  EXPECT_GT(shared.parks.load(), 100u);
  EXPECT_GT(shared.answered.load(), 0u);
  std::printf("parks %llu, answered %llu\n", static_cast<unsigned long long>(shared.parks.load()),
              static_cast<unsigned long long>(shared.answered.load()));
}

}  // namespace
}  // namespace hark::core
