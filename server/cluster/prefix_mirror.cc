#include "hark/server/cluster/prefix_mirror.h"

#include <algorithm>

namespace hark::server::cluster {

Result<bool> PrefixMirror::reload(Coordinator& coordinator) {
  HARK_TRY_ASSIGN(RangeResult read, coordinator.range(prefix_, true));
  std::map<std::string, KeyValue> entries;
  for (KeyValue& kv : read.kvs) {
    std::string key = kv.key;
    entries.emplace(std::move(key), std::move(kv));
  }
  const bool changed = entries != entries_ || revision_ == 0;
  entries_ = std::move(entries);
  revision_ = read.revision;
  reloads_++;
  return changed;
}

Result<bool> PrefixMirror::sync(Coordinator& coordinator, Duration wait) {
  if (revision_ == 0) return reload(coordinator);
  HARK_TRY_ASSIGN(WatchBatch batch, coordinator.watch(prefix_, true, revision_ + 1, wait));
  if (batch.compacted) return reload(coordinator);
  for (WatchEvent& event : batch.events) {
    if (event.type == WatchEvent::Type::erase) {
      entries_.erase(event.kv.key);
    } else {
      std::string key = event.kv.key;
      entries_[std::move(key)] = std::move(event.kv);
    }
  }
  revision_ = std::max(revision_, batch.revision);
  return !batch.events.empty();
}

}  // namespace hark::server::cluster
