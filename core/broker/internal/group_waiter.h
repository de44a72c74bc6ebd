#pragma once

#include <cstdint>
#include <vector>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/broker/name_or_id.h"

namespace hark::core::internal {

class BrokerShard;
struct Catalog;

// Tag of the hook by which a shard lists its parked group waiters.
struct GroupPollTag;

// Where a group member waits: the stream, topic, group and member its request names, and the
// partitions it was evaluated on.
struct GroupAddress {
  const NameOrId* stream = nullptr;
  const NameOrId* topic = nullptr;
  const NameOrId* group = nullptr;
  uint32_t member = 0;
  const std::vector<uint32_t>* assigned = nullptr;
};

// A request parked on a group member's assignment (a group-wide Poll, a Notify): its home
// shard lists it and, when a catalog changes the member's partitions, calls rebalanced(),
// which evaluates it again on the new assignment with its deadline (docs/architecture.md §4).
class GroupWaiter : public ListHook<GroupPollTag> {
 public:
  virtual GroupAddress group_address() const = 0;
  // On the home shard, while parked: the group changed under it.
  virtual void rebalanced(BrokerShard& shard) = 0;

 protected:
  ~GroupWaiter() = default;
};

}  // namespace hark::core::internal
