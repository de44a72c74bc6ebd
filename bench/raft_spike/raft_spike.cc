// hark_raft_spike: the replication engine spike of issue 19, in one run. It measures, on this
// machine and in this order: loopback TCP echo; one durable block write (the fsync floor);
// commit latency of 1 KiB entries through canonical/raft 0.15 + raft_uv at replication factor 1
// (a single voter) and 3 (three processes); the CPU of N idle groups per process; and memory
// while one group's log grows, with and without snapshots, then how `load` restarts it. It
// ends with the spike's three criteria. docs/cluster.md §Replication: the engine spike has the
// figures, the commands and the decision. Not built by default (bench/raft_spike/CMakeLists.txt).
//
// Each raft node is a process of its own (fork), with one libuv loop, as harkd nodes would be;
// children report "key value" lines through a pipe (report.h) that the parent prints and keeps.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "baseline.h"
#include "node.h"
#include "report.h"

extern "C" {
#include <uv.h>
}

namespace spike {
namespace {

struct Options {
  std::string dir = "raft-spike-data";
  // The same commits again with every node's log on a tmpfs: the engine and the network
  // without the disk, which the three nodes of this one machine share.
  std::string tmpfs_dir = "/dev/shm/hark-raft-spike";
  int samples = 2000;
  int warmup = 200;
  int idle_seconds = 30;
  std::vector<int> idle_groups = {100, 1000};
  std::vector<int> idle_heartbeats = {100, 1000};  // ms; the election timeout is 10 x
  int grow_mib = 200;
  std::size_t entry_bytes = 1024;     // of the grow phases (the latency phases use 1 KiB)
  unsigned snapshot_every = 1024;     // raft's default threshold
  unsigned snapshot_trailing = 2048;  // raft 0.15's default
  int base_port = 21000;
  unsigned heartbeat_ms = 100;  // raft's default
  unsigned election_ms = 1000;  // raft's default
  std::string phases = "latency,idle,grow";
  int blocks = 5;
  bool keep = false;
};

using Results = std::map<std::string, double>;

// The children of one phase and the pipe they report through.
class Phase {
 public:
  Phase(std::string name, Results& results, bool verbose = true)
      : name_(std::move(name)), results_(results), verbose_(verbose) {
    int fds[2];
    if (pipe(fds) != 0) std::exit(1);
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    if (verbose_) std::printf("-- %s\n", name_.c_str());
    std::fflush(stdout);
  }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
  ~Phase() { close(read_fd_); }

  void spawn(const NodeConfig& config) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      close(read_fd_);
      set_report_fd(write_fd_);
      run_node(config);
    }
    children_.push_back(pid);
  }

  // Reads reports until `done` lines have come (or a child failed, or `timeout_s` passed).
  bool wait_for(int done, int timeout_s) {
    const std::uint64_t deadline =
        now_ns() + static_cast<std::uint64_t>(timeout_s) * 1'000'000'000ULL;
    while (dones_ < done && errors_ == 0 && now_ns() < deadline && !a_child_died()) {
      pollfd p{read_fd_, POLLIN, 0};
      if (poll(&p, 1, 1000) > 0) read_some();
    }
    return dones_ >= done && errors_ == 0;
  }

  // SIGUSR1 to every child still running (they report their memory and exit), then reads the
  // pipe to its end.
  void stop_all() {
    for (pid_t pid : children_) kill(pid, SIGUSR1);
    for (pid_t pid : children_) waitpid(pid, nullptr, 0);
    children_.clear();
    close(write_fd_);
    while (read_some()) {
    }
  }

 private:
  bool a_child_died() {
    for (pid_t pid : children_) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        std::printf("   child %d of %s ended early (status %d)\n", pid, name_.c_str(), status);
        std::erase(children_, pid);
        return true;
      }
    }
    return false;
  }

  bool read_some() {
    char buf[4096];
    const ssize_t n = read(read_fd_, buf, sizeof buf);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<std::size_t>(n));
    for (std::size_t eol; (eol = pending_.find('\n')) != std::string::npos;) {
      take(pending_.substr(0, eol));
      pending_.erase(0, eol + 1);
    }
    return true;
  }

  void take(const std::string& line) {
    const bool shown =
        verbose_ || line.starts_with("error") || line.find("block") != std::string::npos;
    if (shown) std::printf("   %s\n", line.c_str());
    std::fflush(stdout);
    std::istringstream in(line);
    std::string key;
    std::string value;
    in >> key >> value;
    if (key == "done") ++dones_;
    if (key.starts_with("error")) ++errors_;
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    if (end != value.c_str()) results_[key] = number;
  }

  std::string name_;
  Results& results_;
  bool verbose_ = true;
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::vector<pid_t> children_;
  std::string pending_;
  int dones_ = 0;
  int errors_ = 0;
};

void put(Results& results, const std::string& key, double value) {
  results[key] = value;
  std::printf("   %s %.3f\n", key.c_str(), value);
}

NodeConfig base_config(const Options& opt, const std::string& key, int voters, int port) {
  NodeConfig c;
  c.key = key;
  c.voters = voters;
  c.base_port = port;
  c.heartbeat_ms = opt.heartbeat_ms;
  c.election_ms = opt.election_ms;
  c.snapshot_threshold = opt.snapshot_every;
  c.snapshot_trailing = opt.snapshot_trailing;
  c.samples = opt.samples;
  c.warmup = opt.warmup;
  return c;
}

// Node 1 leads: its election timeout is a tenth of the others', so it times out first.
void spawn_cluster(Phase& phase, NodeConfig leader, int voters, const std::string& dir) {
  for (int id = 1; id <= voters; ++id) {
    NodeConfig c = leader;
    c.id = id;
    c.dir = dir + "/n" + std::to_string(id);
    if (id == 1) {
      c.election_ms = std::max(100u, leader.election_ms / 10);
    } else {
      c.role = Role::follower;
    }
    phase.spawn(c);
  }
}

using Pool = std::map<std::string, std::vector<std::uint64_t>>;

void append_file(const std::string& path, std::vector<std::uint64_t>& out) {
  std::ifstream in(path, std::ios::binary);
  for (std::uint64_t v = 0; in.read(reinterpret_cast<char*>(&v), sizeof v);) out.push_back(v);
}

void run_commit(const Options& opt, int voters, bool tmpfs, int block, Pool& pool,
                Results& results) {
  const std::string key = "rf" + std::to_string(voters) + (tmpfs ? "_tmpfs" : "");
  const std::string dir =
      (tmpfs ? opt.tmpfs_dir : opt.dir) + "/" + key + "/b" + std::to_string(block);
  Phase phase(key + ", block " + std::to_string(block), results, false);
  NodeConfig leader = base_config(opt, key, voters, opt.base_port + 10 * voters);
  leader.role = Role::measure_commits;
  leader.samples = opt.samples / opt.blocks;
  leader.samples_path = dir + ".samples";
  spawn_cluster(phase, leader, voters, dir);
  phase.wait_for(1, 300);
  phase.stop_all();
  append_file(leader.samples_path, pool[key]);
}

void add(Pool& pool, const std::string& key, const std::vector<std::uint64_t>& samples) {
  pool[key].insert(pool[key].end(), samples.begin(), samples.end());
}

// Echo, the disk's floor and the four commit shapes, in `blocks` rounds that alternate, so a
// neighbour's load on the shared machine weighs on every figure alike.
void run_latency(const Options& opt, Results& results) {
  std::printf(
      "-- latency: %d blocks of echo (1 KiB and 64 B), disk floor, rf1, rf2, rf3, on disk "
      "and on tmpfs; 1 KiB entries, one in flight\n",
      opt.blocks);
  Pool pool;
  const int n = opt.samples / opt.blocks;
  for (int b = 0; b < opt.blocks; ++b) {
    add(pool, "echo1024", measure_echo(1024, opt.base_port + 5000, n));
    add(pool, "echo64", measure_echo(64, opt.base_port + 5000, n));
    add(pool, "floor_fallocated", measure_block_sync(opt.dir, false, std::min(n, 300)));
    add(pool, "floor_prewritten", measure_block_sync(opt.dir, true, std::min(n, 300)));
    for (bool tmpfs : {false, true}) {
      for (int voters : {1, 2, 3}) run_commit(opt, voters, tmpfs, b, pool, results);
    }
  }
  for (auto& [key, samples] : pool) {
    const std::size_t count = samples.size();
    const Percentiles pc = percentiles(std::move(samples));
    put(results, key + ".p50_us", pc.p50_us);
    put(results, key + ".p99_us", pc.p99_us);
    put(results, key + ".samples", static_cast<double>(count));
  }
}

void run_idle(const Options& opt, int groups, unsigned heartbeat_ms, int port, Results& results) {
  const std::string key = "idle" + std::to_string(groups) + "_hb" + std::to_string(heartbeat_ms);
  Phase phase(key + ": 3 processes x " + std::to_string(groups) + " raft groups, idle, heartbeat " +
                  std::to_string(heartbeat_ms) + " ms",
              results);
  NodeConfig c = base_config(opt, key, 3, port);
  c.heartbeat_ms = heartbeat_ms;
  c.election_ms = 10 * heartbeat_ms;
  c.role = Role::idle;
  c.groups = groups;
  c.idle_seconds = opt.idle_seconds;
  c.segment_bytes = 64 << 10;  // 2 prepared open segments per group: keep the disk use small
  for (int id = 1; id <= 3; ++id) {
    c.id = id;
    c.dir = opt.dir + "/" + key + "/n" + std::to_string(id);
    phase.spawn(c);
  }
  phase.wait_for(3, 300 + opt.idle_seconds);
  phase.stop_all();
  double worst = 0;
  for (int id = 1; id <= 3; ++id) {
    worst = std::max(worst, results[key + ".node" + std::to_string(id) + ".cpu_pct_of_core"]);
  }
  put(results, key + ".worst_node_cpu_pct_of_core", worst);
}

void run_grow(const Options& opt, bool snapshots, int port, Results& results) {
  const std::string key = snapshots ? "grow_snap" : "grow_nosnap";
  Phase phase(
      key + ": rf3, one group grows by " + std::to_string(opt.grow_mib) + " MiB of " +
          std::to_string(opt.entry_bytes) + "-byte entries" +
          (snapshots ? ", snapshot every " + std::to_string(opt.snapshot_every) : ", no snapshots"),
      results);
  NodeConfig leader = base_config(opt, key, 3, port);
  leader.role = Role::grow;
  leader.grow_bytes = static_cast<std::uint64_t>(opt.grow_mib) << 20;
  leader.entry_bytes = opt.entry_bytes;
  if (!snapshots) leader.snapshot_threshold = ~0u;
  const std::string dir = opt.dir + "/" + key;
  spawn_cluster(phase, leader, 3, dir);
  phase.wait_for(1, 900);
  phase.stop_all();
  // Restart node 2 alone from its directory: what raft_uv's load reads back into memory.
  Phase load(key + ": restart node 2 (load)", results);
  NodeConfig again = base_config(opt, key + ".restart", 3, port);
  again.role = Role::load;
  again.id = 2;
  again.dir = dir + "/n2";
  load.spawn(again);
  load.wait_for(1, 600);
  load.stop_all();
}

double get(const Results& results, const std::string& key) {
  const auto it = results.find(key);
  return it == results.end() ? -1 : it->second;
}

void verdict(const char* name, bool measured, bool pass, const std::string& detail) {
  std::printf("criterion %s: %s (%s)\n", name,
              !measured ? "NOT MEASURED"
              : pass    ? "PASS"
                        : "FAIL",
              detail.c_str());
}

std::string fmt(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char line[256];
  std::snprintf(line, sizeof line, format, a, b, c, d);
  return line;
}

void summarize_commits(const Results& r) {
  const double echo = get(r, "echo1024.p50_us");
  for (const std::string suffix : {"", "_tmpfs"}) {
    const double rf1 = get(r, "rf1" + suffix + ".p50_us");
    const double rf3 = get(r, "rf3" + suffix + ".p50_us");
    const double bound = rf1 + 3 * echo;
    verdict(
        suffix.empty() ? "a, every log on this machine's one disk" : "a, every log on tmpfs",
        echo > 0 && rf1 > 0 && rf3 > 0, rf3 <= bound,
        fmt("rf3 p50 %.1f us <= rf1 p50 %.1f + 3 x echo p50 %.1f = %.1f ?", rf3, rf1, echo, bound));
  }
  // One disk per node (a real cluster): the follower's write overlaps the leader's, so rf3
  // costs one write plus what replication adds on top of it, which tmpfs isolates.
  const double added = get(r, "rf3_tmpfs.p50_us") - get(r, "rf1_tmpfs.p50_us");
  verdict("a, modelled for one disk per node", echo > 0 && get(r, "rf3_tmpfs.p50_us") > 0,
          added <= 3 * echo,
          fmt("replication adds %.1f us (rf3 - rf1 on tmpfs) <= 3 x echo %.1f = %.1f ?", added,
              echo, 3 * echo));
}

void summarize(const Options& opt, const Results& r) {
  std::printf("-- summary\n");
  summarize_commits(r);
  for (int heartbeat : opt.idle_heartbeats) {
    const double idle =
        get(r, "idle1000_hb" + std::to_string(heartbeat) + ".worst_node_cpu_pct_of_core");
    verdict("b (1000 idle replicated groups <= 5 % of a core per node)", idle >= 0, idle <= 5.0,
            fmt("worst node %.2f %% of a core, heartbeat %.0f ms", idle, heartbeat));
  }
  const std::string at = "grow_snap.leader_at_";
  const double first = get(r, at + fmt("%04.0fMiB.rss_mib", opt.grow_mib / 10));
  const double last = get(r, at + fmt("%04.0fMiB.rss_mib", opt.grow_mib));
  verdict("c (memory bounded whatever the log's size)", first > 0 && last > 0,
          last - first < 0.1 * (opt.grow_mib - opt.grow_mib / 10),
          fmt("with snapshots the leader's RSS went %.1f -> %.1f MiB from a tenth of the log to "
              "the end; raft holds %.1f MiB of entries, %.1f MiB without snapshots",
              first, last, get(r, "grow_snap.node1.log_mib_in_memory"),
              get(r, "grow_nosnap.node1.log_mib_in_memory")));
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoi(item.c_str()));
  return out;
}

unsigned as_unsigned(const std::string& v) { return static_cast<unsigned>(std::stoul(v)); }

Options parse(int argc, char** argv) {
  Options opt;
  using Setter = std::function<void(const std::string&)>;
  const std::map<std::string, Setter> flags = {
      {"--dir", [&](const std::string& v) { opt.dir = v; }},
      {"--tmpfs-dir", [&](const std::string& v) { opt.tmpfs_dir = v; }},
      {"--phases", [&](const std::string& v) { opt.phases = v; }},
      {"--samples", [&](const std::string& v) { opt.samples = std::stoi(v); }},
      {"--blocks", [&](const std::string& v) { opt.blocks = std::max(1, std::stoi(v)); }},
      {"--idle-seconds", [&](const std::string& v) { opt.idle_seconds = std::stoi(v); }},
      {"--idle-groups", [&](const std::string& v) { opt.idle_groups = parse_list(v); }},
      {"--idle-heartbeats", [&](const std::string& v) { opt.idle_heartbeats = parse_list(v); }},
      {"--grow-mib", [&](const std::string& v) { opt.grow_mib = std::stoi(v); }},
      {"--entry-bytes", [&](const std::string& v) { opt.entry_bytes = std::stoul(v); }},
      {"--snapshot-every", [&](const std::string& v) { opt.snapshot_every = as_unsigned(v); }},
      {"--heartbeat-ms", [&](const std::string& v) { opt.heartbeat_ms = as_unsigned(v); }},
      {"--election-ms", [&](const std::string& v) { opt.election_ms = as_unsigned(v); }},
      {"--base-port", [&](const std::string& v) { opt.base_port = std::stoi(v); }},
      {"--keep", [&](const std::string& v) { opt.keep = v == "1"; }},
  };
  for (int i = 1; i < argc; i += 2) {
    const auto it = flags.find(argv[i]);
    if (it == flags.end() || i + 1 >= argc) {
      std::fprintf(stderr, "usage: hark_raft_spike [FLAG VALUE]..., flags:");
      for (const auto& [flag, setter] : flags) std::fprintf(stderr, " %s", flag.c_str());
      std::fprintf(stderr, "\n(phases: latency,idle,grow; defaults in raft_spike.cc Options)\n");
      std::exit(2);
    }
    it->second(argv[i + 1]);
  }
  return opt;
}

void print_header(const Options& opt) {
  std::ifstream loadavg("/proc/loadavg");
  std::string load;
  std::getline(loadavg, load);
  const std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::printf("hark_raft_spike: %s, loadavg %s, libraft %s, libuv %s\n", when, load.c_str(),
              "0.15 (Debian libraft2)", uv_version_string());
  std::printf(
      "dir %s, samples %d in %d blocks, heartbeat %u ms, election %u ms, snapshot every %u "
      "(trailing %u), "
      "grow %d MiB, idle window %d s\n",
      opt.dir.c_str(), opt.samples, opt.blocks, opt.heartbeat_ms, opt.election_ms,
      opt.snapshot_every, opt.snapshot_trailing, opt.grow_mib, opt.idle_seconds);
}

void run_phases(const Options& opt, Results& results) {
  const auto wanted = [&](const char* name) { return opt.phases.find(name) != std::string::npos; };
  if (wanted("latency")) run_latency(opt, results);
  if (wanted("idle")) {
    for (int heartbeat : opt.idle_heartbeats) {
      for (int groups : opt.idle_groups) {
        run_idle(opt, groups, static_cast<unsigned>(heartbeat), opt.base_port + 100, results);
      }
    }
  }
  if (wanted("grow")) {
    run_grow(opt, true, opt.base_port + 20, results);
    run_grow(opt, false, opt.base_port + 30, results);
  }
}

}  // namespace
}  // namespace spike

int main(int argc, char** argv) {
  using namespace spike;
  Options opt = parse(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  print_header(opt);
  for (const std::string& dir : {opt.dir, opt.tmpfs_dir}) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  opt.dir = std::filesystem::absolute(opt.dir);
  Results results;
  run_phases(opt, results);
  summarize(opt, results);
  if (!opt.keep) {
    std::filesystem::remove_all(opt.dir);
    std::filesystem::remove_all(opt.tmpfs_dir);
  }
  return 0;
}
