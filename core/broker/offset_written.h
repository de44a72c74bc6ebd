#pragma once

#include <cstdint>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/result.h"

namespace hark::core {

namespace internal {
class OffsetStore;
}  // namespace internal

// Hears once, on the partition's owner shard, that a stored (or deleted) consumer offset is on
// disk — written, and fdatasynced under durability `always` — or the error that failed it
// (then nothing of it was kept). The object must stay alive until then. StoreOffset and
// DeleteOffset are answered from here.
struct OffsetWrittenTag;
class OffsetWritten : public ListHook<OffsetWrittenTag> {
 public:
  virtual void offset_written(Status status) = 0;

 protected:
  virtual ~OffsetWritten() = default;

 private:
  friend class internal::OffsetStore;
  uint64_t sequence_ = 0;
};

}  // namespace hark::core
