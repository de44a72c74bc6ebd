#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/core/broker/operation.h"

namespace hark::core {

namespace internal {
class Partition;
}  // namespace internal

// Notifications (docs/notifications.md): a Condition an embedder registers with the Broker
// under a name (Broker::register_condition) and a Notify operation (notify_operations.h) that
// waits until it holds on a partition. The broker's own built-ins (hark.messages, hark.lag)
// are Conditions too.

// Most parameter bytes a request may carry, and most answer bytes a condition may write per
// partition (both are held inline by the parked registration: no allocation per event).
inline constexpr size_t condition_params_max = 64;
inline constexpr size_t condition_answer_max = 64;

// Read-only facts about one partition, on its owner shard, while a condition is evaluated.
class PartitionFacts {
 public:
  uint32_t stream_id = 0;
  uint32_t topic_id = 0;
  uint32_t partition_id = 0;
  uint64_t first_offset = 0;  // First retained offset (== next_offset when empty).
  uint64_t next_offset = 0;   // Exclusive end of committed data.
  uint64_t size_bytes = 0;
  UnixMicros last_append_timestamp = 0;  // Server timestamp of the last batch; 0: none yet.
  UnixMicros now = 0;                    // The owner's realtime clock, µs.

  // The offset `consumer` (a consumer id, or a group's id) stored on this partition, if any.
  std::optional<uint64_t> stored_offset(const ConsumerRef& consumer) const;

  explicit PartitionFacts(const internal::Partition& partition) : partition_(partition) {}

 private:
  const internal::Partition& partition_;
};

// What a request asks of a condition: who asks (a consumer, or a group by its id) and the
// request's parameter bytes (at most condition_params_max).
struct ConditionRequest {
  ConsumerRef consumer;
  std::span<const std::byte> params;
};

struct Verdict {
  bool satisfied = false;
  uint32_t answer_size = 0;  // Bytes written to `answer` when satisfied.
  // When not satisfied: commits that leave next_offset below this cannot satisfy it, so the
  // owner does not evaluate it for them (0: evaluate at every commit; UINT64_MAX: commits
  // never satisfy it, only offset changes may). Offset stores and deletes always evaluate.
  uint64_t wake_at = 0;
  // For a condition over a total (totals()): this partition's share of it (hark.lag: its lag).
  uint64_t measure = 0;
};

// A condition. evaluate() runs on the partition's owner shard: when the request is evaluated
// (at once), and while it waits, at commits (subject to wake_at), at stored-offset changes on
// the partition and, for time_dependent() conditions, at the owner's sweep
// (WaitShardOptions::sweep_interval). It must not block or allocate, and may be called on
// every shard at once (it is const: keep no mutable state). Registered conditions must
// outlive the broker.
class Condition {
 public:
  virtual ~Condition() = default;
  // On the request's home shard, once: refuse malformed parameters (InvalidFormat, 4, or
  // another Iggy code); the request then fails with it.
  virtual Status check(std::span<const std::byte> params) const {
    (void)params;
    return ok_status();
  }
  virtual Verdict evaluate(const PartitionFacts& facts, const ConditionRequest& request,
                           std::span<std::byte, condition_answer_max> answer) const = 0;
  // True if the verdict can change with time alone (e.g. "no message for N seconds"): such
  // a waiter is also evaluated at every sweep of its partition's owner.
  virtual bool time_dependent() const { return false; }

  // A condition over the total of the partitions a request addresses (hark.lag) returns true:
  // then evaluate() always writes its answer and its Verdict::measure (`satisfied` is not
  // read), each owner sends every change of them to the request's home shard, and the home
  // asks total_holds() of the sum of the latest measures.
  virtual bool totals() const { return false; }
  virtual bool total_holds(uint64_t total, std::span<const std::byte> params) const {
    (void)total;
    (void)params;
    return false;
  }
};

}  // namespace hark::core
