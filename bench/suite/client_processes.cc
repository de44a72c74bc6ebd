#include "hark/bench/suite/client_processes.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <linux/magic.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "hark/bench/peers/nats.h"
#include "hark/bench/peers/peer_measures.h"
#include "hark/bench/peers/peer_process.h"
#include "hark/bench/suite/children.h"
#include "hark/bench/suite/echo.h"
#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/process_stats.h"
#include "hark/bench/support/latency.h"

namespace hark::bench {
namespace {

// Where the servers and the client processes may run.
struct Placement {
  std::string name;
  cpu_set_t servers;
  cpu_set_t clients;
};

cpu_set_t only(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return set;
}

// The placements named in `names`, from the CPUs hark-bench may use; a note for each it cannot
// make (split needs two CPUs).
std::vector<Placement> make_placements(const std::vector<std::string>& names, Report& report) {
  cpu_set_t all;
  CPU_ZERO(&all);
  (void)::sched_getaffinity(0, sizeof all, &all);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (CPU_ISSET(cpu, &all)) cpus.push_back(cpu);
  }
  std::vector<Placement> out;
  for (const std::string& name : names) {
    if (name == "unpinned") {
      out.push_back({name, all, all});
    } else if (name == "one-cpu" && !cpus.empty()) {
      out.push_back({name, only(cpus[0]), only(cpus[0])});
    } else if (name == "split" && cpus.size() >= 2) {
      out.push_back({name, only(cpus[1]), only(cpus[0])});
    } else {
      report.note("skipped placement " + name + ": unknown, or too few CPUs");
    }
  }
  return out;
}

// A `hark-bench client-role` child: its stdin to write, its stdout to read line by line.
class RoleProcess {
 public:
  RoleProcess() = default;
  ~RoleProcess() {
    close_stdin();
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    (void)wait_exit();  // Reaps it and closes its stdout, also when the fork failed.
  }
  RoleProcess(const RoleProcess&) = delete;
  RoleProcess& operator=(const RoleProcess&) = delete;

  bool spawn(const std::vector<std::string>& args, const cpu_set_t& cpus);
  bool read_line(std::string& line) {
    line.clear();
    for (int c = std::fgetc(out_); c != EOF; c = std::fgetc(out_)) {
      if (c == '\n') return true;
      line += static_cast<char>(c);
    }
    return false;
  }
  bool write_line(const char* line) {
    return ::write(in_, line, std::strlen(line)) == static_cast<ssize_t>(std::strlen(line));
  }
  void close_stdin() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }
  // Reaps the child: true if it exited with status 0.
  bool wait_exit() {
    int status = 0;
    const bool reaped = pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_;
    if (pid_ > 0) unregister_child(pid_);
    pid_ = -1;
    if (out_ != nullptr) std::fclose(out_);
    out_ = nullptr;
    return reaped && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  FILE* out_ = nullptr;
};

bool RoleProcess::spawn(const std::vector<std::string>& args, const cpu_set_t& cpus) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& arg : copy) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int to_child[2];
  int from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) return false;
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return false;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {  // Only async-signal-safe calls until exec.
    prepare_child(parent);
    ::sched_setaffinity(0, sizeof cpus, &cpus);
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  in_ = to_child[1];
  out_ = ::fdopen(from_child[0], "r");
  if (pid < 0 || out_ == nullptr) {
    std::fprintf(stderr, "client-role: fork: %s\n", std::strerror(errno));
    return false;
  }
  pid_ = pid;
  register_child(pid);
  return true;
}

// What one target collected in one placement, over its blocks.
struct Cell {
  std::vector<double> samples_us;
  std::vector<double> ack_us;  // The producer's send → its acknowledgement.
  size_t wakes = 0;
  int64_t server_cpu_ns = 0;
  bool cpu_known = true;
  int64_t server_switches = 0;
  int64_t client_switches = 0;
  uint64_t empty = 0;
};

// Reads "switches N" (the last line) and before it, from a consumer, its samples and "empty N",
// from a producer its "ack µs" lines.
bool read_results(RoleProcess& role, Cell& cell, std::vector<double>* samples,
                  std::vector<double>* acks = nullptr) {
  std::string line;
  while (role.read_line(line)) {
    long long value = 0;
    double ack = 0;
    if (std::sscanf(line.c_str(), "switches %lld", &value) == 1) {
      cell.client_switches += value;
      return true;
    }
    if (std::sscanf(line.c_str(), "ack %lf", &ack) == 1) {
      if (acks != nullptr) acks->push_back(ack);
    } else if (std::sscanf(line.c_str(), "empty %lld", &value) == 1) {
      cell.empty += static_cast<uint64_t>(value);
    } else if (samples != nullptr) {
      samples->push_back(std::strtod(line.c_str(), nullptr));
    }
  }
  return false;
}

std::string self_path() {
  std::error_code error;
  return std::filesystem::read_symlink("/proc/self/exe", error).string();
}

// One block of one target in one placement: two fresh children, `count` wakes.
bool run_block(const ProcessTarget& target, const Placement& placement, int count,
               std::chrono::microseconds gap, Cell& cell) {
  const std::optional<std::vector<std::string>> fresh = target.fresh();
  if (!fresh) return false;
  std::vector<std::string> args = {self_path(), "client-role",
                                   "--system",  target.system,
                                   "--address", target.address,
                                   "--count",   std::to_string(count),
                                   "--gap-us",  std::to_string(gap.count())};
  args.insert(args.end(), fresh->begin(), fresh->end());
  RoleProcess consumer;
  RoleProcess producer;
  std::vector<std::string> consumer_args = args;
  consumer_args.insert(consumer_args.end(), {"--role", "consumer"});
  args.insert(args.end(), {"--role", "producer"});
  std::string line;
  if (!consumer.spawn(consumer_args, placement.clients) || !consumer.read_line(line) ||
      line != "ready" || !producer.spawn(args, placement.clients) || !producer.read_line(line) ||
      line != "ready") {
    std::fprintf(stderr, "%s: client processes did not start\n", target.label().c_str());
    return false;
  }
  const CpuWindow cpu(target.pid);
  const int64_t switches = process_context_switches(target.pid);
  std::vector<double> samples;
  std::vector<double> acks;
  bool ok = producer.write_line("go\n") && read_results(producer, cell, nullptr, &acks) &&
            read_results(consumer, cell, &samples);
  const int64_t cpu_ns = cpu.used_ns();
  const int64_t switches_after = process_context_switches(target.pid);
  producer.close_stdin();
  consumer.close_stdin();
  ok = producer.wait_exit() && consumer.wait_exit() && ok && std::ssize(samples) == count;
  cell.wakes += samples.size();
  cell.cpu_known = cell.cpu_known && cpu_ns >= 0;
  cell.server_cpu_ns += std::max<int64_t>(cpu_ns, 0);
  cell.server_switches += switches >= 0 && switches_after >= 0 ? switches_after - switches : 0;
  samples = without_warmup(std::move(samples));
  acks = without_warmup(std::move(acks));
  cell.ack_us.insert(cell.ack_us.end(), acks.begin(), acks.end());
  cell.samples_us.insert(cell.samples_us.end(), samples.begin(), samples.end());
  if (!ok)
    std::fprintf(stderr, "%s, %s: a block failed\n", target.label().c_str(),
                 placement.name.c_str());
  return ok;
}

// "p50 X µs, p99 Y µs" of `samples` (sorted here).
std::string p50_p99(std::vector<double>& samples) {
  if (samples.empty()) return "?";
  const Percentiles percentiles = summarize(samples);
  char text[64];
  std::snprintf(text, sizeof text, "p50 %.1f µs, p99 %.1f µs", percentiles.p50, percentiles.p99);
  return text;
}

std::string per_wake(int64_t total, size_t wakes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(total) / static_cast<double>(wakes));
  return text;
}

const Row& add_row(Report& report, const ProcessTarget& target, const Placement& placement,
                   Cell& cell, std::chrono::microseconds gap) {
  const size_t wakes = std::max<size_t>(cell.wakes, 1);
  const bool pinned = target.pid > 0;
  const std::string variant = target.variant.empty() ? "" : ", " + target.variant;
  if (target.acknowledgement_row) {
    report.add({.system = target.system,
                .name = "acknowledgement " + placement.name + variant,
                .samples_us = cell.ack_us,
                .notes = "the producer's send -> its acknowledgement, in the wake's blocks"});
  }
  return report.add(
      {.system = target.system,
       .name = "wake " + placement.name + variant,
       .samples_us = std::move(cell.samples_us),
       .server_cpu_us_per_op = pinned && cell.cpu_known ? static_cast<double>(cell.server_cpu_ns) /
                                                              1e3 / static_cast<double>(wakes)
                                                        : -1,
       .notes = "gap " + std::to_string(gap.count()) + " µs; context switches per wake: server " +
                (pinned ? per_wake(cell.server_switches, wakes) : "?") + ", clients " +
                per_wake(cell.client_switches, wakes) + "; " + std::to_string(cell.empty) +
                " empty waits; acknowledgement " + p50_p99(cell.ack_us)});
}

void ratio_notes(Report& report, const std::string& placement,
                 const std::map<std::string, Row>& rows, std::span<const TargetRatio> ratios) {
  for (const TargetRatio& ratio : ratios) {
    const auto of = rows.find(ratio.of);
    const auto to = rows.find(ratio.to);
    if (of == rows.end() || to == rows.end() || to->second.latency.p50 <= 0) continue;
    const Row& a = of->second;
    const Row& b = to->second;
    char line[240];
    std::snprintf(
        line, sizeof line, "%-8s %s / %s: p50 %.2f, p99 %.2f, p99.9 %.2f, server cpu per wake %.2f",
        placement.c_str(), ratio.of.c_str(), ratio.to.c_str(), a.latency.p50 / b.latency.p50,
        a.latency.p99 / b.latency.p99, a.latency.p999 / b.latency.p999,
        b.server_cpu_us_per_op > 0 ? a.server_cpu_us_per_op / b.server_cpu_us_per_op : 0.0);
    report.note(line);
  }
}

// Every server back on all the CPUs hark-bench may use.
void unpin_all(std::span<const ProcessTarget> targets) {
  cpu_set_t all;
  CPU_ZERO(&all);
  (void)::sched_getaffinity(0, sizeof all, &all);
  for (const ProcessTarget& target : targets) {
    if (target.pid > 0) (void)pin_process(target.pid, all);
  }
}

// "DIR on FS", FS named for the file systems whose io_uring writes differ (ext4, XFS) and a
// few others, else as its statfs magic number.
std::string data_file_system() {
  const std::string directory = server_data_parent();
  struct statfs info {};
  if (::statfs(directory.c_str(), &info) != 0) return directory + " (statfs failed)";
  switch (info.f_type) {
    case EXT4_SUPER_MAGIC: return directory + " on ext4";
    case XFS_SUPER_MAGIC: return directory + " on XFS";
    case BTRFS_SUPER_MAGIC: return directory + " on btrfs";
    case TMPFS_MAGIC: return directory + " on tmpfs";
    default: break;
  }
  char magic[32];
  std::snprintf(magic, sizeof magic, " on file system 0x%lx",
                static_cast<unsigned long>(info.f_type));
  return directory + magic;
}

// The machine's load average, which says how much else competed for the CPUs.
std::string load_average() {
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) != 3) return "?";
  char text[48];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return text;
}

}  // namespace

std::string server_data_parent() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

ProcessTarget hark_process_target(const HarkServer& server, std::string variant) {
  const std::string address = server.address();
  return {.system = "hark",
          .variant = std::move(variant),
          .address = address,
          .pid = server.pid(),
          .fresh = [address]() -> std::optional<std::vector<std::string>> {
            const std::optional<TopicIds> topic = create_topic(address, "clients", 1);
            if (!topic) return std::nullopt;
            return std::vector<std::string>{"--stream", std::to_string(topic->stream), "--topic",
                                            std::to_string(topic->topic)};
          }};
}

ProcessTarget redis_process_target(const PeerProcess& server, std::string variant) {
  static std::atomic<int> keys{0};
  return {
      .system = "redis",
      .variant = std::move(variant),
      .address = server.address(),
      .pid = server.pid(),
      .fresh = []() -> std::optional<std::vector<std::string>> {
        return std::vector<std::string>{"--key", "clients-" + std::to_string(keys.fetch_add(1))};
      }};
}

ProcessTarget nats_process_target(const PeerProcess& server, std::string variant) {
  static std::atomic<int> streams{0};
  const std::string address = server.address();
  return {.system = "nats",
          .variant = std::move(variant),
          .address = address,
          .pid = server.pid(),
          .fresh = [address]() -> std::optional<std::vector<std::string>> {
            NatsClient admin;
            const std::string name = "CLIENTS" + std::to_string(streams.fetch_add(1));
            if (!admin.connect(address) || !nats_set_up(admin, name, 1)) return std::nullopt;
            return std::vector<std::string>{"--key", name};
          }};
}

bool measure_process_wakes(const Options& options, std::span<const ProcessTarget> targets,
                           std::span<const TargetRatio> ratios, Report& report,
                           const PlacementHook& before_placement) {
  const std::vector<Placement> placements = make_placements(options.placements, report);
  const std::string load_before = load_average();
  const int blocks = options.smoke ? 1 : 5;
  const int per_block = options.smoke ? 20 : 400;
  std::vector<std::vector<Cell>> cells(placements.size(), std::vector<Cell>(targets.size()));
  bool ok = !placements.empty();
  for (int block = 0; block < blocks && ok && !interrupted(); block++) {
    for (size_t p = 0; p < placements.size() && ok; p++) {
      for (const ProcessTarget& target : targets) {
        if (target.pid > 0) (void)pin_process(target.pid, placements[p].servers);
      }
      if (before_placement) ok = before_placement(placements[p].name, placements[p].servers);
      for (size_t t = 0; t < targets.size() && ok; t++) {
        ok = run_block(targets[t], placements[p], per_block, options.gap, cells[p][t]);
      }
    }
  }
  unpin_all(targets);
  report.note("load average (1, 5, 15 min) before: " + load_before + "; after: " + load_average() +
              " (other processes share these CPUs: compare ratios within the run)");
  report.note("servers' data in " + data_file_system() +
              " (it decides whether harkd's segment writes need a kernel worker: "
              "docs/operations.md §Data directory)");
  for (size_t p = 0; p < placements.size(); p++) {
    std::map<std::string, Row> rows;
    for (size_t t = 0; t < targets.size(); t++) {
      rows[targets[t].label()] =
          add_row(report, targets[t], placements[p], cells[p][t], options.gap);
    }
    ratio_notes(report, placements[p].name, rows, ratios);
  }
  if (options.smoke) report.note("[smoke: too few samples to mean anything]");
  return ok;
}

}  // namespace hark::bench
