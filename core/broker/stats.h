#pragma once

#include <cstdint>

#include "hark/core/broker/operation.h"
#include "hark/core/wait/wait_shard.h"

namespace hark::core {

// Counters of every shard, summed (docs/long-polling.md §Counters).
struct BrokerStats {
  WaitCounters waits;
  uint64_t reevaluated = 0;     // Woken polls the owner could not answer with data at once.
  uint64_t reparked = 0;        // Woken polls that found nothing and parked again.
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

class GetStats : public Operation {
 public:
  BrokerStats stats;  // Out.

 private:
  void step(internal::BrokerShard& shard) override;
};

}  // namespace hark::core
