// hark-bench: named scenarios against a harkd it spawns (or --address), each printing a table
// and writing SCENARIO.json; `all` runs every one; `plot` draws PNGs from the JSON. docs/bench.md.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "hark/bench/suite/children.h"
#include "hark/bench/suite/client_role.h"
#include "hark/bench/suite/net.h"
#include "hark/bench/suite/plot.h"
#include "hark/bench/suite/scenarios.h"

namespace hark::bench {
namespace {

struct Scenario {
  const char* name;
  bool (*run)(const Options&, Report&);
  const char* what;
};

constexpr Scenario scenarios[] = {
    {"wake", run_wake, "one producer, one parked consumer, 1 ms gap; with echo and ping"},
    {"fanout", run_fanout, "K = 1 ... 10000 polls parked on one partition, one send"},
    {"group", run_group, "K members of a consumer group parked on their partitions"},
    {"idle", run_idle, "N = 1000, 10000 parked polls vs busy polling every 1 and 10 ms"},
    {"timeout", run_timeout, "overshoot of 1, 10 and 100 ms waits"},
    {"throughput", run_throughput, "send + long-poll consume, 100 B and 1 KB messages"},
    {"peers", run_peers, "wake, fanout, throughput against Redis Streams and NATS JetStream"},
    {"classic", run_classic, "an SDK's poll loop (no wait field) with and without a default wait"},
    {"notify", run_notify, "notifications in process: commit cost per watcher, wake latencies"},
    {"cluster", run_cluster,
     "wake and throughput through a forwarding node vs on the owner (etcd, 2 harkd)"},
    {"replication", run_replication,
     "commit and wake at factor 1 and 3 (etcd, 3 harkd) vs a single harkd, with echo"},
    {"durable", run_durable,
     "always vs the disk's own floor and vs write, client processes, alternating blocks"},
};

void usage(FILE* out) {
  std::fprintf(
      out,
      "usage: hark-bench SCENARIO|all [--smoke] [--json-dir DIR] [--harkd PATH]\n"
      "                  [--address IPV4:PORT] [--shards N] [--gap-us N]\n"
      "                  [--durability write|interval|always|memory]\n"
      "                  [--clients threads|processes] [--placements LIST] [--tls] [--link-tls]\n"
      "                  [--link-tls-control]\n"
      "                  [--consumers K,...] [--client-threads N] [--parts LIST]\n"
      "                  [--peer-systems redis,nats]\n"
      "       hark-bench plot --json-dir DIR [--out DIR]\n"
      "Loopback only. Spawns its own harkd (default: the one next to hark-bench) on a\n"
      "free port with a temporary data directory, or measures --address (then without\n"
      "server CPU or RSS figures). --shards: the spawned harkd's (default 2); --gap-us:\n"
      "the idle time before each message in wake and peers (default 1000);\n"
      "--durability: the spawned harkd's (default write, harkd's default).\n"
      "notify runs a core::Broker in process instead of a harkd (--shards,\n"
      "--durability and --gap-us apply to it; --address does not).\n"
      "--clients processes: wake and peers with producer and consumer in two processes\n"
      "of blocking sockets, in each of --placements unpinned,one-cpu,split (default all\n"
      "three).\n"
      "--consumers: fanout's and peers' K (default 1,10,100,1000,10000);\n"
      "--client-threads: threads reading them (default by K: 1 up to 100, then 2-4);\n"
      "--parts: which of peers' wake,fanout,throughput run (default all);\n"
      "--peer-systems: which peers run next to hark (default redis,nats).\n"
      "--tls: wake and throughput against the spawned harkd with TLS on (a certificate\n"
      "made for the run with the openssl command).\n"
      "--link-tls: cluster also measures a second pair of nodes whose links run mutual\n"
      "TLS (certificates made for the run), alternating with the plain pair;\n"
      "--link-tls-control: the same with the second pair plain too (a control).\n"
      "Peers need bench/peers/setup.sh. plot exits 77 if gnuplot is missing.\n"
      "scenarios:\n");
  for (const Scenario& s : scenarios) std::fprintf(out, "  %-11s %s\n", s.name, s.what);
}

std::string default_harkd() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "harkd" : (self.parent_path() / "harkd").string();
}

// Parked polls need one descriptor each, on both sides: take the hard limit.
void raise_open_files() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

bool run_one(const Scenario& scenario, const Options& options) {
  Report report(scenario.name);
  const auto start = SteadyClock::now();
  const bool ok = scenario.run(options, report);
  report.print();
  std::printf("%s: %s in %.1f s\n", scenario.name, ok ? "done" : "FAILED",
              std::chrono::duration<double>(SteadyClock::now() - start).count());
  if (!options.json_dir.empty() && !report.write_json(options.json_dir)) return false;
  return ok;
}

// Reads the flags after the command; false (after the usage) on a bad one.
bool parse_flags(int argc, char** argv, Options& options, std::string& out_dir) {
  for (int i = 2; i < argc; i++) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--smoke") {
      options.smoke = true;
    } else if (arg == "--json-dir" && has_value) {
      options.json_dir = argv[++i];
    } else if (arg == "--out" && has_value) {
      out_dir = argv[++i];
    } else if (arg == "--harkd" && has_value) {
      options.harkd_path = argv[++i];
    } else if (arg == "--address" && has_value) {
      options.address = argv[++i];
      if (options.address.rfind("127.", 0) != 0) {
        std::fprintf(stderr, "hark-bench measures loopback only: --address 127.x.x.x:PORT\n");
        return false;
      }
    } else if (arg == "--gap-us" && has_value) {
      options.gap = std::chrono::microseconds(std::max(0, std::atoi(argv[++i])));
    } else if (arg == "--durability" && has_value) {
      options.durability = argv[++i];
    } else if (arg == "--clients" && has_value) {
      const std::string mode = argv[++i];
      if (mode != "threads" && mode != "processes") {
        std::fprintf(stderr, "hark-bench: --clients threads|processes\n");
        return false;
      }
      options.client_processes = mode == "processes";
    } else if (arg == "--placements" && has_value) {
      options.placements.clear();
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');) options.placements.push_back(name);
    } else if (arg == "--consumers" && has_value) {
      std::stringstream list(argv[++i]);
      for (std::string k; std::getline(list, k, ',');) {
        options.consumers.push_back(static_cast<size_t>(std::max(1, std::atoi(k.c_str()))));
      }
    } else if (arg == "--client-threads" && has_value) {
      options.client_threads = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    } else if (arg == "--parts" && has_value) {
      options.parts.clear();
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');) options.parts.push_back(name);
    } else if (arg == "--peer-systems" && has_value) {
      options.peer_systems.clear();
      std::stringstream list(argv[++i]);
      for (std::string name; std::getline(list, name, ',');) options.peer_systems.push_back(name);
    } else if (arg == "--tls") {
      options.tls = true;
    } else if (arg == "--link-tls") {
      options.link_tls = true;
    } else if (arg == "--link-tls-control") {
      options.link_tls = true;
      options.link_tls_control = true;
    } else if (arg == "--shards" && has_value) {
      options.shards = static_cast<uint32_t>(std::max(1, std::atoi(argv[++i])));
    } else {
      std::fprintf(stderr, "hark-bench: unknown or incomplete argument '%s'\n", arg.c_str());
      usage(stderr);
      return false;
    }
  }
  return true;
}

// Runs every scenario, then the plots; the exit status.
int run_all(const Options& options, const std::string& out_dir) {
  std::vector<std::string> failed;
  for (const Scenario& scenario : scenarios) {
    if (!run_one(scenario, options)) failed.push_back(scenario.name);
    if (interrupted()) break;
  }
  if (interrupted()) {
    std::fprintf(stderr, "hark-bench: interrupted; its servers were stopped\n");
    return 130;
  }
  if (!options.json_dir.empty()) {
    if (!gnuplot_installed()) {
      std::printf("plot: skipped: gnuplot not installed (bench/peers/setup.sh)\n");
    } else if (!plot(options.json_dir, out_dir.empty() ? options.json_dir : out_dir)) {
      failed.push_back("plot");
    }
  }
  for (const std::string& name : failed) std::fprintf(stderr, "FAILED: %s\n", name.c_str());
  return failed.empty() ? 0 : 1;
}

}  // namespace
}  // namespace hark::bench

int main(int argc, char** argv) {
  using namespace hark::bench;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  if (command == "client-role") return run_client_role(argc, argv);  // A child of `--clients`.
  Options options;
  options.harkd_path = default_harkd();
  std::string out_dir;
  if (!parse_flags(argc, argv, options, out_dir)) return 2;
  // The other scenarios drive raw sockets (Fleet, client processes): plain TCP only.
  if (options.tls && ((command != "wake" && command != "throughput") || options.client_processes ||
                      !options.address.empty())) {
    std::fprintf(stderr,
                 "hark-bench: --tls runs wake (threads) and throughput on a spawned harkd\n");
    return 2;
  }
  if (!options.json_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.json_dir, error);
  }
  if (command == "plot") {
    if (options.json_dir.empty()) {
      std::fprintf(stderr, "hark-bench plot needs --json-dir\n");
      return 2;
    }
    if (!gnuplot_installed()) {
      std::fprintf(stderr,
                   "hark-bench plot: skipped: gnuplot not installed (bench/peers/setup.sh)\n");
      return 77;
    }
    return plot(options.json_dir, out_dir.empty() ? options.json_dir : out_dir) ? 0 : 1;
  }
  raise_open_files();
  install_child_cleanup();
  if (command == "all") return run_all(options, out_dir);
  for (const Scenario& scenario : scenarios) {
    if (command != scenario.name) continue;
    const bool ok = run_one(scenario, options);
    if (interrupted()) {
      std::fprintf(stderr, "hark-bench: interrupted; its servers were stopped\n");
      return 130;
    }
    return ok ? 0 : 1;
  }
  std::fprintf(stderr, "hark-bench: unknown scenario '%s'\n", command.c_str());
  usage(stderr);
  return 2;
}
