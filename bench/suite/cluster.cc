// `cluster`: the wake of `wake` and the throughput of `throughput` in cluster mode
// (docs/cluster.md §Forwarding): a real etcd and two harkd (tests/cluster/local_cluster.h),
// topics of one partition created via node 1 and assigned by the controller to one node (the
// owner). Wake: the producer sends to the owner; the consumer polls either on the owner itself
// (direct) or on the other node, which forwards the poll over its node link and relays the
// answer (forwarded); the two alternate in blocks, so a neighbour's load weighs on both alike;
// the difference is what a forwarding hop costs a wake. Throughput: `throughput`'s cases
// (message sizes, batches), the producer and the consumer both on a topic's owner (direct), then
// both on the other node (every send and poll forwarded), each on its own topic.
#include <cstdio>

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

bool measure_wakes(const Options& options, test::LocalCluster& cluster, const Placed& placed,
                   Report& report) {
  const std::string owner_address = cluster.node(placed.owner).address();
  const std::string other_address = cluster.node(3 - placed.owner).address();
  const int count = options.smoke ? 20 : 2000;
  const int blocks = options.smoke ? 1 : 10;
  std::vector<double> direct;
  std::vector<double> forwarded;
  bool failed = false;
  for (int block = 0; block < blocks && !failed; block++) {
    WakeResult on_owner = measure_wake_between(owner_address, owner_address, placed.topic, -1,
                                               count / blocks, options.gap);
    WakeResult via_other = measure_wake_between(owner_address, other_address, placed.topic, -1,
                                                count / blocks, options.gap);
    failed = on_owner.failed || via_other.failed;
    direct.insert(direct.end(), on_owner.latency_us.begin(), on_owner.latency_us.end());
    forwarded.insert(forwarded.end(), via_other.latency_us.begin(), via_other.latency_us.end());
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
  return !failed;
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
  test::LocalCluster cluster;
  test::LocalCluster::Options settings;
  settings.nodes = 2;
  settings.shards_count = options.shards;
  settings.name = "bench";
  settings.extra_args = {"--durability", options.durability};
  if (const std::string failed = cluster.start(settings); !failed.empty()) {
    std::fprintf(stderr, "cluster: %s\n", failed.c_str());
    return false;
  }
  const std::optional<Placed> placed = place_topic(cluster, "cluster", 1);
  if (!placed) {
    std::fprintf(stderr, "cluster: no assignment for the partition\n");
    return false;
  }
  const bool woke = measure_wakes(options, cluster, *placed, report);
  return measure_throughputs(options, cluster, report) && woke;
}

}  // namespace hark::bench
