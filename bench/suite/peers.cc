// `peers`: hark next to Redis Streams and NATS JetStream in one run, with the loopback TCP echo
// round trip as the floor. Each peer runs from its Debian package (bench/peers/setup.sh) on its
// own loopback port with fresh temporary state, started and stopped by this scenario. Measured
// the same way for all three (bench/peers/peer_measures.h): `wake` (1 ms gap, in alternating
// blocks so load weighs on all alike), `fanout` (K = 1, 10, 100, 1000, 10 000; NATS to 1000)
// and `throughput` (100 B and 1 KB in batches); --parts picks some of them. The notes give each
// peer's figures as ratios to hark's. With
// --clients processes it measures the wake only, the way SDK clients see it (run_peers_processes).
#include <algorithm>
#include <cstdio>
#include <functional>

#include "hark/bench/peers/peer_measures.h"
#include "hark/bench/peers/peer_process.h"
#include "hark/bench/suite/client_processes.h"
#include "hark/bench/suite/echo.h"
#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/scenarios.h"

namespace hark::bench {
namespace {

// A peer the run measures: its server and its three measurements.
struct Peer {
  std::string system;
  PeerProcess process;
  bool running = false;
  WakeResult (*wake)(const std::string&, pid_t, int, std::chrono::microseconds);
  FanoutResult (*fanout)(const std::string&, pid_t, size_t, int, size_t);
  ThroughputResult (*throughput)(const std::string&, pid_t, size_t, size_t, size_t);
};

// Starts redis-server or nats-server if installed, with `settings` after the bench's own
// arguments. Not installed: a note, and a failure unless in smoke mode (where CI may lack them).
bool start_peer_server(const Options& options, PeerProcess& process, const std::string& program,
                       const std::vector<std::string>& settings, Report& report, bool& ok) {
  const std::string path = PeerProcess::find_program(program);
  if (path.empty()) {
    report.note("skipped: " + program + " not installed (bench/peers/setup.sh installs it)");
    std::printf("skipped: %s not installed\n", program.c_str());
    ok = ok && options.smoke;
    return false;
  }
  const bool started = process.start(program, [&](const std::string& dir, uint16_t port) {
    const std::string p = std::to_string(port);
    std::vector<std::string> args =
        program == "redis-server"
            ? std::vector<std::string>{path,        "--port",       p,      "--bind",
                                       "127.0.0.1", "--save",       "",     "--dir",
                                       dir,         "--daemonize",  "no",   "--protected-mode",
                                       "no",        "--maxclients", "11000"}
            : std::vector<std::string>{path, "-js", "-a", "127.0.0.1", "-p", p, "-sd", dir};
    args.insert(args.end(), settings.begin(), settings.end());
    return args;
  });
  if (!started) {
    report.note(program + " " + (settings.empty() ? "" : settings.back()) + ": did not start");
    ok = false;
  }
  return started;
}

// Redis keeps the stream in memory only, unless `settings` say otherwise.
const std::vector<std::string> redis_in_memory = {"--appendonly", "no"};

bool start_peer(const Options& options, Peer& peer, const std::string& program, Report& report,
                bool& ok) {
  peer.running = start_peer_server(
      options, peer.process, program,
      program == "redis-server" ? redis_in_memory : std::vector<std::string>{}, report, ok);
  return peer.running;
}

void ratio_note(Report& report, const std::string& what, const Row& hark, const Row& other,
                const std::string& system) {
  if (hark.latency.p50 <= 0 || other.latency.count == 0) return;
  char line[200];
  std::snprintf(line, sizeof line, "%-28s %-5s / hark: p50 %.2fx, p99 %.2fx", what.c_str(),
                system.c_str(), other.latency.p50 / hark.latency.p50,
                hark.latency.p99 > 0 ? other.latency.p99 / hark.latency.p99 : 0.0);
  std::string text = line;
  if (hark.server_cpu_us_per_op > 0 && other.server_cpu_us_per_op >= 0) {
    std::snprintf(line, sizeof line, ", server cpu per op %.2fx",
                  other.server_cpu_us_per_op / hark.server_cpu_us_per_op);
    text += line;
  }
  report.note(text);
}

// The wake in alternating blocks: echo, hark, redis, nats.
bool peers_wake(const Options& options, Report& report, const HarkServer& hark,
                Peer* const (&peers)[2]) {
  bool ok = true;
  // wake, in alternating blocks.
  const std::string gap_note = "gap " + std::to_string(options.gap.count()) + " µs";
  const int blocks = options.smoke ? 1 : 5;
  const int per_block = options.smoke ? 20 : 400;
  std::vector<double> echo;
  std::vector<double> hark_wake;
  std::vector<double> peer_wake[2];
  double hark_cpu = 0;
  double peer_cpu[2] = {0, 0};
  for (int block = 0; block < blocks; block++) {
    auto take = [&](std::vector<double>& into, double& cpu, WakeResult run) {
      ok = ok && !run.failed;
      cpu += run.server_cpu_us_per_message / blocks;
      auto kept = without_warmup(std::move(run.latency_us));
      into.insert(into.end(), kept.begin(), kept.end());
    };
    auto floor = without_warmup(measure_echo(per_block, send_frame_size(), options.gap));
    echo.insert(echo.end(), floor.begin(), floor.end());
    take(hark_wake, hark_cpu,
         measure_hark_wake(hark.address(), hark.pid(), per_block, options.gap));
    for (size_t p = 0; p < 2; p++) {
      if (!peers[p]->running) continue;
      take(peer_wake[p], peer_cpu[p],
           peers[p]->wake(peers[p]->process.address(), peers[p]->process.pid(), per_block,
                          options.gap));
    }
  }
  report.add({.system = "echo",
              .name = "loopback TCP round trip",
              .samples_us = std::move(echo),
              .notes = std::to_string(send_frame_size()) + " bytes: the floor; " + gap_note});
  const Row hark_wake_row = report.add({.name = "wake",
                                        .samples_us = std::move(hark_wake),
                                        .server_cpu_us_per_op = hark_cpu,
                                        .notes = gap_note + "; cpu per message"});
  for (size_t p = 0; p < 2; p++) {
    if (!peers[p]->running) continue;
    const Row& row = report.add({.system = peers[p]->system,
                                 .name = "wake",
                                 .samples_us = std::move(peer_wake[p]),
                                 .server_cpu_us_per_op = peer_cpu[p],
                                 .notes = gap_note + "; cpu per message"});
    ratio_note(report, "wake", hark_wake_row, row, peers[p]->system);
  }

  return ok;
}

// Fan-out to K = 1 ... 10 000 consumers, hark then each peer (NATS up to 1000: a durable
// consumer each, created one by one).
bool peers_fanout(const Options& options, Report& report, const HarkServer& hark,
                  Peer* const (&peers)[2]) {
  bool ok = true;
  for (const size_t k : fanout_sizes(options)) {
    const int rounds = options.smoke ? 3 : k >= 1000 ? 10 : k >= 100 ? 50 : 100;
    const size_t threads = fanout_client_threads(options, k);
    const std::string name = "fanout K=" + std::to_string(k);
    auto add = [&](const std::string& system, FanoutResult run) {
      ok = ok && !run.failed;
      report.add({.system = system, .name = name + " first woken", .samples_us = run.first_us});
      return report.add({.system = system,
                         .name = name + " last woken",
                         .samples_us = run.last_us,
                         .server_cpu_us_per_op = run.server_cpu_us_per_woken,
                         .notes = fanout_notes(rounds, run)});
    };
    const Row hark_row =
        add("hark", measure_hark_fanout(hark.address(), hark.pid(), k, rounds, threads));
    for (Peer* peer : peers) {
      if (!peer->running) continue;
      if (peer->system == "nats" && k > 1000) {
        report.note(name + ": nats skipped (10 000 durable consumers take minutes to create)");
        continue;
      }
      const Row& row = add(peer->system, peer->fanout(peer->process.address(), peer->process.pid(),
                                                      k, rounds, threads));
      ratio_note(report, name + " last", hark_row, row, peer->system);
    }
  }

  return ok;
}

// Throughput of 100 B and 1 KB messages, hark then each peer.
bool peers_throughput(const Options& options, Report& report, const HarkServer& hark,
                      Peer* const (&peers)[2]) {
  bool ok = true;
  // throughput.
  struct Case {
    size_t size;
    size_t count;
    size_t batch;
  };
  const Case cases[] = {{100, options.smoke ? 2000u : 200'000u, 1000},
                        {1000, options.smoke ? 1000u : 100'000u, 100}};
  for (const Case& c : cases) {
    const std::string name =
        "throughput " + std::to_string(c.size) + " B, batch " + std::to_string(c.batch);
    auto add = [&](const std::string& system, ThroughputResult run) {
      ok = ok && !run.failed;
      return report.add(
          {.system = system,
           .name = name,
           .samples_us = std::move(run.latency_us),
           .msgs_per_s = run.msgs_per_s,
           .mb_per_s = run.mb_per_s,
           .server_cpu_us_per_op = run.server_cpu_us_per_message,
           .notes = std::to_string(c.count) + " messages; latency per read; cpu per message"});
    };
    const Row hark_row =
        add("hark", measure_hark_throughput(hark.address(), hark.pid(), c.size, c.count, c.batch));
    for (Peer* peer : peers) {
      if (!peer->running) continue;
      const Row& row = add(
          peer->system,
          peer->throughput(peer->process.address(), peer->process.pid(), c.size, c.count, c.batch));
      if (hark_row.msgs_per_s > 0) {
        char line[160];
        std::snprintf(line, sizeof line,
                      "%-28s %-5s / hark: %.2fx the messages per second, server cpu per "
                      "message %.2fx",
                      name.c_str(), peer->system.c_str(), row.msgs_per_s / hark_row.msgs_per_s,
                      hark_row.server_cpu_us_per_op > 0
                          ? row.server_cpu_us_per_op / hark_row.server_cpu_us_per_op
                          : 0.0);
        report.note(line);
      }
    }
  }
  return ok;
}

// Whether --peer-systems names `name`.
bool wanted(const std::vector<std::string>& list, const char* name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// --clients processes: the wake only, with separate producer and consumer processes in each
// placement (client_processes.h), for hark, Redis and NATS as in the threads mode, then the
// durability rows: Redis writing its AOF before it replies (appendfsync no) next to harkd's
// configured durability, and fsyncing it (appendfsync always) next to harkd `always`.
bool run_peers_processes(const Options& options, Report& report) {
  bool ok = true;
  Options always = options;
  always.durability = "always";
  HarkServer hark;
  HarkServer hark_always;
  if (!hark.start(options) || !hark_always.start(always)) return false;
  const std::string hark_variant = "durability " + options.durability;
  std::vector<ProcessTarget> targets = {hark_process_target(hark, hark_variant)};
  PeerProcess redis[3];
  PeerProcess nats;
  const std::vector<std::string> aof_no = {"--appendonly", "yes", "--appendfsync", "no"};
  const std::vector<std::string> aof_always = {"--appendonly", "yes", "--appendfsync", "always"};
  const bool with_redis = wanted(options.peer_systems, "redis");
  if (with_redis &&
      start_peer_server(options, redis[0], "redis-server", redis_in_memory, report, ok)) {
    targets.push_back(redis_process_target(redis[0], "in memory"));
  }
  if (wanted(options.peer_systems, "nats") &&
      start_peer_server(options, nats, "nats-server", {}, report, ok)) {
    targets.push_back(nats_process_target(nats, "JetStream file store"));
  }
  if (with_redis && start_peer_server(options, redis[1], "redis-server", aof_no, report, ok)) {
    targets.push_back(redis_process_target(redis[1], "AOF fsync no"));
  }
  targets.push_back(hark_process_target(hark_always, "durability always"));
  if (with_redis && start_peer_server(options, redis[2], "redis-server", aof_always, report, ok)) {
    targets.push_back(redis_process_target(redis[2], "AOF fsync always"));
  }
  const std::string hark_label = "hark " + hark_variant;
  const TargetRatio ratios[] = {{hark_label, "redis in memory"},
                                {hark_label, "nats JetStream file store"},
                                {hark_label, "redis AOF fsync no"},
                                {"hark durability always", "redis AOF fsync always"}};
  ok = measure_process_wakes(options, targets, ratios, report) && ok;
  for (PeerProcess& process : redis) process.stop();
  nats.stop();
  const bool stopped = hark_always.stop();
  return hark.stop() && stopped && ok;
}

}  // namespace

bool run_peers(const Options& options, Report& report) {
  if (options.client_processes) return run_peers_processes(options, report);
  bool ok = true;
  HarkServer hark;
  if (!hark.start(options, fanout_connections(options))) return false;
  Peer redis{.system = "redis",
             .wake = redis_wake,
             .fanout = redis_fanout,
             .throughput = redis_throughput};
  Peer nats{
      .system = "nats", .wake = nats_wake, .fanout = nats_fanout, .throughput = nats_throughput};
  if (wanted(options.peer_systems, "redis")) start_peer(options, redis, "redis-server", report, ok);
  if (wanted(options.peer_systems, "nats")) start_peer(options, nats, "nats-server", report, ok);
  Peer* const peers[2] = {&redis, &nats};

  if (wanted(options.parts, "wake")) ok = peers_wake(options, report, hark, peers) && ok;
  if (wanted(options.parts, "fanout")) ok = peers_fanout(options, report, hark, peers) && ok;
  if (wanted(options.parts, "throughput")) {
    ok = peers_throughput(options, report, hark, peers) && ok;
  }
  for (Peer* peer : peers) peer->process.stop();
  return hark.stop() && ok;
}

}  // namespace hark::bench
