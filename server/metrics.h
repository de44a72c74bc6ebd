#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hark/core/broker/stats.h"
#include "hark/server/admission.h"

namespace hark::server {

// What the metrics listener itself counts (server/metrics_server.h), for its own series.
struct MetricsHttpCounts {
  uint64_t scrapes = 0;    // GET /metrics answered.
  uint64_t not_found = 0;  // Other paths (404) and methods (405).
  uint64_t too_large = 0;  // Requests past the header bound (431).
  uint64_t timed_out = 0;  // Closed at metrics.request_timeout.
  uint64_t evicted = 0;    // Closed for a newer scraper while every slot was taken.
};

// A cluster node's own picture (docs/cluster.md): its newest view, its node links' counters
// (LinkShared) and whether it reaches etcd. Absent on one node.
struct ClusterMetrics {
  uint64_t nodes = 0;                // Live nodes in the view.
  uint64_t draining = 0;             // Nodes asked to give up their partitions.
  uint64_t partitions_assigned = 0;  // Assignments naming this node (tombstones too).
  uint64_t moves_planned = 0;        // Moves in progress in the view.
  bool controller = false;           // This node is the view's controller.
  int64_t view_revision = 0;         // The etcd revision the view reflects.
  bool etcd_ok = false;              // The coordination thread's last step reached etcd.
  uint64_t etcd_failures_in_row = 0;
  uint64_t etcd_failures = 0;
  std::vector<std::pair<uint32_t, uint32_t>> links_up;  // (peer node, outbound links up), > 0.
  uint64_t link_handshakes = 0;
  uint64_t link_handshakes_refused = 0;
  uint64_t links_dropped = 0;
  uint64_t link_tls_failures = 0;
  uint64_t forwarded = 0;
  uint64_t forwarded_executed = 0;
  uint64_t forwarded_replayed = 0;
  uint64_t forwarded_forgotten = 0;
  uint64_t forward_unavailable = 0;
};

// Everything one scrape reports: the broker's counters and series (one core::GetStats tour,
// the mechanism the stats line and get_stats use) and what the server and process add.
struct MetricsSnapshot {
  core::BrokerStats stats;
  core::MetricSeries series;
  std::string_view durability;  // storage.durability, the commit histogram's label.
  uint32_t shards = 0;
  uint32_t connections = 0;
  std::vector<uint32_t> shard_connections;  // Open connections per shard, shard 0 first.
  uint64_t migrations = 0;
  uint64_t migrations_refused = 0;
  // ConnectionCounters, in server/admission.h's Refusal order.
  std::array<uint64_t, refusals_count> refusals{};
  uint64_t receive_paused = 0;
  double start_time_seconds = 0;  // Since the epoch.
  uint64_t resident_bytes = 0;
  double cpu_seconds = 0;
  MetricsHttpCounts http;
  std::optional<ClusterMetrics> cluster;  // Cluster mode only.
};

// The label value of the one series that sums what the series caps leave out.
inline constexpr std::string_view overflow_label = "_overflow";

// The Prometheus text exposition format (version 0.0.4) of `snapshot`: every family with its
// HELP and TYPE, label values escaped. Pure: no I/O, so a unit test can check every line.
std::string render_metrics(const MetricsSnapshot& snapshot);

}  // namespace hark::server
