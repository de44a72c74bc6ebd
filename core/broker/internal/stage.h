#pragma once

#include <cstdint>

namespace hark::core::internal {

// Where an operation is in its run, and so which shard runs its next step: every stage names
// its shard, and the step asserts it on entry (BrokerShard::expect_on). Declared opaquely in
// core/broker/operation.h, so embedders see none of these values.
enum class Stage : uint8_t {
  start,             // Home: the first step, run by Broker::submit (shard 0 from outside).
  deliver,           // Home: done(), for an operation that finished on another shard.
  settled,           // The owner, once this iteration's wake-ups left: finishes with ok.
  at_owner,          // The partition's owner (PartitionOperation::at_owner).
  at_metadata,       // Shard 0: the Coordinator queues the MetadataCommand.
  stats_visit,       // Shard i of GetStats' tour 0..N-1: its counters, its first step.
  stats_walk,        // The same shard again: GetStats' next step of its partitions.
  poll_at_owner,     // The owner of the partition a Poll visits (PollJob::evaluate_at_owner).
  poll_at_home,      // Home: a Poll back from its owners (PollJob::evaluated_at_home).
  poll_cancelled,    // Home: a parked Poll whose client went away (Broker::cancel).
  notify_at_owner,   // The owner of the partition a Notify visits (NotifyJob::evaluate_at_owner).
  notify_at_home,    // Home: a Notify back from its owners (NotifyJob::evaluated_at_home).
  notify_cancelled,  // Home: a parked Notify whose client went away (Broker::cancel).
};

}  // namespace hark::core::internal
