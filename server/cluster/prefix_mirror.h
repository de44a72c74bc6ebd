#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/server/cluster/coordinator.h"

namespace hark::server::cluster {

// A local copy of every key under one prefix, kept current by a watch: the first sync() reads
// the prefix whole, later ones apply the changes since the last revision seen. A watch whose
// start revision etcd compacted away (WatchBatch::compacted) re-reads the prefix whole and
// resumes after that read, so a node that was away past a compaction converges instead of
// missing deletes. Used only on the coordination thread.
class PrefixMirror {
 public:
  explicit PrefixMirror(std::string prefix) : prefix_(std::move(prefix)) {}

  // Brings the copy up to date, waiting at most `wait` for a change; true if it changed.
  Result<bool> sync(Coordinator& coordinator, Duration wait);

  // This node's own write at `revision` (the ops of one put or successful transaction): when
  // it is the very next revision after the copy's, applies it here and moves on, so the next
  // watch starts at etcd's current revision. A watch that starts behind it is served by
  // etcd's catch-up loop, every 100 ms. false (nothing done) otherwise: the watch brings it.
  bool apply_own(const std::vector<TxnOp>& ops, int64_t revision);

  const std::map<std::string, KeyValue>& entries() const { return entries_; }
  int64_t revision() const { return revision_; }
  uint64_t reloads() const { return reloads_; }  // Full reads (the first and after compaction).

 private:
  Result<bool> reload(Coordinator& coordinator);

  std::string prefix_;
  std::map<std::string, KeyValue> entries_;
  int64_t revision_ = 0;  // 0: never read.
  uint64_t reloads_ = 0;
};

}  // namespace hark::server::cluster
