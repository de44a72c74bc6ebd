// Replicate and TruncatePartition (core/broker/replication_operations.h): the partition's owner
// runs them; a follower's fetch is a Poll (internal/poll_job.cc).
#include "hark/core/broker/replication_operations.h"

#include "hark/core/broker/internal/broker_shard.h"
#include "hark/core/broker/internal/flow.h"

namespace hark::core {

using internal::BrokerShard;
using internal::Flow;

Result<Ref<internal::PartitionCell>> Replicate::resolve(BrokerShard& shard) {
  return shard.catalog().partition(stream, topic, partition);
}

void Replicate::at_owner(BrokerShard& shard, internal::Partition& owner) {
  const Status status = expand != 0 ? owner.expand_in_sync(epoch, set, expand)
                                    : owner.replicate({.role = role,
                                                       .epoch = epoch,
                                                       .replicas = replicas,
                                                       .set = set,
                                                       .in_sync = in_sync},
                                                      Offset(leader_commit));
  const storage::PartitionLog& log = owner.log();
  commit_end = log.next_offset().value();
  durable_end = log.durable_end().value();
  appended_end = log.appended_end().value();
  recorded_epoch = owner.recorded_epoch();
  Flow::finish(*this, shard, status);
}

Result<Ref<internal::PartitionCell>> TruncatePartition::resolve(BrokerShard& shard) {
  return shard.catalog().partition(stream, topic, partition);
}

void TruncatePartition::at_owner(BrokerShard& shard, internal::Partition& owner) {
  Flow::finish(*this, shard, owner.truncate(Offset(end), epoch));
}

Result<Ref<internal::PartitionCell>> AdoptOffsets::resolve(BrokerShard& shard) {
  return shard.catalog().partition(stream, topic, partition);
}

void AdoptOffsets::at_owner(BrokerShard& shard, internal::Partition& owner) {
  const Result<bool> writing = owner.adopt_offsets(offsets, *this);
  if (!writing.ok()) {
    Flow::finish(*this, shard, writing.error());
  } else if (!*writing) {
    Flow::finish(*this, shard, ok_status());
  }
}

void AdoptOffsets::offset_written(Status status) {
  Flow::finish(*this, *BrokerShard::current(), std::move(status));
}

}  // namespace hark::core
