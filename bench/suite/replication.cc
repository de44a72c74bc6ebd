// `replication`: issue 19's figures in one run (docs/bench.md §Replication: commit and wake at
// factor 1 and 3). A real etcd and three harkd in cluster mode (tests/cluster/local_cluster.h)
// started with --min-replication-factor 1, so each topic keeps the factor its CreateTopic asks
// for (docs/cluster.md §Replication factor) and factor 1 and factor 3 share one cluster; beside
// them a single harkd. Each of the three (factor 1, factor 3, single node) gets two topics of
// one partition: one for commits, one for wakes, so that no commit's message waits in front of
// a wake's consumer. Clients connect to the partition's leader (no forwarding hop), one
// blocking connection each:
// - commit: the producer idles `gap`, sends one stamped 8-byte message and waits for its
//   acknowledgement (sent once the batch is on every in-sync replica and a majority);
// - wake: `wake`'s measure (measure_wake_between): the consumer parked on the leader, the
//   producer sends; the poll returned − the producer's stamp;
// - echo: the loopback TCP round trip of the send's frame size, the floor of every hop.
// All seven alternate in blocks, so a neighbour's load weighs on all alike. The note under the
// table reads off the spike's criterion (docs/cluster.md §Replication: the engine spike, (a)):
// factor-3 commit p50 ≤ factor-1 commit p50 + 3 × echo p50.
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "hark/bench/suite/children.h"
#include "hark/bench/suite/echo.h"
#include "hark/bench/suite/process_stats.h"
#include "hark/bench/suite/scenarios.h"
#include "hark/tests/cluster/local_cluster.h"
#include "hark/tests/support/wait_until.h"

namespace hark::bench {
namespace {

constexpr uint32_t cluster_nodes = 3;

// One partition measured: where its leader listens, and its replicas as etcd holds them.
struct Target {
  TopicIds topic;
  std::string leader_address;
  uint32_t leader = 0;  // Node id; 0 on the single node.
  std::vector<uint32_t> replicas;
  std::vector<uint32_t> isr;
};

std::string ids_text(const std::vector<uint32_t>& ids) {
  std::string text;
  for (const uint32_t id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
  return text;
}

// What the run measures: the cluster's four partitions and the single node's two.
struct Targets {
  Target commit_f1, wake_f1, commit_f3, wake_f3, commit_single, wake_single;
};

// Reads the partition's assignment from etcd into `target` (leader, replicas, ISR); false if
// there is none.
bool read_assignment(test::LocalCluster& cluster, Target& target) {
  const std::optional<server::cluster::Assignment> assignment =
      cluster.assignment_of(target.topic.stream, target.topic.topic, 0);
  if (!assignment || assignment->leader() == 0) return false;
  target.leader = assignment->leader();
  target.replicas = assignment->replicas;
  target.isr = assignment->isr;
  target.leader_address = cluster.node(target.leader).address();
  return true;
}

// Creates a topic of one partition asking for `factor` via node 1 (start_cluster waited until
// every view holds the three nodes, so a factor 3 is placed on three), then waits until every
// view holds `assignments` partitions. nullopt (with a message) on failure.
std::optional<Target> place(test::LocalCluster& cluster, const std::string& name, uint8_t factor,
                            uint64_t assignments) {
  Target target;
  const std::optional<TopicIds> topic = create_topic(cluster.node(1).address(), name, 1, factor);
  if (!topic) return std::nullopt;
  target.topic = *topic;
  for (uint32_t id = 1; id <= cluster_nodes; id++) {
    if (!test::wait_for_stats(cluster.node(id), [&](const test::HarkdStats& stats) {
          return stats.view_assignments == assignments && stats.view_nodes == cluster_nodes;
        })) {
      std::fprintf(stderr, "replication: node %u never saw topic %s assigned\n", id, name.c_str());
      return std::nullopt;
    }
  }
  if (!read_assignment(cluster, target) || target.replicas.size() != factor) {
    std::fprintf(stderr, "replication: topic %s has %zu replicas, asked for %u\n", name.c_str(),
                 target.replicas.size(), factor);
    return std::nullopt;
  }
  return target;
}

// Waits (bounded) until each partition's ISR holds every replica: its followers fetched and
// their leader reported them caught up, the steady state a commit is measured in. False if one
// never did (the run goes on; the note says so).
bool wait_in_sync(test::LocalCluster& cluster, std::span<Target* const> targets) {
  return test::wait_until(
      [&] {
        bool all = true;
        for (Target* target : targets) {
          all = read_assignment(cluster, *target) &&
                target->isr.size() == target->replicas.size() && all;
        }
        return all;
      },
      test::signal_timeout, std::chrono::milliseconds(50));
}

bool start_cluster(const Options& options, test::LocalCluster& cluster) {
  test::LocalCluster::Options settings;
  settings.nodes = cluster_nodes;
  settings.shards_count = options.shards;
  settings.name = "replication";
  settings.extra_args = {"--durability", options.durability, "--min-replication-factor", "1"};
  if (const std::string failed = cluster.start(settings); !failed.empty()) {
    std::fprintf(stderr, "replication: %s\n", failed.c_str());
    return false;
  }
  if (!cluster.wait_for_all_members()) {
    std::fprintf(stderr, "replication: the nodes never all saw each other\n");
    return false;
  }
  return true;
}

bool place_all(test::LocalCluster& cluster, const HarkServer& single, Targets& targets,
               Report& report) {
  std::optional<Target> placed[4];
  placed[0] = place(cluster, "commit-f1", 1, 1);
  if (placed[0]) placed[1] = place(cluster, "wake-f1", 1, 2);
  if (placed[1]) placed[2] = place(cluster, "commit-f3", 3, 3);
  if (placed[2]) placed[3] = place(cluster, "wake-f3", 3, 4);
  if (!placed[3]) return false;
  targets.commit_f1 = *placed[0];
  targets.wake_f1 = *placed[1];
  targets.commit_f3 = *placed[2];
  targets.wake_f3 = *placed[3];
  Target* const replicated[] = {&targets.commit_f3, &targets.wake_f3};
  if (!wait_in_sync(cluster, replicated)) {
    for (const Target* target : replicated) {
      report.note("factor 3: the ISR of stream " + std::to_string(target->topic.stream) + " was {" +
                  ids_text(target->isr) + "} of replicas {" + ids_text(target->replicas) +
                  "} when the measures began");
    }
  }
  for (Target* target : {&targets.commit_single, &targets.wake_single}) {
    const std::optional<TopicIds> topic = create_topic(single.address(), "single", 1);
    if (!topic) return false;
    target->topic = *topic;
    target->leader_address = single.address();
  }
  return true;
}

// Samples of one measured row over all blocks (warm-up dropped), and the CPU its windows used
// over all the messages they carried (warm-up included).
struct Series {
  std::vector<double> samples;
  int64_t cpu_ns = 0;
  size_t messages = 0;
  bool cpu_known = true;
  void add_block(std::vector<double> block, int64_t block_cpu_ns) {
    cpu_known = cpu_known && block_cpu_ns >= 0;
    cpu_ns += block_cpu_ns;
    messages += block.size();
    block = without_warmup(std::move(block));
    samples.insert(samples.end(), block.begin(), block.end());
  }
  double cpu_us_per_op() const {
    return cpu_known && messages > 0
               ? static_cast<double>(cpu_ns) / 1e3 / static_cast<double>(messages)
               : -1;
  }
};

// `count` round trips on `target`'s partition 0 through one blocking connection to its leader:
// idle `gap`, run `request` (a send, or a stored offset), wait for its answer; each one's time
// in µs appended to `series`, with `pids`' CPU over the block. False on a failure.
template <typename Request>
bool measure_round_trips(const Target& target, std::span<const pid_t> pids, int count,
                         std::chrono::microseconds gap, Series& series, const char* what,
                         Request request) {
  auto client = connect_hark(target.leader_address);
  if (!client.ok()) {
    std::fprintf(stderr, "replication: cannot connect to %s\n", target.leader_address.c_str());
    return false;
  }
  std::vector<double> block;
  const CpuWindow cpu(pids);  // After the login: its password hash is no request's cost.
  for (int i = 0; i < count; i++) {
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
    const auto sent = SteadyClock::now();
    if (const Status status = request(**client); !status.ok()) {
      std::fprintf(stderr, "replication: %s at %s failed: %s\n", what,
                   target.leader_address.c_str(), std::string(error_name(status.error())).c_str());
      return false;
    }
    block.push_back(micros_between(sent, SteadyClock::now()));
  }
  series.add_block(std::move(block), cpu.used_ns());
  return true;
}

bool measure_commits(const Target& target, std::span<const pid_t> pids, int count,
                     std::chrono::microseconds gap, Series& series) {
  return measure_round_trips(
      target, pids, count, gap, series, "send",
      [&](client::Client& producer) { return send_stamped(producer, target.topic, 0); });
}

// A consumer's offset stored on partition 0 (which the commits filled): answered once a
// majority holds it (docs/cluster.md §The data path, Consumer offsets).
bool measure_offset_stores(const Target& target, std::span<const pid_t> pids, int count,
                           std::chrono::microseconds gap, Series& series) {
  uint64_t offset = 0;
  return measure_round_trips(target, pids, count, gap, series, "offset store",
                             [&](client::Client& consumer) {
                               return consumer.store_consumer_offset(
                                   {.consumer = {.kind = protocol::ConsumerKind::consumer,
                                                 .id = protocol::Identifier::numeric(1)},
                                    .stream_id = protocol::Identifier::numeric(target.topic.stream),
                                    .topic_id = protocol::Identifier::numeric(target.topic.topic),
                                    .partition_id = 0,
                                    .offset = offset++ % 2});
                             });
}

// `count` wakes on `target`'s partition 0 (wake.cc's measure, both clients on the leader),
// appended to `series` with `pids`' CPU over the block. False on a failure.
bool measure_wakes(const Target& target, std::span<const pid_t> pids, int count,
                   std::chrono::microseconds gap, Series& series, uint64_t& empty_polls) {
  WakeResult run = measure_wake_between(target.leader_address, target.leader_address, target.topic,
                                        pids, count, gap);
  // The measure's own window starts after its logins; it reports per message received.
  const double messages = static_cast<double>(run.latency_us.size());
  const int64_t cpu_ns = run.server_cpu_us_per_message < 0
                             ? -1
                             : static_cast<int64_t>(run.server_cpu_us_per_message * 1e3 * messages);
  empty_polls += run.empty_polls;
  series.add_block(std::move(run.latency_us), cpu_ns);
  return !run.failed;
}

struct Measured {
  Series echo, commit_f1, commit_f3, commit_single, wake_f1, wake_f3, wake_single, offset_f1,
      offset_f3;
  uint64_t empty_polls = 0;
};

bool measure_blocks(const Options& options, const Targets& targets,
                    std::span<const pid_t> cluster_pids, std::span<const pid_t> single_pid,
                    Measured& m) {
  const int count = options.smoke ? 300 : 5000;
  const int blocks = options.smoke ? 1 : 10;
  const int per_block = count / blocks;
  const std::chrono::microseconds gap = options.gap;
  bool ok = true;
  for (int block = 0; block < blocks && ok && !interrupted(); block++) {
    std::vector<double> echo = measure_echo(per_block, send_frame_size(), gap);
    ok = !echo.empty();
    m.echo.add_block(std::move(echo), -1);
    ok = ok && measure_commits(targets.commit_f1, cluster_pids, per_block, gap, m.commit_f1) &&
         measure_commits(targets.commit_f3, cluster_pids, per_block, gap, m.commit_f3) &&
         measure_commits(targets.commit_single, single_pid, per_block, gap, m.commit_single) &&
         measure_offset_stores(targets.commit_f1, cluster_pids, per_block, gap, m.offset_f1) &&
         measure_offset_stores(targets.commit_f3, cluster_pids, per_block, gap, m.offset_f3) &&
         measure_wakes(targets.wake_f1, cluster_pids, per_block, gap, m.wake_f1, m.empty_polls) &&
         measure_wakes(targets.wake_f3, cluster_pids, per_block, gap, m.wake_f3, m.empty_polls) &&
         measure_wakes(targets.wake_single, single_pid, per_block, gap, m.wake_single,
                       m.empty_polls);
  }
  return ok && !interrupted();
}

std::string placement_text(const Target& target) {
  return "leader node " + std::to_string(target.leader) + ", replicas {" +
         ids_text(target.replicas) + "}, in sync {" + ids_text(target.isr) + "}";
}

void report_rows(const Options& options, const Targets& targets, Measured m, Report& report) {
  const std::string common = "gap " + std::to_string(options.gap.count()) + " µs, " +
                             std::to_string(options.shards) + " shards per harkd, " +
                             options.durability;
  const std::string cluster_cpu = "; cpu per commit, the 3 nodes together";
  const double echo_p50 =
      report
          .add({.system = "echo",
                .name = "loopback TCP round trip",
                .samples_us = std::move(m.echo.samples),
                .notes = std::to_string(send_frame_size()) + "-byte messages, gap " +
                         std::to_string(options.gap.count()) + " µs"})
          .latency.p50;
  const auto add = [&](const std::string& name, Series& series, const std::string& notes) {
    const double cpu = series.cpu_us_per_op();
    return report
        .add({.name = name,
              .samples_us = std::move(series.samples),
              .server_cpu_us_per_op = cpu,
              .notes = notes})
        .latency.p50;
  };
  const double commit_f1 = add("commit, factor 1 (3-node cluster)", m.commit_f1,
                               common + ", " + placement_text(targets.commit_f1) + cluster_cpu);
  const double commit_f3 = add("commit, factor 3 (3-node cluster)", m.commit_f3,
                               common + ", " + placement_text(targets.commit_f3) + cluster_cpu);
  const double commit_single =
      add("commit, single node", m.commit_single, common + "; cpu per commit");
  add("offset store, factor 1 (3-node cluster)", m.offset_f1,
      common + ", " + placement_text(targets.commit_f1) + "; cpu per store, the 3 nodes");
  add("offset store, factor 3 (3-node cluster)", m.offset_f3,
      common + ", " + placement_text(targets.commit_f3) +
          ", answered once a majority holds it; cpu per store, the 3 nodes");
  const std::string wake_notes =
      ", wait 1 s, next + auto-commit; cpu per message (send + wake + poll)";
  const std::string cluster_wake = ", both clients on the leader" + wake_notes + ", 3 nodes";
  const double wake_f1 = add("wake, factor 1 (3-node cluster)", m.wake_f1,
                             common + ", " + placement_text(targets.wake_f1) + cluster_wake);
  const double wake_f3 = add("wake, factor 3 (3-node cluster)", m.wake_f3,
                             common + ", " + placement_text(targets.wake_f3) + cluster_wake);
  const double wake_single = add("wake, single node", m.wake_single, common + wake_notes);
  const char* smoke = options.smoke ? "  [smoke: too few samples to mean anything]" : "";
  char line[240];
  const double bound = commit_f1 + 3 * echo_p50;
  std::snprintf(line, sizeof line,
                "spike criterion (a): factor-3 commit p50 %.1f µs %s factor-1 commit p50 %.1f + "
                "3 x echo p50 %.1f = %.1f µs: %s%s",
                commit_f3, commit_f3 <= bound ? "<=" : ">", commit_f1, echo_p50, bound,
                commit_f3 <= bound ? "met" : "NOT met", smoke);
  report.note(line);
  std::snprintf(line, sizeof line,
                "commit p50: factor 3 - factor 1 = %.1f µs (%.2f x echo p50); factor 1 - single "
                "node = %.1f µs",
                commit_f3 - commit_f1, echo_p50 > 0 ? (commit_f3 - commit_f1) / echo_p50 : 0,
                commit_f1 - commit_single);
  report.note(line);
  std::snprintf(line, sizeof line,
                "wake p50: factor 3 - factor 1 = %.1f µs; factor 1 - single node = %.1f µs; "
                "factor 3 - single node = %.1f µs; %llu empty polls",
                wake_f3 - wake_f1, wake_f1 - wake_single, wake_f3 - wake_single,
                static_cast<unsigned long long>(m.empty_polls));
  report.note(line);
}

}  // namespace

bool run_replication(const Options& options, Report& report) {
  if (!options.address.empty()) {
    std::fprintf(stderr, "replication: starts its own cluster and harkd; --address is not used\n");
  }
  test::LocalCluster cluster;
  if (!start_cluster(options, cluster)) return false;
  Options alone = options;
  alone.address.clear();
  HarkServer single;
  if (!single.start(alone)) return false;
  Targets targets;
  if (!place_all(cluster, single, targets, report)) return false;
  std::vector<pid_t> cluster_pids;
  for (uint32_t id = 1; id <= cluster_nodes; id++) cluster_pids.push_back(cluster.node(id).pid());
  Measured measured;
  const pid_t single_pid[] = {single.pid()};
  const bool ok = measure_blocks(options, targets, cluster_pids, single_pid, measured);
  // The ISR as it stands after the measures: a follower that fell behind during them shows.
  for (Target* target : {&targets.commit_f3, &targets.wake_f3}) read_assignment(cluster, *target);
  report_rows(options, targets, std::move(measured), report);
  return single.stop() && ok;
}

}  // namespace hark::bench
