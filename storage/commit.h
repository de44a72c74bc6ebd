#pragma once

#include <span>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"

namespace hark::storage {

class PartitionLog;

// Hears when an appended batch commits (PartitionLog::when_committed): once, on the log's
// shard, with ok when every message before the target offset is committed — once the write
// (under `always` the fdatasync) that covers them completed, at once under `memory` — or with
// the error of the failed write or sync that rolled them back (they are then never served).
// The object must stay alive until then. Data plane: waiting and completing never allocate (an
// intrusive FIFO).
struct CommitTag;
class CommitCompletion : public ListHook<CommitTag> {
 public:
  virtual void committed(Status status) = 0;

 protected:
  virtual ~CommitCompletion() = default;

 private:
  friend class PartitionLog;
  Offset end_;
};

// Hears every advance of a log's commit point (next_offset()), on the log's shard, before the
// CommitCompletions it satisfies: the owner publishes it to parked polls. Must outlive the log.
class CommitListener {
 public:
  virtual void commit_advanced(Offset next_offset) = 0;

 protected:
  ~CommitListener() = default;
};

// The replication rule (docs/cluster.md §Replication): the largest offset below which a
// majority of `durable_ends` (one per member of a replica set, the leader's first, at most
// PartitionLog::replicas_max) hold every message — the (n/2 + 1)-th largest end — and never
// beyond the leader's own durable end. One member: its own end. Requires: 1 <= size <=
// PartitionLog::replicas_max.
Offset quorum_end(std::span<const Offset> durable_ends);

}  // namespace hark::storage
