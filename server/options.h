#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/base/log.h"
#include "hark/core/base/units.h"
#include "hark/core/broker/broker.h"
#include "hark/protocol/framing.h"
#include "hark/server/cluster_peer.h"
#include "hark/storage/log_options.h"

namespace hark::server {

inline constexpr std::string_view default_root_password = "iggy";

// What harkd runs with: its configuration (config.h loads it from defaults, a TOML file, the
// environment and flags; docs/operations.md is the reference), plus the fixed per-shard sizes
// of the server. Control plane: loaded once in main().
struct ServerOptions {
  // HOST:PORT of every shard's listener (SO_REUSEPORT). Port 0: one ephemeral port for all.
  std::string address = "127.0.0.1:8090";
  // Relative paths are relative to the working directory.
  std::string data_directory = "./data";
  uint32_t shards_count = 1;
  log::Level log_level = log::Level::info;
  log::Format log_format = log::Format::text;
  // A periodic log line with the wait-path counters; 0: off (SIGUSR1 logs one at any time).
  Duration stats_interval = Duration(0);

  // Storage: when appended data reaches the disk, and segment files.
  storage::Durability durability = storage::Durability::write;
  Duration sync_interval = std::chrono::seconds(1);
  uint64_t segment_bytes = 1ull << 30;
  // The message-id deduplication window of every partition (storage::LogOptions::dedup_window;
  // docs/cluster.md §The data path, Deduplication): ~75 KiB a partition once it is full. Unset:
  // 1024 in cluster mode, where a producer retries after a failover, and off on one node, as
  // Iggy's own default (an SDK that sends one id twice gets both stored).
  std::optional<uint32_t> dedup_window;
  uint32_t dedup_window_or_default() const {
    if (dedup_window.has_value()) return *dedup_window;
    return etcd_endpoints.empty() ? 0 : 1024;
  }
  // Retention defaults of every partition (0: keep).
  Duration retention_age = Duration(0);
  uint64_t retention_bytes = 0;
  // metadata.log is rewritten as one snapshot past this many entries after its last (0: never;
  // core::BrokerOptions::metadata_snapshot_entries).
  uint64_t metadata_snapshot_entries = 10'000;
  // A poll's wait_timeout_us is clamped to this.
  Duration max_wait = std::chrono::seconds(30);
  // The wait a classic poll (no wait_timeout_us on the wire: every released Iggy SDK) gets when
  // its user is in classic_default_wait_users ("*": every user) or its stream (name or id) is
  // in classic_default_wait_streams; other classic polls answer at once, as in 0.8.0. Opt-in:
  // a wait above 0 with both lists empty is a configuration error (docs/long-polling.md).
  Duration classic_default_wait = Duration(0);
  std::vector<std::string> classic_default_wait_users;
  std::vector<std::string> classic_default_wait_streams;

  // Move a connection to the shard that owns the one partition its first partition-addressed
  // send or poll uses (docs/architecture.md §6, Migration): its requests then need no hop.
  bool migrate_connections = true;

  // Open client connections, over all shards (connections migrate between shards, so none
  // has a share). A connection over the limit is answered CannotEstablishConnection (9) and
  // closed.
  uint32_t connections_max = 10'000;
  // Open files harkd keeps for itself besides connections and partitions (docs/operations.md
  // §Open files); 0: 256 + 16 per shard.
  uint32_t files_reserve = 0;
  // Admission (docs/operations.md §Connections): a connection not logged in within
  // login_timeout is closed; at most unauthenticated_per_address_max unauthenticated
  // connections per source address (more: refused with 9) and unauthenticated_max in all
  // (capped at 3/4 of connections_max, shared out over the shards; more: the oldest is closed).
  Duration login_timeout = std::chrono::seconds(10);
  uint32_t unauthenticated_max = 1000;
  uint32_t unauthenticated_per_address_max = 64;
  // A response the client takes none of for this long closes the connection (0: never).
  Duration write_timeout = std::chrono::seconds(30);
  // Heartbeats, as Iggy 0.8.0's [heartbeat]: when enabled, a connection that sends nothing
  // for heartbeat_interval × 1.2 while none of its requests is being answered (a parked poll
  // is) is closed. Clients send Ping as their heartbeat.
  bool heartbeat_enabled = false;
  Duration heartbeat_interval = std::chrono::seconds(5);
  // Frame caps: control frames 10 MiB as Iggy 0.8.0; send frames up to `send_max`.
  protocol::FrameLimits frame_limits;
  // The largest message payload a send may carry (Iggy 0.8.0: 64 000 000 bytes); larger →
  // too_big_message_payload (4022).
  uint32_t message_payload_max = 64'000'000;
  // Parked polls per shard and over all shards; full → feature_unavailable (5).
  uint32_t parked_polls_per_shard_max = 16384;
  uint64_t parked_polls_total_max = 100'000;

  // Prometheus metrics (server/metrics_server.h, docs/operations.md §Metrics): GET /metrics on
  // this HOST:PORT, a listener of its own served by one thread off the shards; empty: off.
  std::string metrics_address;
  // Label sets are bounded: partitions and consumers (or groups) past these get no series of
  // their own, and are summed into one overflow series each. 0: no such series at all.
  uint32_t metrics_max_partition_series = 10'000;
  uint32_t metrics_max_consumer_series = 1'000;
  // A scraper must send its request and take the answer within this, or it is closed.
  Duration metrics_request_timeout = std::chrono::seconds(5);
  // TLS on the client listener, as Iggy 0.8.0's [tcp.tls] (docs/operations.md §TLS): PEM
  // files, loaded once at start; enabled without both files is a configuration error.
  bool tls_enabled = false;
  bool tls_self_signed = false;  // Iggy's key; harkd refuses true (it generates no certificate).
  std::string tls_cert_file;
  std::string tls_key_file;

  // Node identity, reported by get_cluster_metadata: without cluster_enabled a single node
  // (cluster "single-node", this name), the leader, as Iggy 0.8.0 with its cluster disabled.
  uint32_t node_id = 0;
  std::string node_name = "hark-node";
  // HOST:PORT clients should use to reach this node; empty: the bound address.
  std::string advertised_address;

  // With cluster_enabled, get_cluster_metadata reports this layout the way Iggy 0.8.0 reports
  // its [cluster] config: this node (the leader, its TCP port from the address above) and the
  // others (followers). Metadata only: harkd replicates nothing. The defaults are Iggy 0.8.0's
  // default config (core/server/config.toml), whose answer Iggy's SDK test suites expect.
  bool cluster_enabled = false;
  std::string cluster_name = "iggy-cluster";
  std::string cluster_node_name = "iggy-node-1";
  std::string cluster_node_ip = "127.0.0.1";
  TransportPorts cluster_node_ports{.quic = 8080, .http = 3000, .websocket = 8092};
  std::vector<ClusterPeer> cluster_others = {
      {.name = "iggy-node-2",
       .ip = "127.0.0.1",
       .tcp = 8091,
       .ports = {.quic = 8081, .http = 3001, .websocket = 8093}}};
  // Cluster mode (docs/cluster.md): with etcd endpoints harkd registers in etcd as node_id
  // (1 or more) of cluster_name, joins the controller election and reports the live members
  // in cluster metadata. Empty: one node, no etcd.
  std::vector<std::string> etcd_endpoints;
  std::string etcd_user;
  std::string etcd_password;
  std::string etcd_password_file;  // Where etcd_password was read from (printed instead).
  // TLS to etcd (https:// endpoints): a CA file, and a client certificate and key (both or
  // neither) for an etcd started with --client-cert-auth.
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  Duration cluster_lease_ttl = std::chrono::seconds(5);
  // The least replication factor a topic gets in cluster mode (docs/cluster.md §Replication
  // factor); 0: unset, which means 3 in cluster mode and 1 on one node
  // (min_replication_factor_or_default).
  uint8_t min_replication_factor = 0;
  uint8_t min_replication_factor_or_default() const {
    if (min_replication_factor != 0) return min_replication_factor;
    return etcd_endpoints.empty() ? 1 : 3;
  }
  // How long a replica's node may be gone before the controller replaces it.
  Duration replica_replace_after = std::chrono::minutes(5);
  // HOST:PORT this node listens on for node links (docs/cluster.md §Node links); port 0 picks
  // one. Empty: the client address's host, port 0. main() sets it to the bound address, which
  // is what the node registers.
  std::string node_link_address;
  // HOST:PORT the other nodes dial for links, registered in etcd instead of the bound link
  // address (a NAT, a port forward, or a test's proxy in between). Empty: the bound address.
  std::string node_advertised_link_address;
  // The cluster secret links authenticate with (docs/cluster.md §Trust): required in cluster
  // mode, at least 32 bytes, not world-readable. Read at start; never printed.
  std::string cluster_secret_file;
  // Mutual TLS on the node links (docs/cluster.md §Trust): this node's certificate and key and
  // the CA that signed every node's, PEM; all three or none (none: links in plain TCP).
  std::string link_tls_cert_file;
  std::string link_tls_key_file;
  std::string link_tls_ca_file;
  // The address the listeners are bound to (port 0 resolved); set by main() after binding.
  std::string bound_address;

  // Users (docs/operations.md §Users and security). The root credentials apply only when the
  // users log is created (first start); afterwards root changes its password like any user.
  std::string root_username = "iggy";
  std::string root_password = std::string(default_root_password);
  // While root's password is the default, harkd listens only on loopback unless this is set.
  bool allow_default_root_password = false;
  // Failed logins (and logins in flight) from one address before it is locked out for
  // login_lockout (0: off).
  uint32_t login_failures_max = 10;
  Duration login_lockout = std::chrono::seconds(30);
  // Threads for the slow password and token hashes (AuthPool).
  uint32_t auth_threads = 2;
  // Logins and user commands waiting for an AuthPool thread; past it they are refused.
  uint32_t auth_queue_max = 1024;
  uint32_t tokens_per_user_max = 100;

  // The per-shard pool of receive buffers (io::BufferRing): received bytes are copied into the
  // connection's own buffer and the ring buffer recycled at once, so a few suffice.
  uint32_t receive_buffers_count = 256;
  uint32_t receive_buffer_bytes = 16 * 1024;
  // What a connection reads past the request in flight before it stops receiving (the kernel's
  // socket buffer then pushes back on the client).
  uint32_t read_ahead_bytes = 16 * 1024;
  int listen_backlog = 1024;
};

// The broker settings these options stand for (hooks not set).
core::BrokerOptions broker_options(const ServerOptions& options);

}  // namespace hark::server
