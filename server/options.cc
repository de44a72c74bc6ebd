#include "hark/server/options.h"

#include <algorithm>

namespace hark::server {

core::BrokerOptions broker_options(const ServerOptions& options) {
  core::BrokerOptions broker;
  broker.data_directory = options.data_directory;
  broker.shards_count = options.shards_count;
  broker.max_wait = options.max_wait;
  broker.waits.waits_max = options.parked_polls_per_shard_max;
  // A group member's poll registers on each assigned partition: keep the default ratio.
  broker.waits.registrations_max =
      std::max(options.parked_polls_per_shard_max, options.parked_polls_per_shard_max * 4);
  broker.parked_total_max = options.parked_polls_total_max;
  broker.log.durability = options.durability;
  broker.log.sync_interval = options.sync_interval;
  broker.log.segment_bytes_max = options.segment_bytes;
  broker.log.dedup_window = options.dedup_window_or_default();
  broker.log.retention_age = options.retention_age;
  broker.log.retention_bytes = options.retention_bytes;
  broker.metadata_snapshot_entries = options.metadata_snapshot_entries;
  // A cluster node opens only the partitions its ClusterView assigns to it (docs/cluster.md
  // §Which node opens a partition); ShardServer::set_cluster_view names them.
  broker.hosted_only = !options.etcd_endpoints.empty();
  return broker;
}

}  // namespace hark::server
