// `cluster`: the wake of `wake` in cluster mode (docs/cluster.md §Forwarding): a real etcd and
// two harkd (tests/cluster/local_cluster.h), one partition assigned to one of them (the owner).
// The producer sends to the owner; the consumer polls either on the owner itself (direct) or on
// the other node, which forwards the poll over its node link and relays the answer (forwarded).
// The two alternate in blocks, so a neighbour's load weighs on both alike; the difference is
// what a forwarding hop costs a wake. With --link-tls a second pair, whose links run mutual TLS
// (cluster.tls_*), takes a third turn in each block: forwarded over TLS.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hark/bench/suite/scenarios.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_gateway.h"
#include "hark/tests/cluster/local_cluster.h"
#include "hark/tests/support/wait_until.h"

namespace hark::bench {
namespace {

// Creates stream 0 / topic 0 (one partition) through node 1 (metadata lives in etcd, and
// CreateTopic asks for the partition's assignment: docs/cluster.md §Metadata); the owner's id
// once every node's view holds it, 0 on failure.
uint32_t set_up(test::LocalCluster& cluster) {
  if (!create_topic(cluster.node(1).address(), "cluster", 1)) return 0;
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

// A started pair of nodes with its partition assigned: the owner's and the other node's
// client addresses.
struct Pair {
  test::LocalCluster cluster;
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
  const uint32_t owner = set_up(pair.cluster);
  if (owner == 0) {
    std::fprintf(stderr, "cluster: no assignment for the partition\n");
    return false;
  }
  pair.owner = pair.cluster.node(owner).address();
  pair.other = pair.cluster.node(3 - owner).address();
  return true;
}

// Wake samples of each block appended to `samples`; false on a failed measurement.
bool measure_block(const std::string& producer, const std::string& consumer, int count,
                   const Options& options, std::vector<double>& samples) {
  const WakeResult result = measure_wake_between(
      producer, consumer, TopicIds{.stream = 0, .topic = 0}, -1, count, options.gap);
  samples.insert(samples.end(), result.latency_us.begin(), result.latency_us.end());
  return !result.failed;
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
  const int count = options.smoke ? 20 : 2000;
  const int blocks = options.smoke ? 1 : 10;
  std::vector<double> direct;
  std::vector<double> forwarded;
  std::vector<double> forwarded_tls;
  bool ok = true;
  for (int block = 0; block < blocks && ok; block++) {
    ok = measure_block(plain.owner, plain.owner, count / blocks, options, direct) &&
         measure_block(plain.owner, plain.other, count / blocks, options, forwarded) &&
         (tls == nullptr ||
          measure_block(tls->owner, tls->other, count / blocks, options, forwarded_tls));
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
  const char* smoke = options.smoke ? "  [smoke: too few samples to mean anything]" : "";
  char line[160];
  std::snprintf(line, sizeof line, "forwarded p50 - direct p50 = %.1f µs (one link hop)%s",
                forwarded_p50 - direct_p50, smoke);
  report.note(line);
  if (tls != nullptr) {
    const bool control = options.link_tls_control;
    const double tls_p50 =
        report
            .add({.name = control ? "wake, consumer on a forwarding node, second pair (plain)"
                                  : "wake, consumer on a forwarding node, link TLS",
                  .samples_us = std::move(forwarded_tls),
                  .notes = notes + (control ? ", the second pair's links plain (control)"
                                            : ", poll forwarded over a mutual-TLS node link "
                                              "(another pair)")})
            .latency.p50;
    std::snprintf(line, sizeof line, "%s p50 - plain link p50 = %.1f µs%s",
                  control ? "second pair" : "link TLS", tls_p50 - forwarded_p50, smoke);
    report.note(line);
  }
  return ok;
}

}  // namespace hark::bench
