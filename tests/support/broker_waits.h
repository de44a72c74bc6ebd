#pragma once

#include <cstdint>

#include <gtest/gtest.h>

#include "hark/core/base/error.h"
#include "hark/core/broker/blocking.h"
#include "hark/core/broker/stats.h"
#include "hark/tests/support/wait_until.h"

namespace hark::test {

// What a test of the embeddable core waits on instead of sleeping: the broker's own counters
// (GetStats, summed over the shards; docs/long-polling.md §Counters). A poll counts in
// `waits.parked_now` from the moment its home parked it until it is answered, so a test that
// asserts "not answered yet" first waits for that count; `waits.woken` is counted by the owner
// before an Append is answered, so "this append woke nobody" is a counter that did not move.

// The counters now, read from a thread outside the broker (a failed call fails the test).
inline core::BrokerStats broker_stats(core::Broker& broker) {
  core::Blocking<core::GetStats> stats;
  const Status status = stats.call(broker);
  EXPECT_TRUE(status.ok()) << error_name(status.error());
  return stats.stats;
}

// Waits (bounded by signal_timeout) until `ready(stats)` holds; true if it did. On false the
// test fails with the counters last seen.
template <typename Ready>
bool wait_for_stats(core::Broker& broker, Ready ready) {
  core::BrokerStats seen;
  if (wait_until([&] { return ready(seen = broker_stats(broker)); })) return true;
  ADD_FAILURE() << "broker counters never got there: parked_now=" << seen.waits.parked_now
                << " parked=" << seen.waits.parked << " woken=" << seen.waits.woken
                << " timed_out=" << seen.waits.timed_out << " cancelled=" << seen.waits.cancelled
                << " aborted=" << seen.waits.aborted << " reparked=" << seen.reparked;
  return false;
}

// Waits until exactly `count` polls are parked (over every shard).
inline bool wait_until_parked(core::Broker& broker, uint64_t count) {
  return wait_for_stats(
      broker, [count](const core::BrokerStats& s) { return s.waits.parked_now == count; });
}

}  // namespace hark::test
