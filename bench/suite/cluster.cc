// `cluster`: the wake of `wake` in cluster mode (docs/cluster.md §Forwarding): a real etcd and
// two harkd (tests/cluster/local_cluster.h), one partition assigned to one of them (the owner).
// The producer sends to the owner; the consumer polls either on the owner itself (direct) or on
// the other node, which forwards the poll over its node link and relays the answer (forwarded).
// The two alternate in blocks, so a neighbour's load weighs on both alike; the difference is
// what a forwarding hop costs a wake.
#include <cstdio>

#include "hark/bench/suite/scenarios.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_gateway.h"
#include "hark/tests/cluster/local_cluster.h"
#include "hark/tests/support/wait_until.h"

namespace hark::bench {
namespace {

// Creates stream 0 / topic 0 (one partition) on both nodes and asks for its assignment; the
// owner's id once every node's view holds it, 0 on failure.
uint32_t set_up(test::LocalCluster& cluster) {
  for (uint32_t id = 1; id <= 2; id++) {
    if (!create_topic(cluster.node(id).address(), "cluster", 1)) return 0;
  }
  if (!cluster.etcd().etcdctl("put /hark/bench/partitions/0/0/0 ''", true).empty()) return 0;
  for (uint32_t id = 1; id <= 2; id++) {
    if (!test::wait_for_stats(cluster.node(id), [](const test::HarkdStats& stats) {
          return stats.view_assignments == 1 && stats.view_nodes == 2;
        })) {
      return 0;
    }
  }
  auto etcd = server::cluster::EtcdGateway::create({.endpoints = {cluster.etcd().url()},
                                                    .user = test::EtcdProcess::user,
                                                    .password = test::EtcdProcess::password});
  if (!etcd.ok()) return 0;
  const auto range = (*etcd)->range("/hark/bench/assignments/0/0/0", false);
  if (!range.ok() || range->kvs.empty()) return 0;
  const auto assignment = server::cluster::decode_assignment(range->kvs[0].value);
  return assignment ? assignment->node : 0;
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
  const uint32_t owner = set_up(cluster);
  if (owner == 0) {
    std::fprintf(stderr, "cluster: no assignment for the partition\n");
    return false;
  }
  const std::string owner_address = cluster.node(owner).address();
  const std::string other_address = cluster.node(3 - owner).address();
  const TopicIds topic{.stream = 0, .topic = 0};
  const int count = options.smoke ? 20 : 2000;
  const int blocks = options.smoke ? 1 : 10;
  std::vector<double> direct;
  std::vector<double> forwarded;
  bool failed = false;
  for (int block = 0; block < blocks && !failed; block++) {
    WakeResult on_owner =
        measure_wake_between(owner_address, owner_address, topic, -1, count / blocks, options.gap);
    WakeResult via_other =
        measure_wake_between(owner_address, other_address, topic, -1, count / blocks, options.gap);
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

}  // namespace hark::bench
