#pragma once

#include <cstdint>
#include <functional>

#include "hark/core/base/units.h"

namespace hark::core {

// Names one partition everywhere in hark: stream, topic and partition ids. The only key by
// which partitions are found, owned and reported (docs/architecture.md §7: no positional indices).
struct PartitionKey {
  StreamId stream;
  TopicId topic;
  PartitionId partition;

  auto operator<=>(const PartitionKey&) const = default;

  template <typename H>
  friend H AbslHashValue(H state, const PartitionKey& key) {
    return H::combine(std::move(state), key.stream, key.topic, key.partition);
  }
};

}  // namespace hark::core
