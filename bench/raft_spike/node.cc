#include "node.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "report.h"

extern "C" {
#include <raft.h>
#include <uv.h>

#include <raft/uv.h>
}

namespace spike {
namespace {

// The partition stand-in: counts what it applies. Its snapshot is 16 bytes (entries, bytes),
// the size a manifest of sealed segments would have, not a copy of the data.
struct Fsm {
  raft_fsm fsm{};
  std::uint64_t applied = 0;
  std::uint64_t bytes = 0;
};

struct Group {
  raft_uv_transport transport{};
  raft_io io{};
  Fsm state;
  raft r{};
  std::string dir;
  std::string address;
};

struct Node;

struct Pending {
  struct raft_apply req {};
  std::uint64_t start = 0;
  Node* node = nullptr;
};

struct Node {
  NodeConfig cfg;
  uv_loop_t loop{};
  std::vector<std::unique_ptr<Group>> groups;
  uv_timer_t poll{};
  uv_timer_t window{};
  uv_signal_t stop{};
  std::vector<Pending> pending;
  std::vector<std::uint64_t> latencies;
  std::uint64_t submitted_bytes = 0;
  std::uint64_t applied_bytes = 0;
  std::uint64_t next_sample_bytes = 0;
  std::uint64_t started_ns = 0;
  std::uint64_t cpu0_ns = 0;
  std::uint64_t t0_ns = 0;
  int completed = 0;
  int window_stage = 0;
  int leaders_at_start = 0;
  std::uint64_t terms_at_start = 0;
};

[[noreturn]] void fail(const Node& node, const std::string& what, const char* why) {
  report_text("error." + node.cfg.key + ".node" + std::to_string(node.cfg.id), what + ": " + why);
  _exit(1);
}

int fsm_apply(raft_fsm* fsm, const raft_buffer* buf, void** result) {
  auto* state = static_cast<Fsm*>(fsm->data);
  ++state->applied;
  state->bytes += buf->len;
  *result = nullptr;
  return 0;
}

int fsm_snapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n_bufs) {
  auto* state = static_cast<Fsm*>(fsm->data);
  auto* buffers = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
  buffers[0].len = 2 * sizeof(std::uint64_t);
  buffers[0].base = raft_malloc(buffers[0].len);
  std::memcpy(buffers[0].base, &state->applied, sizeof(std::uint64_t));
  std::memcpy(static_cast<char*>(buffers[0].base) + 8, &state->bytes, sizeof(std::uint64_t));
  *bufs = buffers;
  *n_bufs = 1;
  return 0;
}

int fsm_restore(raft_fsm* fsm, raft_buffer* buf) {
  auto* state = static_cast<Fsm*>(fsm->data);
  if (buf->len >= 16) {
    std::memcpy(&state->applied, buf->base, sizeof(std::uint64_t));
    std::memcpy(&state->bytes, static_cast<char*>(buf->base) + 8, sizeof(std::uint64_t));
  }
  raft_free(buf->base);  // restore owns the buffer (libraft 0.15)
  return 0;
}

// Entries raft holds in memory (its log cache) and their payload bytes.
std::size_t log_entries(const raft_log& log) {
  return log.back >= log.front ? log.back - log.front : log.size - log.front + log.back;
}

std::uint64_t log_bytes(const raft_log& log) {
  std::uint64_t bytes = 0;
  const std::size_t n = log_entries(log);
  for (std::size_t i = 0; i < n; ++i) bytes += log.entries[(log.front + i) % log.size].buf.len;
  return bytes;
}

void configure_group(Node& node, Group& group) {
  const NodeConfig& cfg = node.cfg;
  group.state.fsm.version = 1;
  group.state.fsm.data = &group.state;
  group.state.fsm.apply = fsm_apply;
  group.state.fsm.snapshot = fsm_snapshot;
  group.state.fsm.restore = fsm_restore;
  if (raft_uv_tcp_init(&group.transport, &node.loop) != 0) fail(node, "raft_uv_tcp_init", "");
  if (raft_uv_init(&group.io, &node.loop, group.dir.c_str(), &group.transport) != 0) {
    fail(node, "raft_uv_init " + group.dir, group.io.errmsg);
  }
  raft_uv_set_segment_size(&group.io, cfg.segment_bytes);
  raft_uv_set_connect_retry_delay(&group.io, 100);
  if (raft_init(&group.r, &group.io, &group.state.fsm, static_cast<raft_id>(cfg.id),
                group.address.c_str()) != 0) {
    fail(node, "raft_init", group.r.errmsg);
  }
  raft_set_election_timeout(&group.r, cfg.election_ms);
  raft_set_heartbeat_timeout(&group.r, cfg.heartbeat_ms);
  raft_set_snapshot_threshold(&group.r, cfg.snapshot_threshold);
  raft_set_snapshot_trailing(&group.r, cfg.snapshot_trailing);
}

void bootstrap_group(Node& node, Group& group, int g) {
  raft_configuration conf;
  raft_configuration_init(&conf);
  for (int v = 1; v <= node.cfg.voters; ++v) {
    raft_configuration_add(&conf, static_cast<raft_id>(v),
                           address_of(v, node.cfg.base_port, g).c_str(), RAFT_VOTER);
  }
  const int rv = raft_bootstrap(&group.r, &conf);
  raft_configuration_close(&conf);
  if (rv != 0 && rv != RAFT_CANTBOOTSTRAP) fail(node, "raft_bootstrap", raft_strerror(rv));
}

Group& add_group(Node& node, int g) {
  auto group = std::make_unique<Group>();
  group->dir = node.cfg.dir + "/g" + std::to_string(g);
  std::filesystem::create_directories(group->dir);
  group->address = address_of(node.cfg.id, node.cfg.base_port, g);
  node.groups.push_back(std::move(group));
  return *node.groups.back();
}

void start_group(Node& node, int g) {
  Group& group = add_group(node, g);
  configure_group(node, group);
  if (node.cfg.role != Role::load) bootstrap_group(node, group, g);
  const int rv = raft_start(&group.r);
  if (rv != 0) fail(node, "raft_start " + group.dir, raft_errmsg(&group.r));
}

std::string node_key(const Node& node) {
  return node.cfg.key + ".node" + std::to_string(node.cfg.id);
}

// What every node reports when the parent stops it: its memory and what raft holds.
void report_memory(const Node& node) {
  const std::string key = node_key(node);
  report(key + ".rss_mib", rss_mib());
  report(key + ".peak_rss_mib", peak_rss_mib());
  if (node.groups.empty()) return;
  const raft& r = node.groups.front()->r;
  report(key + ".applied_entries", static_cast<double>(node.groups.front()->state.applied));
  report(key + ".log_entries_in_memory", static_cast<double>(log_entries(r.log)));
  report(key + ".log_mib_in_memory", static_cast<double>(log_bytes(r.log)) / (1 << 20));
}

void on_stop(uv_signal_t* handle, int /*signum*/) {
  const Node& node = *static_cast<Node*>(handle->data);
  if (node.cfg.role != Role::idle) report_memory(node);
  _exit(0);
}

void on_applied(struct raft_apply* req, int status, void* result);

void submit(Node& node, Pending& p) {
  raft_buffer buf{raft_malloc(node.cfg.entry_bytes), node.cfg.entry_bytes};
  std::memset(buf.base, 'h', buf.len);
  p.node = &node;
  p.req.data = &p;
  p.start = now_ns();
  node.submitted_bytes += buf.len;
  const int rv = raft_apply(&node.groups.front()->r, &p.req, &buf, 1, on_applied);
  if (rv != 0) fail(node, "raft_apply", raft_strerror(rv));
}

void finish_commits(Node& node) {
  std::FILE* out = std::fopen(node.cfg.samples_path.c_str(), "ab");
  if (out == nullptr) fail(node, "open " + node.cfg.samples_path, std::strerror(errno));
  std::fwrite(node.latencies.data(), sizeof(std::uint64_t), node.latencies.size(), out);
  std::fclose(out);
  report(node.cfg.key + ".block_commit_p50_us", percentiles(node.latencies).p50_us);
  report_text("done", node.cfg.key);
}

void sample_growth(Node& node) {
  const raft& r = node.groups.front()->r;
  const int mib = static_cast<int>(node.applied_bytes >> 20);
  char key[96];
  std::snprintf(key, sizeof key, "%s.leader_at_%04dMiB", node.cfg.key.c_str(), mib);
  report(std::string(key) + ".rss_mib", rss_mib());
  report(std::string(key) + ".log_mib_in_memory",
         static_cast<double>(log_bytes(r.log)) / (1 << 20));
  node.next_sample_bytes += node.cfg.grow_bytes / 10;
}

void finish_growth(Node& node) {
  const double seconds = static_cast<double>(now_ns() - node.started_ns) / 1e9;
  report(node.cfg.key + ".grow_seconds", seconds);
  report(node.cfg.key + ".grow_mib_per_s",
         static_cast<double>(node.applied_bytes) / (1 << 20) / seconds);
  report_text("done", node.cfg.key);
}

void on_applied(struct raft_apply* req, int status, void* /*result*/) {
  Pending& p = *static_cast<Pending*>(req->data);
  Node& node = *p.node;
  if (status != 0) fail(node, "apply callback", raft_strerror(status));
  ++node.completed;
  node.applied_bytes += node.cfg.entry_bytes;
  if (node.cfg.role == Role::measure_commits) {
    if (node.completed > node.cfg.warmup) node.latencies.push_back(now_ns() - p.start);
    if (node.completed < node.cfg.warmup + node.cfg.samples) return submit(node, p);
    return finish_commits(node);
  }
  if (node.applied_bytes >= node.next_sample_bytes) sample_growth(node);
  if (node.submitted_bytes < node.cfg.grow_bytes) return submit(node, p);
  if (node.applied_bytes >= node.cfg.grow_bytes) finish_growth(node);
}

void begin_leading(Node& node) {
  const int n = node.cfg.role == Role::grow ? node.cfg.in_flight : 1;
  node.pending.resize(static_cast<std::size_t>(n));
  node.latencies.reserve(static_cast<std::size_t>(node.cfg.samples));
  node.started_ns = now_ns();
  node.next_sample_bytes = node.cfg.grow_bytes / 10;
  report(node.cfg.key + ".leader_after_ms",
         static_cast<double>(node.started_ns - node.t0_ns) / 1e6);
  for (Pending& p : node.pending) submit(node, p);
}

void on_poll_leader(uv_timer_t* timer) {
  Node& node = *static_cast<Node*>(timer->data);
  if (raft_state(&node.groups.front()->r) != RAFT_LEADER) return;
  uv_timer_stop(timer);
  begin_leading(node);
}

// Terms only grow, by one per election: their sum counts the elections of every group.
std::uint64_t sum_terms(const Node& node) {
  std::uint64_t sum = 0;
  for (const auto& g : node.groups) sum += g->r.current_term;
  return sum;
}

int count_state(const Node& node, int state) {
  int n = 0;
  for (const auto& g : node.groups) n += raft_state(&g->r) == state ? 1 : 0;
  return n;
}

void on_window(uv_timer_t* timer) {
  Node& node = *static_cast<Node*>(timer->data);
  const std::string key = node_key(node);
  if (node.window_stage++ == 0) {  // settled: open the measuring window
    node.cpu0_ns = process_cpu_ns();
    node.t0_ns = now_ns();
    node.leaders_at_start = count_state(node, RAFT_LEADER);
    node.terms_at_start = sum_terms(node);
    uv_timer_start(timer, on_window, static_cast<std::uint64_t>(node.cfg.idle_seconds) * 1000, 0);
    return;
  }
  const double wall = static_cast<double>(now_ns() - node.t0_ns);
  const double cpu = static_cast<double>(process_cpu_ns() - node.cpu0_ns);
  report(key + ".cpu_pct_of_core", 100.0 * cpu / wall);
  report(key + ".cpu_us_per_group_per_heartbeat",
         cpu / 1000.0 / node.cfg.groups / (wall / 1e6 / node.cfg.heartbeat_ms));
  report(key + ".leaders_at_start", node.leaders_at_start);
  report(key + ".leaders_at_end", count_state(node, RAFT_LEADER));
  report(key + ".term_increments_in_window",
         static_cast<double>(sum_terms(node) - node.terms_at_start));
  report(key + ".rss_mib", rss_mib());
  report(key + ".kib_per_group", rss_mib() * 1024 / node.cfg.groups);
  report(key + ".open_fds", open_fds());
  report_text("done", key);
}

void on_poll_idle(uv_timer_t* timer) {
  Node& node = *static_cast<Node*>(timer->data);
  int known = 0;
  for (const auto& g : node.groups) {
    raft_id id = 0;
    const char* address = nullptr;
    raft_leader(&g->r, &id, &address);
    known += id != 0 ? 1 : 0;
  }
  const bool timed_out = now_ns() - node.t0_ns > 120'000'000'000ULL;
  if (known < node.cfg.groups && !timed_out) return;
  uv_timer_stop(timer);
  report(node_key(node) + ".groups_with_leader", known);
  report(node_key(node) + ".all_leaders_after_ms",
         static_cast<double>(now_ns() - node.t0_ns) / 1e6);
  uv_timer_start(&node.window, on_window, 3000, 0);  // let elections settle first
}

[[noreturn]] void run_load(Node& node) {
  const double rss0 = rss_mib();
  const std::uint64_t t0 = now_ns();
  start_group(node, 0);  // raft_start runs raft_uv's load synchronously
  const std::string key = node_key(node);
  report(key + ".load_ms", static_cast<double>(now_ns() - t0) / 1e6);
  report(key + ".rss_growth_mib", rss_mib() - rss0);
  report(key + ".last_index", static_cast<double>(raft_last_index(&node.groups.front()->r)));
  report(key + ".snapshot_index",
         static_cast<double>(node.groups.front()->r.log.snapshot.last_index));
  report_memory(node);
  report_text("done", key);
  _exit(0);
}

}  // namespace

std::string address_of(int node, int base_port, int group) {
  return "127.0.0.1" + std::to_string(node) + ":" + std::to_string(base_port + group);
}

void run_node(const NodeConfig& config) {
  auto* node = new Node{.cfg = config};  // lives until the process exits
  uv_loop_init(&node->loop);
  node->t0_ns = now_ns();
  if (config.role == Role::load) run_load(*node);
  for (int g = 0; g < config.groups; ++g) start_group(*node, g);
  uv_signal_init(&node->loop, &node->stop);
  node->stop.data = node;
  uv_signal_start(&node->stop, on_stop, SIGUSR1);
  uv_timer_init(&node->loop, &node->poll);
  uv_timer_init(&node->loop, &node->window);
  node->poll.data = node->window.data = node;
  if (config.role == Role::measure_commits || config.role == Role::grow) {
    uv_timer_start(&node->poll, on_poll_leader, 10, 10);
  } else if (config.role == Role::idle) {
    uv_timer_start(&node->poll, on_poll_idle, 250, 250);
  }
  uv_run(&node->loop, UV_RUN_DEFAULT);
  _exit(0);
}

}  // namespace spike
