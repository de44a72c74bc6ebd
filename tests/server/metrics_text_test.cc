// Covers the text exposition writer (server/metrics.h) and the latency histogram it reads
// (core/base/histogram.h): bucket edges (a value on a bound counts in that bucket, as `le`
// says), cumulative buckets ending in +Inf == _count, _sum in seconds, label values escaped,
// the overflow series only when a cap dropped something, the cluster families only on a cluster
// node, one HELP and TYPE per family, and that docs/grafana-hark.json queries only families
// harkd exports.
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "hark/core/base/histogram.h"
#include "hark/server/metrics.h"

namespace hark::server {
namespace {

using namespace std::chrono_literals;

std::map<std::string, std::string> samples_of(const std::string& text) {
  std::map<std::string, std::string> samples;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    samples[line.substr(0, space)] = line.substr(space + 1);
  }
  return samples;
}

TEST(LatencyHistogram, AValueOnABoundCountsInThatBucket) {
  LatencyHistogram histogram;
  histogram.record(1000ns);  // le 1e-06
  histogram.record(1001ns);  // le 2e-06
  histogram.record(2000ns);  // le 2e-06
  histogram.record(4001ns);  // le 8e-06
  histogram.record(0ns);     // le 1e-06
  histogram.record(3600s);   // +Inf
  EXPECT_EQ(histogram.counts[0], 2u);
  EXPECT_EQ(histogram.counts[1], 2u);
  EXPECT_EQ(histogram.counts[2], 0u);
  EXPECT_EQ(histogram.counts[3], 1u);
  EXPECT_EQ(histogram.counts[LatencyHistogram::bounds], 1u);
  EXPECT_EQ(histogram.count(), 6u);
  EXPECT_DOUBLE_EQ(LatencyHistogram::bound_seconds(23), 8.388608);
}

TEST(MetricsText, HistogramBucketsAreCumulativeAndEndInCount) {
  MetricsSnapshot snapshot;
  snapshot.durability = "always";
  snapshot.stats.appends.commit_latency.record(1500ns);
  snapshot.stats.appends.commit_latency.record(3ms);
  snapshot.stats.appends.commit_latency.record(20s);
  const auto samples = samples_of(render_metrics(snapshot));
  const std::string name = "hark_commit_latency_seconds";
  EXPECT_EQ(samples.at(name + "_bucket{durability=\"always\",le=\"1e-06\"}"), "0");
  EXPECT_EQ(samples.at(name + "_bucket{durability=\"always\",le=\"2e-06\"}"), "1");
  EXPECT_EQ(samples.at(name + "_bucket{durability=\"always\",le=\"0.004096\"}"), "2");
  EXPECT_EQ(samples.at(name + "_bucket{durability=\"always\",le=\"8.38861\"}"), "2");
  EXPECT_EQ(samples.at(name + "_bucket{durability=\"always\",le=\"+Inf\"}"), "3");
  EXPECT_EQ(samples.at(name + "_count{durability=\"always\"}"), "3");
  EXPECT_EQ(samples.at(name + "_sum{durability=\"always\"}"), "20.003001500");
}

TEST(MetricsText, LabelValuesAreEscapedAndOverflowOnlyWhenSomethingWasDropped) {
  MetricsSnapshot snapshot;
  snapshot.series.partitions.push_back(
      {.stream = "a\"b", .topic = "c\\d\ne", .partition = 3, .next_offset = 9});
  snapshot.series.lags.push_back({.stream = "s",
                                  .topic = "t",
                                  .consumer = {.kind = core::ConsumerRef::Kind::group, .id = 1},
                                  .group = "g",
                                  .lag = 4});
  auto samples = samples_of(render_metrics(snapshot));
  EXPECT_EQ(samples.at("hark_partition_next_offset{stream=\"a\\\"b\",topic=\"c\\\\d\\ne\","
                       "partition=\"3\"}"),
            "9");
  EXPECT_EQ(samples.at("hark_consumer_lag_messages{stream=\"s\",topic=\"t\",group=\"g\"}"), "4");
  const std::string overflow = "{stream=\"_overflow\",topic=\"_overflow\",";
  EXPECT_EQ(samples.count("hark_partition_next_offset" + overflow + "partition=\"_overflow\"}"),
            0u);

  snapshot.series.partitions_dropped = 2;
  snapshot.series.dropped_next_offset_sum = 70;
  snapshot.series.lags_dropped = 1;
  snapshot.series.dropped_lag_sum = 5;
  samples = samples_of(render_metrics(snapshot));
  EXPECT_EQ(samples.at("hark_partition_next_offset" + overflow + "partition=\"_overflow\"}"), "70");
  EXPECT_EQ(samples.at("hark_consumer_lag_messages" + overflow + "consumer=\"_overflow\"}"), "5");
  EXPECT_EQ(samples.at("hark_metrics_partition_series_dropped"), "2");
}

// What the stats line (SIGUSR1) counts is exported too: every Refusal as a reason of
// hark_connections_closed_total (tls_failure among them), the polls evaluated again, the swept
// registrations and the connections per shard.
TEST(MetricsText, EveryRefusalAndTheStatsLinesCountersAreExported) {
  MetricsSnapshot snapshot;
  for (size_t i = 0; i < snapshot.refusals.size(); ++i) snapshot.refusals[i] = 10 + i;
  snapshot.stats.reevaluated = 3;
  snapshot.stats.waits.zombies_swept = 4;
  snapshot.shard_connections = {5, 1};
  const auto samples = samples_of(render_metrics(snapshot));
  EXPECT_EQ(samples.at("hark_connections_closed_total{reason=\"per_address\"}"), "10");
  EXPECT_EQ(samples.at("hark_connections_closed_total{reason=\"heartbeat\"}"), "15");
  EXPECT_EQ(samples.at("hark_connections_closed_total{reason=\"tls_failure\"}"), "16");
  EXPECT_EQ(samples.at("hark_polls_reevaluated_total"), "3");
  EXPECT_EQ(samples.at("hark_wait_registrations_swept_total"), "4");
  EXPECT_EQ(samples.at("hark_shard_connections{shard=\"0\"}"), "5");
  EXPECT_EQ(samples.at("hark_shard_connections{shard=\"1\"}"), "1");
}

TEST(MetricsText, ClusterFamiliesOnlyOnAClusterNode) {
  EXPECT_EQ(render_metrics(MetricsSnapshot{}).find("hark_cluster_"), std::string::npos);
  MetricsSnapshot snapshot;
  snapshot.cluster = ClusterMetrics{.nodes = 3,
                                    .draining = 1,
                                    .partitions_assigned = 4,
                                    .moves_planned = 2,
                                    .controller = true,
                                    .view_revision = 42,
                                    .etcd_ok = false,
                                    .etcd_failures_in_row = 5,
                                    .etcd_failures = 7,
                                    .links_up = {{2, 2}, {3, 1}},
                                    .forwarded = 9};
  const auto samples = samples_of(render_metrics(snapshot));
  EXPECT_EQ(samples.at("hark_cluster_nodes"), "3");
  EXPECT_EQ(samples.at("hark_cluster_nodes_draining"), "1");
  EXPECT_EQ(samples.at("hark_cluster_partitions_assigned"), "4");
  EXPECT_EQ(samples.at("hark_cluster_moves_planned"), "2");
  EXPECT_EQ(samples.at("hark_cluster_is_controller"), "1");
  EXPECT_EQ(samples.at("hark_cluster_view_revision"), "42");
  EXPECT_EQ(samples.at("hark_cluster_etcd_up"), "0");
  EXPECT_EQ(samples.at("hark_cluster_etcd_consecutive_failures"), "5");
  EXPECT_EQ(samples.at("hark_cluster_etcd_failures_total"), "7");
  EXPECT_EQ(samples.at("hark_cluster_links_up{peer=\"2\"}"), "2");
  EXPECT_EQ(samples.at("hark_cluster_links_up{peer=\"3\"}"), "1");
  EXPECT_EQ(samples.count("hark_cluster_links_up{peer=\"1\"}"), 0u);
  EXPECT_EQ(samples.at("hark_cluster_forwarded_total"), "9");
}

// Every family: a cluster node's too.
MetricsSnapshot every_family() {
  MetricsSnapshot snapshot;
  snapshot.cluster = ClusterMetrics{};
  return snapshot;
}

TEST(MetricsText, EveryFamilyHasOneHelpAndOneType) {
  const std::string text = render_metrics(every_family());
  std::map<std::string, int> helps;
  std::map<std::string, int> types;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0) helps[line.substr(7, line.find(' ', 7) - 7)]++;
    if (line.rfind("# TYPE ", 0) == 0) types[line.substr(7, line.find(' ', 7) - 7)]++;
  }
  EXPECT_EQ(helps.size(), types.size());
  for (const auto& [family, count] : types) {
    EXPECT_EQ(count, 1) << family;
    EXPECT_EQ(helps[family], 1) << family;
  }
  EXPECT_GE(types.size(), 30u);
}

TEST(MetricsText, TheGrafanaDashboardQueriesOnlyExportedFamilies) {
  std::ifstream file(std::string(HARK_SOURCE_DIR) + "/docs/grafana-hark.json");
  ASSERT_TRUE(file.good());
  const std::string dashboard((std::istreambuf_iterator<char>(file)), {});
  const std::string exported = render_metrics(every_family());
  const std::regex name(R"((hark|process)_[a-z_]+)");
  std::set<std::string> queried;
  for (auto it = std::sregex_iterator(dashboard.begin(), dashboard.end(), name);
       it != std::sregex_iterator(); ++it) {
    std::string family = it->str();
    if (family.ends_with("_bucket")) family.resize(family.size() - 7);
    queried.insert(family);
  }
  EXPECT_GE(queried.size(), 15u);
  for (const std::string& family : queried) {
    if (family == "hark_harkd") continue;  // The dashboard's uid.
    EXPECT_NE(exported.find("# TYPE " + family + " "), std::string::npos) << family;
  }
}

}  // namespace
}  // namespace hark::server
