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

bool PrefixMirror::apply_own(const std::vector<TxnOp>& ops, int64_t revision) {
  if (revision_ == 0 || revision != revision_ + 1) return false;
  for (const TxnOp& op : ops) {
    if (op.prefix || !op.key.starts_with(prefix_)) return false;
  }
  for (const TxnOp& op : ops) {
    if (op.kind == TxnOp::Kind::erase) {
      entries_.erase(op.key);
    } else if (op.kind == TxnOp::Kind::put) {
      KeyValue& kv = entries_[op.key];
      if (kv.create_revision == 0) kv.create_revision = revision;
      kv.key = op.key;
      kv.value = op.value;
      kv.mod_revision = revision;
      kv.version++;
      kv.lease = op.lease;
    }
  }
  revision_ = revision;
  return true;
}

}  // namespace hark::server::cluster
