#pragma once

#include <cstdint>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/result.h"

namespace hark::core {

namespace internal {
class OffsetStore;
class Partition;
}  // namespace internal

// Hears once, on the partition's owner shard, that a stored (or deleted) consumer offset is on
// disk — written, and fdatasynced under durability `always`, and on a replicated leader held by
// every in-sync follower and a majority (docs/cluster.md §Replication, Consumer offsets) — or
// the error that failed it. The object must stay alive until then. StoreOffset and
// DeleteOffset are answered from here.
struct OffsetWrittenTag;
class OffsetWritten : public ListHook<OffsetWrittenTag> {
 public:
  virtual void offset_written(Status status) = 0;

 protected:
  virtual ~OffsetWritten() = default;

 private:
  friend class internal::OffsetStore;
  friend class internal::Partition;
  uint64_t sequence_ = 0;
  uint64_t version_ = 0;  // The partition's offsets version this change made.
};

}  // namespace hark::core
