#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
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
};

// The label value of the one series that sums what the series caps leave out.
inline constexpr std::string_view overflow_label = "_overflow";

// The Prometheus text exposition format (version 0.0.4) of `snapshot`: every family with its
// HELP and TYPE, label values escaped. Pure: no I/O, so a unit test can check every line.
std::string render_metrics(const MetricsSnapshot& snapshot);

}  // namespace hark::server
