// The text exposition format, written by hand: a few dozen families of counters, gauges and
// histograms need no library (docs/operations.md §Metrics says why not prometheus-cpp).
#include "hark/server/metrics.h"

#include <algorithm>

#include <absl/strings/str_format.h>

#include "hark/core/base/version.h"

namespace hark::server {
namespace {

// Appends families and samples to one string.
class TextWriter {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    absl::StrAppendFormat(&out_, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  }
  // `labels` is already `{...}` text, or empty.
  void sample(std::string_view name, std::string_view labels, uint64_t value) {
    absl::StrAppendFormat(&out_, "%s%s %u\n", name, labels, value);
  }
  void sample(std::string_view name, std::string_view labels, double value) {
    absl::StrAppendFormat(&out_, "%s%s %.17g\n", name, labels, value);
  }
  void one(std::string_view name, std::string_view type, std::string_view help, uint64_t value) {
    family(name, type, help);
    sample(name, "", value);
  }
  void histogram(std::string_view name, std::string_view labels, const LatencyHistogram& values);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// A label value with \, " and newline escaped, as the format requires.
std::string escaped(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// `labels` is the inside of the braces ("a=\"b\"") or empty.
void TextWriter::histogram(std::string_view name, std::string_view labels,
                           const LatencyHistogram& values) {
  const std::string comma = labels.empty() ? "" : std::string(labels) + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < LatencyHistogram::bounds; ++i) {
    cumulative += values.counts[i];
    absl::StrAppendFormat(&out_, "%s_bucket{%sle=\"%g\"} %u\n", name, comma,
                          LatencyHistogram::bound_seconds(i), cumulative);
  }
  cumulative += values.counts[LatencyHistogram::bounds];
  const std::string braces = labels.empty() ? "" : "{" + std::string(labels) + "}";
  absl::StrAppendFormat(&out_, "%s_bucket{%sle=\"+Inf\"} %u\n", name, comma, cumulative);
  absl::StrAppendFormat(&out_, "%s_sum%s %.9f\n", name, braces,
                        static_cast<double>(values.sum_ns) / 1e9);
  absl::StrAppendFormat(&out_, "%s_count%s %u\n", name, braces, cumulative);
}

void write_process(TextWriter& out, const MetricsSnapshot& s) {
  out.family("hark_build_info", "gauge", "harkd's version and protocol; always 1");
  out.sample("hark_build_info",
             absl::StrFormat("{version=\"%s\",protocol=\"iggy 0.8.0\"}", HARK_VERSION_STRING),
             uint64_t{1});
  out.family("process_start_time_seconds", "gauge", "When harkd started, seconds since the epoch");
  out.sample("process_start_time_seconds", "", s.start_time_seconds);
  out.family("process_cpu_seconds_total", "counter", "User and system CPU time harkd used");
  out.sample("process_cpu_seconds_total", "", s.cpu_seconds);
  out.one("process_resident_memory_bytes", "gauge", "Resident set size", s.resident_bytes);
  out.one("hark_shards", "gauge", "Shard threads", s.shards);
}

void write_connections(TextWriter& out, const MetricsSnapshot& s) {
  out.one("hark_connections", "gauge", "Open client connections, all shards", s.connections);
  out.family("hark_shard_connections", "gauge", "Open client connections per shard");
  for (size_t shard = 0; shard < s.shard_connections.size(); ++shard) {
    out.sample("hark_shard_connections", absl::StrFormat("{shard=\"%u\"}", shard),
               uint64_t{s.shard_connections[shard]});
  }
  out.one("hark_connection_migrations_total", "counter",
          "Connections moved to the shard owning their partition", s.migrations);
  out.one("hark_connection_migrations_refused_total", "counter",
          "Migrations that ended in a close instead", s.migrations_refused);
  // server/admission.h's Refusal order.
  static constexpr std::array<std::string_view, refusals_count> reasons = {
      "per_address", "evicted",   "login_timeout", "write_timeout",
      "no_files",    "heartbeat", "tls_failure"};
  out.family("hark_connections_closed_total", "counter",
             "Connections harkd refused or closed, by reason (docs/operations.md Connections)");
  for (size_t i = 0; i < reasons.size(); ++i) {
    out.sample("hark_connections_closed_total", absl::StrFormat("{reason=\"%s\"}", reasons[i]),
               s.refusals[i]);
  }
  out.one("hark_receive_paused_total", "counter", "Receives paused at the read-ahead bound",
          s.receive_paused);
}

void write_waits(TextWriter& out, const core::BrokerStats& s) {
  const core::WaitCounters& w = s.waits;
  out.one("hark_parked_polls", "gauge", "Polls and notifications parked now", w.parked_now);
  out.one("hark_parks_total", "counter", "Polls and notifications that parked", w.parked);
  out.one("hark_ready_at_park_total", "counter", "Parks whose re-check found them ready",
          w.ready_at_park);
  out.one("hark_wakes_total", "counter", "Parked polls and notifications woken by a commit",
          w.woken);
  out.one("hark_poll_timeouts_total", "counter", "Parked polls answered empty at their timeout",
          w.timed_out);
  out.one("hark_polls_cancelled_total", "counter", "Parked polls whose client went away",
          w.cancelled);
  out.one("hark_polls_aborted_total", "counter", "Parked polls aborted (purge, delete, shutdown)",
          w.aborted);
  out.one("hark_polls_rejected_total", "counter", "Polls refused by the parked-poll limits",
          w.rejected_full);
  out.one("hark_polls_reparked_total", "counter", "Woken polls that found nothing and parked again",
          s.reparked);
  out.one("hark_polls_reevaluated_total", "counter",
          "Woken polls the owner could not answer with data at once (evaluated again)",
          s.reevaluated);
  out.one("hark_wait_registrations_swept_total", "counter",
          "Registrations of ended polls handed back by the owner's sweep (zombies)",
          w.zombies_swept);
  out.one("hark_notify_conditions_evaluated_total", "counter", "Notification conditions evaluated",
          w.conditions_evaluated);
  out.one("hark_notify_reports_total", "counter", "Lag changes reported to waiting WaitForLag",
          w.condition_reports);
  out.one("hark_shard_wakeups_total", "counter", "Cross-shard eventfd wakes of sleeping shards",
          s.eventfd_writes);
  out.family("hark_wake_latency_seconds", "histogram",
             "Woken polls: from the commit that woke them to their answer handed to the server");
  out.histogram("hark_wake_latency_seconds", "", w.wake_latency);
}

void write_storage(TextWriter& out, const MetricsSnapshot& snapshot) {
  const core::BrokerStats& s = snapshot.stats;
  out.one("hark_messages_appended_total", "counter", "Messages committed", s.appends.messages);
  out.one("hark_bytes_appended_total", "counter", "Bytes of messages committed, as stored",
          s.appends.bytes);
  out.family("hark_commit_latency_seconds", "histogram",
             "Appends: from their submit to their commit (storage.durability decides when)");
  out.histogram("hark_commit_latency_seconds",
                absl::StrFormat("durability=\"%s\"", snapshot.durability),
                s.appends.commit_latency);
  out.one("hark_streams", "gauge", "Streams", s.streams);
  out.one("hark_topics", "gauge", "Topics", s.topics);
  out.one("hark_partitions", "gauge", "Partitions", s.partitions);
  out.one("hark_consumer_groups", "gauge", "Consumer groups", s.consumer_groups);
  out.one("hark_segments", "gauge", "Segments", s.segments);
  out.one("hark_stored_messages", "gauge", "Messages retained", s.messages_count);
  out.one("hark_stored_bytes", "gauge", "Bytes retained", s.size_bytes);
}

void write_partitions(TextWriter& out, const core::MetricSeries& series) {
  out.family("hark_partition_next_offset", "gauge",
             "Next offset of a partition (the overflow series sums the partitions past "
             "metrics.max_partition_series)");
  for (const core::PartitionSeries& p : series.partitions) {
    out.sample("hark_partition_next_offset",
               absl::StrFormat("{stream=\"%s\",topic=\"%s\",partition=\"%u\"}", escaped(p.stream),
                               escaped(p.topic), p.partition),
               p.next_offset);
  }
  if (series.partitions_dropped > 0) {
    out.sample("hark_partition_next_offset",
               absl::StrFormat("{stream=\"%s\",topic=\"%s\",partition=\"%s\"}", overflow_label,
                               overflow_label, overflow_label),
               series.dropped_next_offset_sum);
  }
  out.one("hark_metrics_partition_series_dropped", "gauge",
          "Partitions past metrics.max_partition_series", series.partitions_dropped);
}

void write_lags(TextWriter& out, const core::MetricSeries& series) {
  out.family("hark_consumer_lag_messages", "gauge",
             "Messages a consumer or group has yet to read on a topic, as WaitForLag counts "
             "them (the overflow series sums those past metrics.max_consumer_series)");
  for (const core::LagSeries& lag : series.lags) {
    const bool group = lag.consumer.kind == core::ConsumerRef::Kind::group;
    out.sample("hark_consumer_lag_messages",
               absl::StrFormat("{stream=\"%s\",topic=\"%s\",%s=\"%s\"}", escaped(lag.stream),
                               escaped(lag.topic), group ? "group" : "consumer",
                               group ? escaped(lag.group) : std::to_string(lag.consumer.id)),
               lag.lag);
  }
  if (series.lags_dropped > 0) {
    out.sample("hark_consumer_lag_messages",
               absl::StrFormat("{stream=\"%s\",topic=\"%s\",consumer=\"%s\"}", overflow_label,
                               overflow_label, overflow_label),
               series.dropped_lag_sum);
  }
  out.one("hark_metrics_consumer_series_dropped", "gauge",
          "Consumers and groups past metrics.max_consumer_series", series.lags_dropped);
}

void write_http(TextWriter& out, const MetricsHttpCounts& http) {
  out.one("hark_metrics_scrapes_total", "counter", "GET /metrics answered", http.scrapes);
  out.family("hark_metrics_requests_refused_total", "counter",
             "Requests to the metrics listener refused or closed, by reason");
  const std::array<std::pair<std::string_view, uint64_t>, 4> reasons = {{
      {"not_found", http.not_found},
      {"too_large", http.too_large},
      {"timed_out", http.timed_out},
      {"evicted", http.evicted},
  }};
  for (const auto& [reason, count] : reasons) {
    out.sample("hark_metrics_requests_refused_total", absl::StrFormat("{reason=\"%s\"}", reason),
               count);
  }
}

void write_cluster_view(TextWriter& out, const ClusterMetrics& c) {
  out.one("hark_cluster_nodes", "gauge", "Live nodes in this node's cluster view", c.nodes);
  out.one("hark_cluster_nodes_draining", "gauge", "Nodes asked to give up their partitions",
          c.draining);
  out.one("hark_cluster_partitions_assigned", "gauge", "Partitions the view assigns to this node",
          c.partitions_assigned);
  out.one("hark_cluster_moves_planned", "gauge", "Partition moves in progress in the view",
          c.moves_planned);
  out.one("hark_cluster_is_controller", "gauge", "1 if this node is the cluster's controller",
          uint64_t{c.controller});
  out.family("hark_cluster_view_revision", "gauge", "The etcd revision this node's view reflects");
  out.sample("hark_cluster_view_revision", "",
             static_cast<uint64_t>(std::max<int64_t>(c.view_revision, 0)));
  out.one("hark_cluster_etcd_up", "gauge", "1 if the coordination thread's last step reached etcd",
          uint64_t{c.etcd_ok});
  out.one("hark_cluster_etcd_consecutive_failures", "gauge",
          "Coordination steps failed since the last that reached etcd", c.etcd_failures_in_row);
  out.one("hark_cluster_etcd_failures_total", "counter", "Coordination steps that failed",
          c.etcd_failures);
}

void write_cluster_links(TextWriter& out, const ClusterMetrics& c) {
  out.family("hark_cluster_links_up", "gauge",
             "Node links from this node's shards to a peer that are up now");
  for (const auto& [peer, up] : c.links_up) {
    out.sample("hark_cluster_links_up", absl::StrFormat("{peer=\"%u\"}", peer), uint64_t{up});
  }
  out.one("hark_cluster_link_handshakes_total", "counter",
          "Node link handshakes that succeeded, both ends", c.link_handshakes);
  out.one("hark_cluster_link_handshakes_refused_total", "counter",
          "Node links refused (wrong secret, frames out of turn, timeouts, too many)",
          c.link_handshakes_refused);
  out.one("hark_cluster_link_tls_failures_total", "counter",
          "Node links closed by a TLS handshake or record failure", c.link_tls_failures);
  out.one("hark_cluster_links_dropped_total", "counter", "Node links closed after their handshake",
          c.links_dropped);
  out.one("hark_cluster_forwarded_total", "counter",
          "Requests this node sent to another node (forwards, group poll legs, figures)",
          c.forwarded);
  out.one("hark_cluster_forwarded_executed_total", "counter",
          "Requests from other nodes this node ran as owner", c.forwarded_executed);
  out.one("hark_cluster_forwarded_replayed_total", "counter",
          "Re-sent writes answered from the table of first answers", c.forwarded_replayed);
  out.one("hark_cluster_forwarded_forgotten_total", "counter",
          "Re-sent writes refused: older than the table of first answers", c.forwarded_forgotten);
  out.one("hark_cluster_forward_unavailable_total", "counter",
          "Requests for a partition with no live owner (11001, or a poll waiting out its deadline)",
          c.forward_unavailable);
}

}  // namespace

std::string render_metrics(const MetricsSnapshot& snapshot) {
  TextWriter out;
  write_process(out, snapshot);
  write_connections(out, snapshot);
  write_waits(out, snapshot.stats);
  write_storage(out, snapshot);
  write_partitions(out, snapshot.series);
  write_lags(out, snapshot.series);
  write_http(out, snapshot.http);
  if (snapshot.cluster) {
    write_cluster_view(out, *snapshot.cluster);
    write_cluster_links(out, *snapshot.cluster);
  }
  return out.take();
}

}  // namespace hark::server
