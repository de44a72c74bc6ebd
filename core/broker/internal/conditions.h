#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/core/broker/condition.h"

namespace hark::core::internal {

// The lag of `consumer` on one partition, as hark.lag measures it (docs/notifications.md): the
// committed messages from where it reads next (its stored offset + 1, or the first retained
// offset) to next_offset. The one computation behind WaitForLag and /metrics' lag series.
uint64_t consumer_lag(const PartitionFacts& facts, const ConsumerRef& consumer);

// The conditions a Broker knows by name (docs/notifications.md): the built-ins and those the
// embedder registered. Read-mostly: find() is one acquire load and a short scan of an
// immutable table, from any shard; add() (rare, control plane) copies the table under a
// mutex and publishes the copy. Old tables are kept until the registry goes, so a reader
// never sees one freed.
class ConditionRegistry {
 public:
  // Registers the built-ins (hark.messages, hark.lag).
  ConditionRegistry();
  ConditionRegistry(const ConditionRegistry&) = delete;
  ConditionRegistry& operator=(const ConditionRegistry&) = delete;

  // invalid_configuration (2) for an empty name, one over 255 bytes, or one already taken.
  Status add(std::string_view name, const Condition& condition);
  // Any thread; null if no condition has that name.
  const Condition* find(std::string_view name) const;

 private:
  using Table = std::vector<std::pair<std::string, const Condition*>>;

  std::mutex mutex_;                            // Writers.
  std::vector<std::unique_ptr<Table>> tables_;  // Every version (under mutex_).
  std::atomic<const Table*> current_{nullptr};
};

}  // namespace hark::core::internal
