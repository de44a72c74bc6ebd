#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hark/core/base/histogram.h"
#include "hark/core/broker/operation.h"
#include "hark/core/partition_key.h"
#include "hark/core/wait/wait_shard.h"

namespace hark::core {

// Appends one shard committed as the owner: written by that shard only, read on it by GetStats.
struct alignas(64) AppendCounters {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  // From the Append's submit at its home to its commit at the owner (durability decides when).
  LatencyHistogram commit_latency;

  void record(uint32_t count, uint64_t size, Duration latency) {
    messages += count;
    bytes += size;
    commit_latency.record(latency);
  }
};

// Counters of every shard, summed (docs/long-polling.md §Counters).
struct BrokerStats {
  WaitCounters waits;
  AppendCounters appends;
  uint64_t reevaluated = 0;     // Woken polls the owner could not answer with data at once.
  uint64_t reparked = 0;        // Woken polls that found nothing and parked again.
  uint64_t held = 0;            // Appends a move's fence holds now (FencePartition).
  uint64_t eventfd_writes = 0;  // Cross-shard wakes of sleeping shards.
  uint64_t partitions = 0;
  uint64_t segments = 0;
  uint64_t messages_count = 0;
  uint64_t size_bytes = 0;
  // From the catalog of the shard that answers (shard 0's, the first to apply every change).
  uint64_t streams = 0;
  uint64_t topics = 0;
  uint64_t consumer_groups = 0;
};

// Per-partition and per-consumer figures (harkd's /metrics), each list capped; what the caps
// leave out is counted and summed.
struct SeriesLimits {
  uint32_t partitions = 0;  // 0: gather no partition series.
  uint32_t consumers = 0;   // 0: gather no lag series.
};

struct PartitionSeries {
  std::string stream;  // Names, from the catalog.
  std::string topic;
  uint32_t partition = 0;
  uint64_t next_offset = 0;
};

// A consumer's or group's lag over every partition of a topic: the total hark.lag (WaitForLag)
// watches, partitions where it stored nothing counting from their first retained offset.
struct LagSeries {
  std::string stream;
  std::string topic;
  ConsumerRef consumer;
  std::string group;  // The group's name, for a group.
  uint64_t lag = 0;
};

struct MetricSeries {
  std::vector<PartitionSeries> partitions;
  uint64_t partitions_dropped = 0;       // Past SeriesLimits::partitions,
  uint64_t dropped_next_offset_sum = 0;  // and their next offsets summed.
  std::vector<LagSeries> lags;
  uint64_t lags_dropped = 0;     // Consumers and groups past SeriesLimits::consumers, and their
  uint64_t dropped_lag_sum = 0;  // lag on the partitions where they stored an offset, summed.
};

namespace internal {
struct SeriesGather;
}  // namespace internal

// A tour of every shard: each adds its counters (and, with `limits`, its partitions' series)
// on its own thread, then hands the operation to the next one. A shard walks its partitions in
// key order, in steps of at most BrokerOptions::stats_step_max partitions and stored offsets,
// each queued behind the shard's other work: the tour never holds a shard for longer than one
// step. A partition created or deleted while its owner is being walked may be missed or
// counted, never counted twice (the walk resumes after the last key it visited).
class GetStats : public Operation {
 public:
  GetStats();
  ~GetStats() override;

  SeriesLimits limits;  // In.
  BrokerStats stats;    // Out.
  MetricSeries series;  // Out, when limits asked for series.

 private:
  void step(internal::BrokerShard& shard) override;
  // The first step, at home: false if it went on to shard 0.
  bool start(internal::BrokerShard& shard);
  // One step of `shard`'s partitions: true once it visited the last.
  bool walk_step(internal::BrokerShard& shard);
  // The last partition of the shard being walked that a step visited; none before its first.
  std::optional<PartitionKey> walked_;
  // The tour's working state for the series (control plane: allocated per call).
  std::unique_ptr<internal::SeriesGather> gather_;
};

}  // namespace hark::core
