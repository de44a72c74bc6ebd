// `cluster`: the wake of `wake` and the throughput of `throughput` in cluster mode
// (docs/cluster.md §Forwarding): a real etcd and two harkd (tests/cluster/local_cluster.h),
// topics of one partition created via node 1 and assigned by the controller to one node (the
// owner). Wake: the producer sends to the owner; the consumer polls either on the owner itself
// (direct) or on the other node, which forwards the poll over its node link and relays the
// answer (forwarded); the two alternate in blocks, so a neighbour's load weighs on both alike;
// the difference is what a forwarding hop costs a wake. With --link-tls a second pair, whose
// links run mutual TLS (cluster.tls_*), takes a third turn in each block: forwarded over TLS.
// Throughput: `throughput`'s cases (message sizes, batches), the producer and the consumer both
// on a topic's owner (direct), then both on the other node (every send and poll forwarded),
// each on its own topic, on the first pair.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hark/bench/suite/scenarios.h"
#include "hark/tests/cluster/local_cluster.h"
#include "hark/tests/support/wait_until.h"

namespace hark::bench {
namespace {

struct Placed {
  TopicIds topic;
  uint32_t owner = 0;
};

// Creates a topic of one partition via node 1 (metadata is shared through etcd, and CreateTopic
// asks for the assignment), waits until both nodes' views hold `assignments` partitions, and
// reads its owner; nullopt on failure.
std::optional<Placed> place_topic(test::LocalCluster& cluster, const std::string& name,
                                  uint64_t assignments) {
  const std::optional<TopicIds> topic = create_topic(cluster.node(1).address(), name, 1);
  if (!topic) return std::nullopt;
  for (uint32_t id = 1; id <= 2; id++) {
    if (!test::wait_for_stats(cluster.node(id), [&](const test::HarkdStats& stats) {
          return stats.view_assignments == assignments && stats.view_nodes == 2;
        })) {
      return std::nullopt;
    }
  }
  const uint32_t owner = cluster.owner_of(topic->stream, topic->topic, 0);
  if (owner == 0) return std::nullopt;
  return Placed{.topic = *topic, .owner = owner};
}

// A started pair of nodes with the wake's partition assigned: the owner's and the other node's
// client addresses.
struct Pair {
  test::LocalCluster cluster;
  Placed placed;
  std::string owner;
  std::string other;
};

bool start_pair(const Options& options, bool link_tls, Pair& pair) {
  test::LocalCluster::Options settings;
  settings.nodes = 2;
  settings.shards_count = options.shards;
  settings.name = "bench";
  settings.extra_args = {"--durability", options.durability};
  settings.link_tls = link_tls;
  if (const std::string failed = pair.cluster.start(settings); !failed.empty()) {
    std::fprintf(stderr, "cluster: %s\n", failed.c_str());
    return false;
  }
  const std::optional<Placed> placed = place_topic(pair.cluster, "cluster", 1);
  if (!placed) {
    std::fprintf(stderr, "cluster: no assignment for the partition\n");
    return false;
  }
  pair.placed = *placed;
  pair.owner = pair.cluster.node(placed->owner).address();
  pair.other = pair.cluster.node(3 - placed->owner).address();
  return true;
}

// Wake samples of one block appended to `samples`; false on a failed measurement.
bool measure_block(const Pair& pair, const std::string& consumer, int count, const Options& options,
                   std::vector<double>& samples) {
  const WakeResult result =
      measure_wake_between(pair.owner, consumer, pair.placed.topic, {}, count, options.gap);
  samples.insert(samples.end(), result.latency_us.begin(), result.latency_us.end());
  return !result.failed;
}

// The forwarded wake over the second pair's links, against the first pair's.
void report_tls(const Options& options, const std::string& notes, double forwarded_p50,
                std::vector<double> samples, Report& report) {
  const bool control = options.link_tls_control;
  const double tls_p50 =
      report
          .add({.name = control ? "wake, consumer on a forwarding node, second pair (plain)"
                                : "wake, consumer on a forwarding node, link TLS",
                .samples_us = std::move(samples),
                .notes = notes + (control ? ", the second pair's links plain (control)"
                                          : ", poll forwarded over a mutual-TLS node link "
                                            "(another pair)")})
          .latency.p50;
  char line[160];
  std::snprintf(line, sizeof line, "%s p50 - plain link p50 = %.1f µs%s",
                control ? "second pair" : "link TLS", tls_p50 - forwarded_p50,
                options.smoke ? "  [smoke]" : "");
  report.note(line);
}

bool measure_wakes(const Options& options, const Pair& plain, const Pair* tls, Report& report) {
  const int count = options.smoke ? 20 : 2000;
  const int blocks = options.smoke ? 1 : 10;
  std::vector<double> direct;
  std::vector<double> forwarded;
  std::vector<double> forwarded_tls;
  bool ok = true;
  for (int block = 0; block < blocks && ok; block++) {
    ok =
        measure_block(plain, plain.owner, count / blocks, options, direct) &&
        measure_block(plain, plain.other, count / blocks, options, forwarded) &&
        (tls == nullptr || measure_block(*tls, tls->other, count / blocks, options, forwarded_tls));
  }
  const std::string notes = "gap " + std::to_string(options.gap.count()) + " µs, 2 nodes, " +
                            std::to_string(options.shards) + " shards each, " + options.durability +
                            ", producer on the owner";
  const double direct_p50 = report
                                .add({.name = "wake, consumer on the owner",
                                      .samples_us = std::move(direct),
                                      .notes = notes})
                                .latency.p50;
  const double forwarded_p50 = report
                                   .add({.name = "wake, consumer on a forwarding node",
                                         .samples_us = std::move(forwarded),
                                         .notes = notes + ", poll forwarded over a node link"})
                                   .latency.p50;
  char line[160];
  std::snprintf(line, sizeof line, "forwarded p50 - direct p50 = %.1f µs (one link hop)%s",
                forwarded_p50 - direct_p50,
                options.smoke ? "  [smoke: too few samples to mean anything]" : "");
  report.note(line);
  if (tls != nullptr) report_tls(options, notes, forwarded_p50, std::move(forwarded_tls), report);
  return ok;
}

// One `throughput` case on a fresh topic, producer and consumer on `via`.
ThroughputResult throughput_via(test::LocalCluster& cluster, const ThroughputCase& c,
                                const Placed& placed, uint32_t via) {
  const std::string address = cluster.node(via).address();
  const pid_t pids[] = {cluster.node(1).pid(), cluster.node(2).pid()};
  return measure_throughput_between(address, address, placed.topic, pids, c.size, c.count, c.batch);
}

bool measure_throughputs(const Options& options, test::LocalCluster& cluster, Report& report) {
  uint64_t assignments = 1;  // The wake's topic.
  bool ok = true;
  for (const ThroughputCase& c : throughput_cases(options)) {
    const std::string name = std::to_string(c.size) + " B x " + std::to_string(c.count) +
                             ", batch " + std::to_string(c.batch);
    const std::optional<Placed> direct_topic = place_topic(cluster, "direct", ++assignments);
    const std::optional<Placed> forwarded_topic = place_topic(cluster, "forwarded", ++assignments);
    if (!direct_topic || !forwarded_topic) return false;
    ThroughputResult direct = throughput_via(cluster, c, *direct_topic, direct_topic->owner);
    ThroughputResult forwarded =
        throughput_via(cluster, c, *forwarded_topic, 3 - forwarded_topic->owner);
    ok = ok && !direct.failed && !forwarded.failed;
    const double ratio = direct.msgs_per_s > 0 ? forwarded.msgs_per_s / direct.msgs_per_s : 0;
    report.add({.name = "throughput " + name + ", on the owner",
                .samples_us = std::move(direct.latency_us),
                .msgs_per_s = direct.msgs_per_s,
                .mb_per_s = direct.mb_per_s,
                .server_cpu_us_per_op = direct.server_cpu_us_per_message,
                .notes = "producer and consumer on the owner; cpu per message, both nodes"});
    report.add({.name = "throughput " + name + ", via a forwarding node",
                .samples_us = std::move(forwarded.latency_us),
                .msgs_per_s = forwarded.msgs_per_s,
                .mb_per_s = forwarded.mb_per_s,
                .server_cpu_us_per_op = forwarded.server_cpu_us_per_message,
                .notes = "producer and consumer on the other node: every send and poll "
                         "forwarded; cpu per message, both nodes"});
    char line[160];
    std::snprintf(line, sizeof line, "%s: forwarded / direct = %.2f x the messages per second%s",
                  name.c_str(), ratio, options.smoke ? "  [smoke]" : "");
    report.note(line);
  }
  return ok;
}

}  // namespace

bool run_cluster(const Options& options, Report& report) {
  Pair plain;
  if (!start_pair(options, false, plain)) return false;
  std::unique_ptr<Pair> tls;
  if (options.link_tls) {
    tls = std::make_unique<Pair>();
    if (!start_pair(options, !options.link_tls_control, *tls)) return false;
  }
  const bool woke = measure_wakes(options, plain, tls.get(), report);
  return measure_throughputs(options, plain.cluster, report) && woke;
}

}  // namespace hark::bench
