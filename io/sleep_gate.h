#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "hark/core/base/result.h"

namespace hark::io {

// How a shard sleeps and how another thread wakes it: one atomic state word and an eventfd
// whose read the shard keeps armed on its ring. Waking a sleeping core costs 16-28 µs here,
// checking a word 0.02 µs, so a waker writes the eventfd only when the target is Sleeping,
// and only the first waker per sleep does (a CAS Sleeping -> Notified).
//
// The handshake (both sides seq_cst, no standalone fences):
//   sleeper: state = Sleeping; if (work visible) { state = Running; don't block } else block
//   waker:   publish work (seq_cst RMW on the inbox head); if (state == Sleeping and
//            CAS(Sleeping -> Notified)) write eventfd
// In the single total order of seq_cst operations, either the sleeper's re-check comes after
// the waker's publish (it sees the work), or its store of Sleeping comes before the waker's
// read of the state (the waker writes the eventfd). With release/acquire both can miss: the
// Relacy model in tests/io shows the lost wake-up.
//
// Concurrent: `state_` and `eventfd_writes_` are atomics; the eventfd is written by wakers and
// read by the owner's ring.
class SleepGate {
 public:
  enum class State : uint32_t { running = 0, sleeping = 1, notified = 2 };

  static Result<std::unique_ptr<SleepGate>> create();
  ~SleepGate();
  SleepGate(const SleepGate&) = delete;
  SleepGate& operator=(const SleepGate&) = delete;

  int eventfd() const { return eventfd_; }

  // Owner. Announces the sleep, then re-checks `has_work()`; returns false (and stays
  // Running) if there is work, true if the caller may block until the eventfd fires.
  template <typename HasWork>
  bool prepare_to_sleep(HasWork&& has_work) {
    state_.store(State::sleeping, std::memory_order_seq_cst);
#ifndef HARK_MUTANT_SKIP_RECHECK
    if (has_work()) {
      state_.store(State::running, std::memory_order_seq_cst);
      return false;
    }
#else
    (void)has_work;  // The mutant of tests/io: the lost-wakeup monitor must catch it.
#endif
    return true;
  }

  // Owner, after the blocking wait returned for any reason.
  void woke() { state_.store(State::running, std::memory_order_seq_cst); }

  // Any thread, after publishing work for the owner. Returns true if this call wrote the
  // eventfd (the owner was asleep and nobody had woken it yet).
  bool notify();

  State state() const { return state_.load(std::memory_order_seq_cst); }
  uint64_t eventfd_writes() const { return eventfd_writes_.load(std::memory_order_relaxed); }

 private:
  explicit SleepGate(int eventfd) : eventfd_(eventfd) {}

  alignas(64) std::atomic<State> state_{State::running};
  std::atomic<uint64_t> eventfd_writes_{0};
  int eventfd_;
};

}  // namespace hark::io
