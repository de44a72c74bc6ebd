// harkd: hark's thin server. Loads its configuration (config.h), takes its data directory and
// port (instance_lock.h), shares the open-file limit between connections and partitions,
// opens one SO_REUSEPORT listener per shard (all on one port), starts the broker with the
// server's ShardHooks and, when metrics.address is set, the /metrics listener
// (metrics_server.h), prints the ready line (`harkd metrics on HOST:PORT` follows it in the same
// write) and waits for signals: SIGUSR1 (and, if log.stats_interval is set, every interval)
// logs one line of wait-path counters; SIGTERM or SIGINT stops the broker (parked polls are
// answered empty first) and exits 0. Exit codes: 0 after a stop signal, --help or
// --print-config; 1 when it cannot start (another harkd holds the data directory or the port,
// the metrics address cannot be bound, the partitions on disk leave no connection); 2 for a bad
// configuration (flags, environment, file, or a limit the process cannot honour), or the
// default root password on a non-loopback address without --allow-default-root-password.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <span>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/clock.h"
#include "hark/core/base/log.h"
#include "hark/core/broker/blocking.h"
#include "hark/core/broker/broker.h"
#include "hark/io/socket.h"
#include "hark/server/cluster/cluster_user_backend.h"
#include "hark/server/cluster/coordination_thread.h"
#include "hark/server/cluster/etcd_gateway.h"
#include "hark/server/cluster/etcd_journal.h"
#include "hark/server/config.h"
#include "hark/server/instance_lock.h"
#include "hark/server/metrics.h"
#include "hark/server/metrics_server.h"
#include "hark/server/options.h"
#include "hark/server/process_stats.h"
#include "hark/server/server.h"
#include "hark/server/tls.h"
#include "hark/server/users/journal_user_backend.h"
#include "hark/server/users/user_store.h"
#include "hark/storage/disk.h"

namespace hark::server {
namespace {

// Files harkd keeps open besides its connections and partitions: per shard its ring, eventfd,
// listener and spare descriptor, plus the metadata and users logs, the locks, the log, and
// whatever the libraries open. limits.files_reserve, or by default a generous guess
// (docs/operations.md §Open files says why it is a setting).
uint64_t files_reserve(const ServerOptions& options) {
  if (options.files_reserve != 0) return options.files_reserve;
  return 256 + 16ull * options.shards_count;
}

// How the open-file limit is shared: files_reserve(), then one file per connection, then
// core::files_per_partition per partition.
struct FileBudget {
  uint64_t limit = 0;             // RLIMIT_NOFILE, after raising the soft limit to the hard.
  uint32_t connections_max = 0;   // limits.connections_max, or less if the partitions need it.
  uint32_t partitions_max = 0;    // Creates past this are refused (2015).
  uint64_t partitions_found = 0;  // In the data directory at start.
};

// Partition directories under <data>/streams/*/topics/*/partitions/ (those the catalog does not
// list are removed at start, so this may count a few too many: it errs on the safe side).
uint64_t count_partitions(const std::string& data_directory) {
  namespace fs = std::filesystem;
  uint64_t count = 0;
  std::error_code error;
  const auto each_directory = [&error](const fs::path& path, auto&& visit) {
    for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
      if (it->is_directory(error)) visit(it->path());
    }
  };
  each_directory(fs::path(data_directory) / "streams", [&](const fs::path& stream) {
    each_directory(stream / "topics", [&](const fs::path& topic) {
      each_directory(topic / "partitions", [&](const fs::path&) { count++; });
    });
  });
  return count;
}

// RLIMIT_NOFILE with the soft limit raised to the hard one (every file harkd may open is
// budgeted below, so there is no reason to stop short of what the system allows).
uint64_t raise_open_files_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return RLIM_INFINITY;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);
    (void)getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

// Shares the open-file limit between connections and partitions. Exit code 2 when
// connections_max alone cannot fit (a setting harkd cannot honour), 1 when the partitions
// already in the data directory leave no connection at all; 0 otherwise. Messages on stderr.
int plan_open_files(const ServerOptions& options, FileBudget& budget) {
  budget.limit = std::min<uint64_t>(raise_open_files_limit(), UINT32_MAX);
  budget.partitions_found = count_partitions(options.data_directory);
  const uint64_t reserve = files_reserve(options);
  const uint64_t available = budget.limit > reserve ? budget.limit - reserve : 0;
  if (options.connections_max > available) {
    HARK_LOG_ERROR(
        "limits.connections_max %u needs about %llu open files (%llu for other "
        "files), but RLIMIT_NOFILE is %llu: lower limits.connections_max to %llu or less, "
        "or raise the limit (ulimit -n)",
        options.connections_max, static_cast<unsigned long long>(options.connections_max + reserve),
        static_cast<unsigned long long>(reserve), static_cast<unsigned long long>(budget.limit),
        static_cast<unsigned long long>(available));
    return 2;
  }
  const uint64_t for_found = budget.partitions_found * core::files_per_partition;
  if (for_found >= available) {
    HARK_LOG_ERROR(
        "the %llu partitions in %s need about %llu open files, more than "
        "RLIMIT_NOFILE %llu leaves (%llu): raise the limit (ulimit -n)",
        static_cast<unsigned long long>(budget.partitions_found), options.data_directory.c_str(),
        static_cast<unsigned long long>(for_found), static_cast<unsigned long long>(budget.limit),
        static_cast<unsigned long long>(available));
    return 1;
  }
  budget.connections_max =
      static_cast<uint32_t>(std::min<uint64_t>(options.connections_max, available - for_found));
  budget.partitions_max = static_cast<uint32_t>(std::max(
      (available - options.connections_max) / core::files_per_partition, budget.partitions_found));
  return 0;
}

// The start's log line about the budget, and a warning when the partitions crowd out
// connections (the limit was lowered since they were created).
void log_open_files(const ServerOptions& options, const FileBudget& budget) {
  HARK_LOG_INFO(
      "open files: RLIMIT_NOFILE %u holds %u connections and %u partitions (%u files each; %u "
      "in the data directory) besides %u for harkd itself",
      budget.limit, budget.connections_max, budget.partitions_max, core::files_per_partition,
      budget.partitions_found, files_reserve(options));
  if (budget.connections_max < options.connections_max) {
    HARK_LOG_WARN(
        "the %u partitions in the data directory leave room for %u connections only "
        "(limits.connections_max is %u) under RLIMIT_NOFILE %u; new partitions are refused: "
        "raise the limit (ulimit -n) to serve more",
        budget.partitions_found, budget.connections_max, options.connections_max, budget.limit);
  }
}

// One line of the wait path's, the notifications' and the connections' counters: on SIGUSR1 and
// every log.stats_interval. The main thread is no shard, so blocking on the operation is fine.
void log_stats(core::Broker& broker, const Server& server) {
  core::Blocking<core::GetStats> stats;
  if (!stats.call(broker).ok()) return;
  const core::BrokerStats& s = stats.stats;
  HARK_LOG_INFO(
      "stats: connections=%u parked_now=%u parked=%u ready_at_park=%u woken=%u timed_out=%u "
      "cancelled=%u aborted=%u rejected_full=%u zombies_swept=%u reevaluated=%u reparked=%u "
      "conditions_evaluated=%u condition_reports=%u eventfd_writes=%u partitions=%u messages=%u "
      "bytes=%u shard_connections=%s migrations=%u "
      "migrations_refused=%u %s",
      server.connections_count(), s.waits.parked_now, s.waits.parked, s.waits.ready_at_park,
      s.waits.woken, s.waits.timed_out, s.waits.cancelled, s.waits.aborted, s.waits.rejected_full,
      s.waits.zombies_swept, s.reevaluated, s.reparked, s.waits.conditions_evaluated,
      s.waits.condition_reports, s.eventfd_writes, s.partitions, s.messages_count, s.size_bytes,
      server.connections_by_shard(), server.migrations(), server.migrations_refused(),
      server.connection_counters().format() + server.links_format());
}

// Cluster mode's part of a scrape: LinkShared's counters and the newest view's gauges, read
// as they are (nothing on the data path waits for a scrape).
std::optional<ClusterMetrics> cluster_metrics(const Server& server) {
  const LinkShared* links = server.links();
  if (links == nullptr) return std::nullopt;
  const auto get = [](const auto& value) { return value.load(std::memory_order_relaxed); };
  ClusterMetrics c{.nodes = get(links->view_nodes),
                   .draining = get(links->view_draining),
                   .partitions_assigned = get(links->view_assigned_here),
                   .moves_planned = get(links->view_moves),
                   .controller = get(links->view_controller_here),
                   .view_revision = get(links->view_revision),
                   .etcd_ok = get(links->etcd.ok),
                   .etcd_failures_in_row = get(links->etcd.failures_in_row),
                   .etcd_failures = get(links->etcd.failures),
                   .link_handshakes = get(links->links_up),
                   .link_handshakes_refused = get(links->handshakes_refused),
                   .links_dropped = get(links->links_dropped),
                   .link_tls_failures = get(links->tls_failures),
                   .forwarded = get(links->forwarded),
                   .forwarded_executed = get(links->executed),
                   .forwarded_replayed = get(links->replayed),
                   .forwarded_forgotten = get(links->refused_forgotten),
                   .forward_unavailable = get(links->unavailable)};
  for (uint32_t peer = 0; peer < links->peers_up.size(); ++peer) {
    if (const uint32_t up = get(links->peers_up[peer]); up > 0) c.links_up.emplace_back(peer, up);
  }
  return c;
}

// One scrape of /metrics: a GetStats tour with the series (the stats line's mechanism: each
// shard adds its own counters and partitions on its thread), plus the server's and process's
// figures. Runs on the metrics thread, which alone waits for the tour.
std::string scrape(core::Broker& broker, const Server& server, const ServerOptions& options,
                   const MetricsHttpCounts& http) {
  core::Blocking<core::GetStats> stats;
  stats.limits = {.partitions = options.metrics_max_partition_series,
                  .consumers = options.metrics_max_consumer_series};
  if (!stats.call(broker).ok()) return {};
  MetricsSnapshot snapshot{.stats = stats.stats,
                           .series = std::move(stats.series),
                           .durability = durability_name(options.durability),
                           .shards = options.shards_count,
                           .connections = server.connections_count(),
                           .shard_connections = server.connections_per_shard(),
                           .migrations = server.migrations(),
                           .migrations_refused = server.migrations_refused(),
                           .start_time_seconds = static_cast<double>(server.started_at()) / 1e6,
                           .resident_bytes = resident_bytes(),
                           .cpu_seconds = static_cast<double>(cpu_micros()) / 1e6,
                           .http = http};
  const ConnectionCounters& counters = server.connection_counters();
  for (size_t i = 0; i < snapshot.refusals.size(); ++i) {
    snapshot.refusals[i] = counters.count(static_cast<Refusal>(i));
  }
  snapshot.receive_paused = counters.receive_paused();
  snapshot.cluster = cluster_metrics(server);
  return render_metrics(snapshot);
}

// The ready line on stdout and in the log; with a metrics listener, its line in the same write.
void announce(const ServerOptions& options, const std::string& bound,
              const std::string& metrics_bound) {
  const std::string metrics_line =
      metrics_bound.empty() ? "" : "harkd metrics on " + metrics_bound + "\n";
  printf("harkd listening on %s\n%s", bound.c_str(), metrics_line.c_str());
  fflush(stdout);
  HARK_LOG_INFO("listening on %s with %u shards, data in %s", bound, options.shards_count,
                options.data_directory);
  if (!metrics_bound.empty()) HARK_LOG_INFO("metrics: GET /metrics on %s", metrics_bound);
}

class Scrapes final : public MetricsServer::Source {
 public:
  Scrapes(core::Broker& broker, const Server& server, const ServerOptions& options)
      : broker_(broker), server_(server), options_(options) {}
  std::string render(const MetricsHttpCounts& counts) override {
    return scrape(broker_, server_, options_, counts);
  }

 private:
  core::Broker& broker_;
  const Server& server_;
  const ServerOptions& options_;
};

// The metrics listener, if metrics.address is set; its bound address in `bound`. Exit code 1
// (logged) when it cannot listen.
Result<int> open_metrics_listener(const ServerOptions& options, std::string& bound) {
  if (options.metrics_address.empty()) return -1;
  Result<io::SocketAddress> address = io::parse_address(options.metrics_address);
  HARK_ASSERT(address.ok());  // parse_flags() checked it.
  Result<int> listener = io::listen_tcp(*address, false, 64);
  if (!listener.ok()) {
    HARK_LOG_ERROR("cannot listen on metrics.address %s (see the log above)",
                   options.metrics_address.c_str());
    return listener.error();
  }
  bound = io::local_address(*listener)->to_string();
  return listener;
}

// Waits for a stop signal, logging the stats line on SIGUSR1 and every `interval` (0: never).
int wait_for_stop(const sigset_t& signals, Duration interval, core::Broker& broker,
                  const Server& server) {
  while (true) {
    int signal_number = 0;
    if (interval > Duration(0)) {
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(interval);
      const timespec timeout{.tv_sec = seconds.count(), .tv_nsec = (interval - seconds).count()};
      signal_number = sigtimedwait(&signals, nullptr, &timeout);
      if (signal_number < 0) {
        if (errno == EAGAIN) log_stats(broker, server);
        continue;
      }
    } else if (sigwait(&signals, &signal_number) != 0) {
      continue;
    }
    if (signal_number == SIGUSR1) {
      log_stats(broker, server);
      continue;
    }
    return signal_number;
  }
}

cluster::GatewayOptions gateway_options(const ServerOptions& options) {
  return {.endpoints = options.etcd_endpoints,
          .user = options.etcd_user,
          .password = options.etcd_password,
          .ca_file = options.etcd_ca_file,
          .cert_file = options.etcd_cert_file,
          .key_file = options.etcd_key_file};
}

// Cluster mode, before the broker starts: a node whose metadata.log is behind etcd's trimmed
// journal starts from etcd's snapshot (docs/cluster.md §Metadata). If etcd cannot be reached
// the node starts from its own file (logged) and catches up when etcd answers.
void catch_up_from_snapshot(const ServerOptions& options) {
  if (options.etcd_endpoints.empty()) return;
  Result<std::unique_ptr<cluster::EtcdGateway>> gateway =
      cluster::EtcdGateway::create(gateway_options(options));
  const Status caught_up =
      gateway.ok() ? cluster::catch_up_from_snapshot(**gateway, cluster::Keys(options.cluster_name),
                                                     options.data_directory)
                   : Status(gateway.error());
  if (!caught_up.ok()) {
    HARK_LOG_WARN(
        "cluster: could not check etcd's metadata snapshot at start (%s); starting from "
        "metadata.log",
        std::string(error_name(caught_up.error())));
  }
}

// Cluster mode (docs/cluster.md): the coordination thread registers this node in etcd, joins
// the election and hands every new membership view to the shards. Null on one node.
std::unique_ptr<cluster::CoordinationThread> start_coordination(const ServerOptions& options,
                                                                Server& server,
                                                                cluster::JournalLink& journal,
                                                                cluster::EntrySink& entries) {
  if (options.etcd_endpoints.empty()) return nullptr;
  cluster::CoordinationOptions settings;
  settings.journal = &journal;
  settings.entries = &entries;
  settings.health = server.links() != nullptr ? &server.links()->etcd : nullptr;
  settings.moves = server.shard_reports();
  settings.etcd = gateway_options(options);
  settings.agent = {
      .cluster = options.cluster_name,
      .self = {.id = options.node_id,
               .client_address = options.advertised_address.empty() ? options.bound_address
                                                                    : options.advertised_address,
               .link_address = options.node_advertised_link_address.empty()
                                   ? options.node_link_address
                                   : options.node_advertised_link_address,
               .shards = options.shards_count},
      .lease_ttl_seconds =
          std::chrono::duration_cast<std::chrono::seconds>(options.cluster_lease_ttl).count(),
      .replica_replace_after = options.replica_replace_after};
  HARK_LOG_INFO("cluster: node %u of cluster %s, etcd at %s", options.node_id, options.cluster_name,
                options.etcd_endpoints.front());
  auto thread = std::make_unique<cluster::CoordinationThread>(std::move(settings), server);
  thread->start();
  return thread;
}

bool is_loopback(const io::SocketAddress& address) {
  if (address.storage.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address.storage);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (address.storage.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
    return IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
  }
  return false;
}

// Creates the data directory and takes it and a fixed port for this process
// (instance_lock.h).
Result<InstanceLock> lock_instance(const ServerOptions& options, const io::SocketAddress& address) {
  if (!storage::create_private_directories(options.data_directory).ok()) {
    HARK_LOG_ERROR("cannot create %s (see the log above)", options.data_directory.c_str());
    return Error::cannot_create_base_directory;
  }
  std::string why;
  Result<InstanceLock> lock = InstanceLock::acquire(options.data_directory, why);
  Status port = ok_status();
  if (lock.ok() && address.port() != 0) port = lock->lock_port(address, why);
  if (!lock.ok() || !port.ok()) {
    HARK_LOG_ERROR("%s", why.c_str());
    return lock.ok() ? port.error() : lock.error();
  }
  return lock;
}

// False (logged) when root keeps the default password on a public address.
bool root_password_ok(const ServerOptions& options, const io::SocketAddress& address,
                      const UserStore& users) {
  if (is_loopback(address) || options.allow_default_root_password ||
      !users.root_password_is(default_root_password)) {
    return true;
  }
  HARK_LOG_ERROR(
      "refusing to listen on %s: the root user still has the default password "
      "'iggy'. Set HARK_ROOT_PASSWORD before the first start (or change root's password), "
      "listen on 127.0.0.1, or pass --allow-default-root-password true",
      options.address.c_str());
  return false;
}

// One node: <data>/users.log. Cluster mode: the metadata journal in etcd (docs/cluster.md
// §Metadata), and a users.log left in the data directory is refused rather than ignored.
Result<std::unique_ptr<UserBackend>> users_backend(const ServerOptions& options,
                                                   cluster::ClusterUserBackend*& cluster_users) {
  const std::string log_path = options.data_directory + "/users.log";
  if (options.etcd_endpoints.empty()) {
    HARK_TRY_ASSIGN(std::unique_ptr<JournalUserBackend> log, JournalUserBackend::open(log_path));
    return std::unique_ptr<UserBackend>(std::move(log));
  }
  std::error_code error;
  if (std::filesystem::exists(log_path, error)) {
    HARK_LOG_ERROR(
        "cluster mode keeps users in etcd, but %s holds users of this node alone (a single "
        "node's, or an older harkd's): move it out of the data directory and start again, then "
        "create those users through the cluster (docs/cluster.md §Metadata)",
        log_path);
    return Error::invalid_configuration;
  }
  auto backend = std::make_unique<cluster::ClusterUserBackend>();
  cluster_users = backend.get();
  return std::unique_ptr<UserBackend>(std::move(backend));
}

// Opens the users: <data>/users.log creating root on the first start, or in cluster mode the
// journal's (root is bootstrapped once the journal runs: bootstrap_cluster_root). Exit code on
// failure: 1 when they cannot be used, 2 for a bad configuration.
Result<std::unique_ptr<UserStore>> open_users(const ServerOptions& options,
                                              const io::SocketAddress& address, int& exit_code,
                                              cluster::ClusterUserBackend*& cluster_users) {
  exit_code = 1;
  const UserStore::Root root{.username = options.root_username, .password = options.root_password};
  Result<std::unique_ptr<UserBackend>> backend = users_backend(options, cluster_users);
  const bool cluster = cluster_users != nullptr;
  Result<std::unique_ptr<UserStore>> users =
      backend.ok() ? UserStore::open(std::move(backend).value(),
                                     cluster ? std::nullopt : std::optional(root),
                                     SystemClock().realtime_now())
                   : Result<std::unique_ptr<UserStore>>(backend.error());
  if (!users.ok()) {
    HARK_LOG_ERROR("cannot open the users in %s: %s (see the log above)",
                   options.data_directory.c_str(), std::string(error_name(users.error())).c_str());
    if (users.error() == Error::invalid_configuration) exit_code = 2;
    return users.error();
  }
  if (!cluster && !root_password_ok(options, address, **users)) {
    exit_code = 2;
    return Error::invalid_configuration;
  }
  return users;
}

// Cluster mode, once the coordination thread runs: creates root once per cluster (through the
// journal, so a node that finds another's root creates none), retrying while etcd does not
// answer, for up to a minute. False (logged) if that fails or root's password is refused.
bool bootstrap_cluster_root(const ServerOptions& options, UserStore& users) {
  const UserStore::Root root{.username = options.root_username, .password = options.root_password};
  const Instant deadline = SystemClock::instance().monotonic_now() + std::chrono::minutes(1);
  Status status = users.bootstrap_root(root, SystemClock().realtime_now());
  // A backoff between attempts while etcd is away, not a wait on a signal: nothing to wait on.
  while (!status.ok() && status.error() == Error::feature_unavailable &&
         SystemClock::instance().monotonic_now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    status = users.bootstrap_root(root, SystemClock().realtime_now());
  }
  if (!status.ok()) {
    HARK_LOG_ERROR("cluster: cannot find or create the root user: %s (see the log above)",
                   std::string(error_name(status.error())));
    return false;
  }
  const Result<io::SocketAddress> address = io::parse_address(options.address);
  return !address.ok() || root_password_ok(options, *address, users);
}

// The TLS context when tcp.tls.enabled, else null; a file that is missing, unreadable, not
// PEM or a key that does not match its certificate is logged and exits 2.
Result<std::unique_ptr<TlsContext>> load_tls(const ServerOptions& options) {
  if (!options.tls_enabled) return std::unique_ptr<TlsContext>();
  std::string why;
  std::unique_ptr<TlsContext> tls =
      TlsContext::load({.cert = options.tls_cert_file, .key = options.tls_key_file}, why);
  if (tls == nullptr) {
    HARK_LOG_ERROR("TLS (tcp.tls): %s", why);
    log::flush();
    return Error::invalid_configuration;
  }
  HARK_LOG_INFO("TLS on: certificate %s, key %s", options.tls_cert_file, options.tls_key_file);
  return tls;
}

// The node links' TLS context when cluster.tls_* are set, else null; a file that is not PEM, a
// key of another certificate or a CA file without a certificate is logged (Error: exit 2).
Result<std::unique_ptr<TlsContext>> load_link_tls(const ServerOptions& options) {
  if (options.link_tls_cert_file.empty()) return std::unique_ptr<TlsContext>();
  std::string why;
  std::unique_ptr<TlsContext> tls = TlsContext::load({.cert = options.link_tls_cert_file,
                                                      .key = options.link_tls_key_file,
                                                      .peer_ca = options.link_tls_ca_file},
                                                     why);
  if (tls == nullptr) {
    HARK_LOG_ERROR("TLS on node links (cluster.tls_cert, tls_key, tls_ca): %s", why);
    return Error::invalid_configuration;
  }
  return tls;
}

// Cluster mode: the cluster secret, the links' TLS and the link listener (docs/cluster.md
// §Node links, §Trust), bound to node.link_address (empty: the client listener's host, any
// port). Null on one node. Exit code 2 (logged) for a missing, short or world-readable secret
// or TLS files harkd cannot use, 1 when it cannot listen.
Result<std::unique_ptr<LinkShared>> open_links(const ServerOptions& options,
                                               const io::SocketAddress& client_bound,
                                               int& exit_code) {
  if (options.etcd_endpoints.empty()) return std::unique_ptr<LinkShared>();
  exit_code = 2;
  std::string why;
  Result<std::string> secret = cluster::read_cluster_secret(options.cluster_secret_file, why);
  if (!secret.ok()) {
    HARK_LOG_ERROR("cluster.secret_file: %s", why);
    return secret.error();
  }
  Result<std::unique_ptr<TlsContext>> tls = load_link_tls(options);
  if (!tls.ok()) return tls.error();
  io::SocketAddress address = client_bound;
  if (options.node_link_address.empty()) {
    reinterpret_cast<sockaddr_in*>(&address.storage)->sin_port = 0;  // Same offset in v6.
  } else {
    address = *io::parse_address(options.node_link_address);  // parse_flags() checked it.
  }
  exit_code = 1;
  Result<int> listener = io::listen_tcp(address, false, 128);
  if (!listener.ok()) {
    HARK_LOG_ERROR("cannot listen for node links on %s (see the log above)", address.to_string());
    return listener.error();
  }
  auto links = std::make_unique<LinkShared>();
  links->secret = std::move(secret).value();
  links->cluster = options.cluster_name;
  links->node = options.node_id;
  links->incarnation = cluster::random_incarnation();
  links->listen_fd = *listener;
  links->tls = std::move(tls).value();
  HARK_LOG_INFO("node links on %s (%s)", io::local_address(*listener)->to_string(),
                links->tls != nullptr ? "mutual TLS 1.3" : "plain TCP");
  return links;
}

// Cluster mode needs a node id of its own (0 is the single node's).
bool cluster_identity_ok(const ServerOptions& options) {
  if (options.etcd_endpoints.empty() ||
      (options.node_id != 0 && options.node_id <= cluster::node_id_max)) {
    return true;
  }
  HARK_LOG_ERROR(
      "cluster mode (cluster.etcd) needs node.id from 1 to %u (--node-id), unique in the cluster",
      cluster::node_id_max);
  log::flush();
  return false;
}

// Starts the cluster membership (cluster mode: bootstraps root through it), announces the
// listeners, serves until a stop signal, then stops in order: the metrics listener (a scrape
// waits for the broker), the cluster membership (it leaves before the shards go), the logins,
// the broker. Returns harkd's exit status: 0, or 2 when a cluster's root could not be
// bootstrapped or keeps the default password on a public address.
int serve_until_stopped(const ServerOptions& options, const sigset_t& stop_signals,
                        int metrics_listener, const std::string& metrics_bound, Server& server,
                        cluster::JournalLink& journal, std::unique_ptr<core::Broker>& broker,
                        UserStore* cluster_users) {
  cluster::BrokerEntrySink entries(*broker);
  Scrapes scrapes(*broker, server, options);
  std::unique_ptr<MetricsServer> metrics;
  if (metrics_listener >= 0) {
    metrics =
        std::make_unique<MetricsServer>(metrics_listener, options.metrics_request_timeout, scrapes);
  }
  std::unique_ptr<cluster::CoordinationThread> coordination =
      start_coordination(options, server, journal, entries);
  // Ready once users can log in: a cluster's root exists here (docs/cluster.md §Metadata).
  const bool root_ok = cluster_users == nullptr || bootstrap_cluster_root(options, *cluster_users);
  if (root_ok) {
    server.open_to_clients();
    announce(options, options.bound_address, metrics ? metrics_bound : "");
  }
  const int signal_number =
      root_ok ? wait_for_stop(stop_signals, options.stats_interval, *broker, server) : SIGTERM;
  HARK_LOG_INFO("%s: stopping", strsignal(signal_number));
  metrics.reset();
  if (coordination) coordination->stop();
  server.stop_auth();
  broker->stop();
  broker.reset();
  HARK_LOG_INFO("stopped");
  log::flush();
  return root_ok ? 0 : 2;
}

// The sockets harkd serves on: a client listener per shard, the metrics listener (-1: off) and
// the node links' listener (null: one node). On a failure what was opened is closed, the log
// says why and `exit_code` is harkd's exit status.
struct Sockets {
  std::vector<int> listeners;
  io::SocketAddress bound;
  int metrics_listener = -1;
  std::string metrics_bound;
  std::unique_ptr<LinkShared> links;
};

std::optional<Sockets> open_sockets(const ServerOptions& options, const io::SocketAddress& address,
                                    InstanceLock& instance, int& exit_code) {
  exit_code = 1;
  Result<std::vector<int>> listeners =
      open_listeners(address, options.shards_count, options.listen_backlog);
  if (!listeners.ok()) {
    HARK_LOG_ERROR("cannot listen on %s: %s", options.address.c_str(),
                   std::string(error_name(listeners.error())).c_str());
    return std::nullopt;
  }
  const io::SocketAddress bound = *io::local_address(listeners->front());
  std::string why;
  if (address.port() == 0 && !instance.lock_port(bound, why).ok()) {
    HARK_LOG_ERROR("%s", why.c_str());
    for (const int fd : *listeners) ::close(fd);
    return std::nullopt;
  }
  std::string metrics_bound;
  Result<int> metrics_listener = open_metrics_listener(options, metrics_bound);
  if (!metrics_listener.ok()) {
    for (const int fd : *listeners) ::close(fd);
    return std::nullopt;
  }
  int links_exit = 0;
  Result<std::unique_ptr<LinkShared>> links = open_links(options, bound, links_exit);
  if (!links.ok()) {
    for (const int fd : *listeners) ::close(fd);
    exit_code = links_exit;
    return std::nullopt;
  }
  return Sockets{.listeners = std::move(listeners).value(),
                 .bound = bound,
                 .metrics_listener = *metrics_listener,
                 .metrics_bound = std::move(metrics_bound),
                 .links = std::move(links).value()};
}

int run(const ServerOptions& options, const sigset_t& stop_signals) {
  log::set_level(options.log_level);
  Result<io::SocketAddress> address = io::parse_address(options.address);
  HARK_ASSERT(address.ok());  // parse_flags() checked it.
  Result<std::unique_ptr<TlsContext>> tls = load_tls(options);
  if (!tls.ok()) return 2;
  Result<InstanceLock> instance = lock_instance(options, *address);
  if (!instance.ok()) return 1;
  if (!cluster_identity_ok(options)) return 2;
  FileBudget files;
  if (const int code = plan_open_files(options, files); code != 0) return code;
  log_open_files(options, files);
  int users_exit = 0;
  cluster::ClusterUserBackend* cluster_users = nullptr;
  Result<std::unique_ptr<UserStore>> users =
      open_users(options, *address, users_exit, cluster_users);
  if (!users.ok()) {
    log::flush();
    return users_exit;
  }
  int sockets_exit = 0;
  std::optional<Sockets> sockets = open_sockets(options, *address, *instance, sockets_exit);
  if (!sockets) {
    log::flush();
    return sockets_exit;
  }
  ServerOptions bound_options = options;
  bound_options.bound_address = sockets->bound.to_string();
  bound_options.connections_max = files.connections_max;
  if (sockets->links != nullptr) {
    bound_options.node_link_address = io::local_address(sockets->links->listen_fd)->to_string();
  }

  // Declared before the broker, so they are destroyed after it.
  // Cluster mode keeps metadata in etcd (docs/cluster.md §Metadata): shard 0 journals through
  // an EtcdJournal over `journal`, which the coordination thread serves.
  cluster::JournalLink journal;
  cluster::EtcdJournalFactory journal_factory(journal);
  UserStore* const user_store = users->get();
  Server server(bound_options, std::move(sockets->listeners), std::move(users).value(),
                std::move(tls).value(), std::move(sockets->links));
  core::BrokerOptions broker_settings = broker_options(options);
  broker_settings.hooks = &server;
  broker_settings.partitions_max = files.partitions_max;
  if (!options.etcd_endpoints.empty()) broker_settings.journal = &journal_factory;
  broker_settings.extensions = cluster_users;  // Users in the journal (cluster mode).
  catch_up_from_snapshot(options);
  Result<std::unique_ptr<core::Broker>> broker = core::Broker::start(broker_settings);
  if (!broker.ok()) {
    HARK_LOG_ERROR("the broker did not start: %s (see the log above)",
                   std::string(error_name(broker.error())).c_str());
    log::flush();
    return 1;
  }
  if (cluster_users != nullptr) cluster_users->attach(**broker);
  return serve_until_stopped(bound_options, stop_signals, sockets->metrics_listener,
                             sockets->metrics_bound, server, journal, *broker,
                             cluster_users != nullptr ? user_store : nullptr);
}

}  // namespace
}  // namespace hark::server

int main(int argc, char** argv) {
  using hark::server::ParsedFlags;
  // Block the stop signals before any thread exists (the logger's writer, the shards), so
  // every thread inherits the mask and only sigwait() below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // Sends use MSG_NOSIGNAL; this covers anything else.

  const uint32_t cpus = std::max(1u, std::thread::hardware_concurrency());
  size_t environment_count = 0;
  while (environ[environment_count] != nullptr) environment_count++;
  const ParsedFlags parsed = hark::server::load_config(
      std::span<const char* const>(argv + (argc > 0 ? 1 : 0),
                                   static_cast<size_t>(argc > 0 ? argc - 1 : 0)),
      std::span<const char* const>(environ, environment_count), cpus);
  // From here on stderr is the logger's, in the configured format (a configuration error
  // stops harkd before that, as a plain line).
  if (parsed.outcome == ParsedFlags::Outcome::run) hark::log::set_format(parsed.options.log_format);
  for (const std::string& warning : parsed.warnings) HARK_LOG_WARN("%s", warning);
  switch (parsed.outcome) {
    case ParsedFlags::Outcome::help: printf("%s", hark::server::usage().c_str()); return 0;
    case ParsedFlags::Outcome::print:
      printf("%s", hark::server::print_config(parsed.options).c_str());
      return 0;
    case ParsedFlags::Outcome::error:
      fprintf(stderr,
              "harkd: %s\n(harkd --help lists the flags; docs/operations.md the settings)\n",
              parsed.error.c_str());
      return 2;
    case ParsedFlags::Outcome::run: break;
  }
  return hark::server::run(parsed.options, stop_signals);
}
