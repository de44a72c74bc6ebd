#include "hark/server/config.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

// toml++ is compiled into this file alone, without exceptions (hark code neither throws nor
// catches): parse errors come back as a parse_result. The packaged shared library is built
// with exceptions, so its header-only mode is used instead.
#undef TOML_HEADER_ONLY
#define TOML_HEADER_ONLY 1
#undef TOML_SHARED_LIB
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "hark/io/socket.h"

namespace hark::server {
namespace {

constexpr uint32_t shards_max = 1024;
constexpr uint32_t connections_limit = 1'000'000;
constexpr uint32_t parked_limit = 1'000'000;
constexpr uint32_t series_limit = 1'000'000;

// One setting: its TOML key, flag and environment names, how to apply a value (an error line,
// or empty when fine) and how to print the current one as a TOML value.
struct Setting {
  std::string_view key;
  std::string_view flag;
  std::string_view env;
  std::string_view iggy_env;  // Empty when Iggy 0.8.0 has no such variable.
  std::string_view help;
  std::string (*apply)(ServerOptions& options, std::string_view value);
  std::string (*print)(const ServerOptions& options);
};

std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

std::optional<uint64_t> parse_number(std::string_view text, uint64_t min, uint64_t max) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::string bad(std::string_view what, std::string_view value, std::string_view expected) {
  return "invalid " + std::string(what) + " '" + std::string(value) + "': expected " +
         std::string(expected);
}

std::string apply_address(std::string& target, std::string_view key, std::string_view value,
                          bool allow_empty) {
  if (value.empty() && allow_empty) {
    target.clear();
    return {};
  }
  if (!io::parse_address(value).ok()) {
    return bad(key, value, "HOST:PORT with a numeric IPv4 host, [IPv6] or localhost");
  }
  target = std::string(value);
  return {};
}

std::string apply_name(std::string& target, std::string_view key, std::string_view value) {
  if (value.empty()) return std::string(key) + " must not be empty";
  target = std::string(value);
  return {};
}

template <uint64_t Min, uint64_t Max, typename T>
std::string apply_count(T& target, std::string_view key, std::string_view value) {
  const std::optional<uint64_t> number = parse_number(value, Min, Max);
  if (!number)
    return bad(key, value, "a whole number " + std::to_string(Min) + ".." + std::to_string(Max));
  target = static_cast<T>(*number);
  return {};
}

std::string apply_duration(Duration& target, std::string_view key, std::string_view value,
                           bool allow_zero) {
  const std::optional<Duration> duration = parse_duration(value);
  if (!duration || (!allow_zero && *duration == Duration(0))) {
    return bad(key, value,
               allow_zero ? "a duration such as 500us, 250ms, 5s, 2m, or 0"
                          : "a duration above 0 such as 500us, 250ms, 5s, 2m");
  }
  target = *duration;
  return {};
}

template <typename T>
std::string apply_size(T& target, std::string_view key, std::string_view value, uint64_t min,
                       uint64_t max) {
  const std::optional<uint64_t> size = parse_size(value);
  if (!size || *size < min || *size > max) {
    return bad(key, value,
               "a size in bytes " + std::to_string(min) + ".." + std::to_string(max) +
                   " such as 1048576, 64KiB, 1GiB");
  }
  target = static_cast<T>(*size);
  return {};
}

std::string apply_bool(bool& target, std::string_view key, std::string_view value) {
  if (value == "true") {
    target = true;
  } else if (value == "false") {
    target = false;
  } else {
    return bad(key, value, "true or false");
  }
  return {};
}

// A file harkd reads later (a certificate, a CA): checked readable now, so a typo is a start-up
// error naming the key rather than a failure at the first use. "" clears it.
std::string apply_readable_file(std::string& target, std::string_view key, std::string_view value) {
  if (!value.empty() && !std::ifstream(std::string(value)))
    return bad(key, value, "a readable file");
  target = std::string(value);
  return {};
}

// "a, b,c" → {"a", "b", "c"}; "" → {}. Entries are 1..255 bytes (a user or stream name, an id,
// or "*").
std::optional<std::vector<std::string>> parse_name_list(std::string_view text) {
  std::vector<std::string> names;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view name = text.substr(0, comma);
    while (name.starts_with(' ')) name.remove_prefix(1);
    while (name.ends_with(' ')) name.remove_suffix(1);
    if (name.empty() || name.size() > 255) return std::nullopt;
    names.emplace_back(name);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return names;
}

std::string apply_name_list(std::vector<std::string>& target, std::string_view key,
                            std::string_view value) {
  std::optional<std::vector<std::string>> names = parse_name_list(value);
  if (!names) return bad(key, value, "comma-separated names or ids (empty: none)");
  target = std::move(*names);
  return {};
}

std::string format_name_list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ",") + name;
  return text;
}

std::string_view level_name(log::Level level) {
  switch (level) {
    case log::Level::debug: return "debug";
    case log::Level::info: return "info";
    case log::Level::warn: return "warn";
    case log::Level::error: return "error";
    case log::Level::off: return "off";
  }
  return "info";
}

// The table: every setting harkd has (docs/operations.md is generated from the same list by
// hand; keep them in step).
const Setting settings[] = {
    {"server.address", "--address", "HARK_ADDRESS", "IGGY_TCP_ADDRESS",
     "listen here on every shard (port 0: one free port for all)",
     [](ServerOptions& o, std::string_view v) {
       return apply_address(o.address, "server.address", v, false);
     },
     [](const ServerOptions& o) { return toml_string(o.address); }},
    {"server.data_dir", "--data-dir", "HARK_DATA_DIR", "IGGY_SYSTEM_PATH",
     "where metadata and partitions live",
     [](ServerOptions& o, std::string_view v) -> std::string {
       if (v.empty()) return "server.data_dir must not be empty";
       o.data_directory = std::string(v);
       return {};
     },
     [](const ServerOptions& o) { return toml_string(o.data_directory); }},
    {"server.shards", "--shards", "HARK_SHARDS", "", "shard threads, 1..1024 (default: CPUs)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, shards_max>(o.shards_count, "server.shards", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.shards_count); }},
    {"server.migrate_connections", "--migrate-connections", "HARK_MIGRATE_CONNECTIONS", "",
     "move a connection to the shard owning the partition it sends to or polls (true/false)",
     [](ServerOptions& o, std::string_view v) {
       return apply_bool(o.migrate_connections, "server.migrate_connections", v);
     },
     [](const ServerOptions& o) { return std::string(o.migrate_connections ? "true" : "false"); }},
    {"log.level", "--log-level", "HARK_LOG_LEVEL", "IGGY_SYSTEM_LOGGING_LEVEL",
     "debug, info, warn, error or off",
     [](ServerOptions& o, std::string_view v) -> std::string {
       const std::optional<log::Level> level = log::parse_level(v);
       if (!level) return bad("log.level", v, "debug, info, warn, error or off");
       o.log_level = *level;
       return {};
     },
     [](const ServerOptions& o) { return toml_string(level_name(o.log_level)); }},
    {"log.format", "--log-format", "HARK_LOG_FORMAT", "",
     "text (default) or json: one JSON object per line",
     [](ServerOptions& o, std::string_view v) -> std::string {
       const std::optional<log::Format> format = log::parse_format(v);
       if (!format) return bad("log.format", v, "text or json");
       o.log_format = *format;
       return {};
     },
     [](const ServerOptions& o) {
       return toml_string(o.log_format == log::Format::json ? "json" : "text");
     }},
    {"log.stats_interval", "--stats-interval", "HARK_STATS_INTERVAL", "",
     "log the wait-path counters this often (0: only on SIGUSR1)",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.stats_interval, "log.stats_interval", v, true);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.stats_interval)); }},
    {"storage.durability", "--durability", "HARK_DURABILITY", "",
     "when a send is answered: write (once written), interval (write + periodic fdatasync), "
     "always (once fdatasynced) or memory (at once; a crash loses it). never = write",
     [](ServerOptions& o, std::string_view v) -> std::string {
       if (v == "write" || v == "never") {
         o.durability = storage::Durability::write;
       } else if (v == "memory") {
         o.durability = storage::Durability::memory;
       } else if (v == "interval") {
         o.durability = storage::Durability::interval;
       } else if (v == "always") {
         o.durability = storage::Durability::always;
       } else {
         return bad("storage.durability", v, "write, interval, always or memory");
       }
       return {};
     },
     [](const ServerOptions& o) { return toml_string(durability_name(o.durability)); }},
    {"storage.sync_interval", "--sync-interval", "HARK_SYNC_INTERVAL", "",
     "with durability interval: fdatasync this often",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.sync_interval, "storage.sync_interval", v, false);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.sync_interval)); }},
    {"storage.segment_size", "--segment-size", "HARK_SEGMENT_SIZE", "IGGY_SYSTEM_SEGMENT_SIZE",
     "a segment file rolls past this size",
     [](ServerOptions& o, std::string_view v) {
       return apply_size(o.segment_bytes, "storage.segment_size", v, 4096, UINT32_MAX);
     },
     [](const ServerOptions& o) { return std::to_string(o.segment_bytes); }},
    {"storage.dedup_window", "--dedup-window", "HARK_DEDUP_WINDOW", "",
     "a sent message whose id is among the last this many of its partition is dropped (0: off; "
     "default 1024 in cluster mode, off on one node)",
     [](ServerOptions& o, std::string_view v) {
       uint32_t window = 0;
       std::string error = apply_count<0, UINT32_MAX>(window, "storage.dedup_window", v);
       if (error.empty()) o.dedup_window = window;
       return error;
     },
     [](const ServerOptions& o) { return std::to_string(o.dedup_window_or_default()); }},
    {"storage.metadata_snapshot_entries", "--metadata-snapshot-entries",
     "HARK_METADATA_SNAPSHOT_ENTRIES", "",
     "rewrite metadata.log as one snapshot past this many entries after its last (0: never)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<0, UINT32_MAX>(o.metadata_snapshot_entries,
                                         "storage.metadata_snapshot_entries", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.metadata_snapshot_entries); }},
    {"retention.max_age", "--retention-age", "HARK_RETENTION_AGE", "",
     "delete sealed segments older than this (0: keep)",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.retention_age, "retention.max_age", v, true);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.retention_age)); }},
    {"retention.max_bytes", "--retention-bytes", "HARK_RETENTION_BYTES", "",
     "delete sealed segments past this much per partition (0: keep)",
     [](ServerOptions& o, std::string_view v) {
       return apply_size(o.retention_bytes, "retention.max_bytes", v, 0, UINT64_MAX);
     },
     [](const ServerOptions& o) { return std::to_string(o.retention_bytes); }},
    {"polling.max_wait", "--max-wait", "HARK_MAX_WAIT", "",
     "a poll's wait_timeout_us is clamped to this",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.max_wait, "polling.max_wait", v, true);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.max_wait)); }},
    {"polling.classic_default_wait", "--classic-default-wait", "HARK_CLASSIC_DEFAULT_WAIT", "",
     "the wait of a poll without wait_timeout_us (released Iggy SDKs) from the users or streams "
     "below (0: none)",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.classic_default_wait, "polling.classic_default_wait", v, true);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.classic_default_wait)); }},
    {"polling.classic_default_wait_users", "--classic-default-wait-users",
     "HARK_CLASSIC_DEFAULT_WAIT_USERS", "",
     "usernames whose classic polls get the default wait, comma-separated; * for every user",
     [](ServerOptions& o, std::string_view v) {
       return apply_name_list(o.classic_default_wait_users, "polling.classic_default_wait_users",
                              v);
     },
     [](const ServerOptions& o) {
       return toml_string(format_name_list(o.classic_default_wait_users));
     }},
    {"polling.classic_default_wait_streams", "--classic-default-wait-streams",
     "HARK_CLASSIC_DEFAULT_WAIT_STREAMS", "",
     "streams (names or ids) whose classic polls get the default wait, comma-separated",
     [](ServerOptions& o, std::string_view v) {
       return apply_name_list(o.classic_default_wait_streams,
                              "polling.classic_default_wait_streams", v);
     },
     [](const ServerOptions& o) {
       return toml_string(format_name_list(o.classic_default_wait_streams));
     }},
    {"limits.connections_max", "--connections-max", "HARK_CONNECTIONS_MAX", "",
     "open connections over all shards",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, connections_limit>(o.connections_max, "limits.connections_max", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.connections_max); }},
    {"limits.files_reserve", "--files-reserve", "HARK_FILES_RESERVE", "",
     "open files kept for harkd itself besides connections and partitions (0: 256 + 16 per "
     "shard)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<0, connections_limit>(o.files_reserve, "limits.files_reserve", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.files_reserve); }},
    {"limits.login_timeout", "--login-timeout", "HARK_LOGIN_TIMEOUT", "",
     "close a connection not logged in by then",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.login_timeout, "limits.login_timeout", v, false);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.login_timeout)); }},
    {"limits.unauthenticated_max", "--unauthenticated-max", "HARK_UNAUTHENTICATED_MAX", "",
     "connections not logged in, over all shards (past it the oldest is closed)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, connections_limit>(o.unauthenticated_max, "limits.unauthenticated_max",
                                                v);
     },
     [](const ServerOptions& o) { return std::to_string(o.unauthenticated_max); }},
    {"limits.unauthenticated_per_address_max", "--unauthenticated-per-address-max",
     "HARK_UNAUTHENTICATED_PER_ADDRESS_MAX", "",
     "connections not logged in from one address (more: refused, status 9)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, connections_limit>(o.unauthenticated_per_address_max,
                                                "limits.unauthenticated_per_address_max", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.unauthenticated_per_address_max); }},
    {"limits.write_timeout", "--write-timeout", "HARK_WRITE_TIMEOUT", "",
     "close a connection that takes none of a response for this long (0: never)",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.write_timeout, "limits.write_timeout", v, true);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.write_timeout)); }},
    {"limits.send_payload_max", "--send-payload-max", "HARK_SEND_PAYLOAD_MAX", "",
     "largest send_messages payload (bigger: 80 InvalidSizeBytes)",
     [](ServerOptions& o, std::string_view v) {
       return apply_size(o.frame_limits.send_max, "limits.send_payload_max", v, 1024, 1ull << 30);
     },
     [](const ServerOptions& o) { return std::to_string(o.frame_limits.send_max); }},
    {"limits.message_payload_max", "--message-payload-max", "HARK_MESSAGE_PAYLOAD_MAX", "",
     "largest message payload (bigger: 4022 TooBigMessagePayload)",
     [](ServerOptions& o, std::string_view v) {
       return apply_size(o.message_payload_max, "limits.message_payload_max", v, 1, 64'000'000);
     },
     [](const ServerOptions& o) { return std::to_string(o.message_payload_max); }},
    {"limits.parked_polls_per_shard", "--parked-polls-per-shard", "HARK_PARKED_POLLS_PER_SHARD", "",
     "parked polls one shard holds (full: 5 FeatureUnavailable)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, parked_limit>(o.parked_polls_per_shard_max,
                                           "limits.parked_polls_per_shard", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.parked_polls_per_shard_max); }},
    {"limits.parked_polls_total", "--parked-polls-total", "HARK_PARKED_POLLS_TOTAL", "",
     "parked polls over all shards (full: 5 FeatureUnavailable)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, parked_limit>(o.parked_polls_total_max, "limits.parked_polls_total",
                                           v);
     },
     [](const ServerOptions& o) { return std::to_string(o.parked_polls_total_max); }},
    {"heartbeat.enabled", "--heartbeat-enabled", "HARK_HEARTBEAT_ENABLED", "IGGY_HEARTBEAT_ENABLED",
     "true: close a client silent for heartbeat.interval x 1.2 (Iggy 0.8.0's [heartbeat])",
     [](ServerOptions& o, std::string_view v) {
       return apply_bool(o.heartbeat_enabled, "heartbeat.enabled", v);
     },
     [](const ServerOptions& o) { return std::string(o.heartbeat_enabled ? "true" : "false"); }},
    {"heartbeat.interval", "--heartbeat-interval", "HARK_HEARTBEAT_INTERVAL",
     "IGGY_HEARTBEAT_INTERVAL", "how often clients are expected to ping (heartbeat enabled)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       // Bounded so that 1.2 × it, added to a monotonic instant, cannot overflow.
       Duration interval{};
       std::string error = apply_duration(interval, "heartbeat.interval", v, false);
       if (error.empty() && interval > std::chrono::hours(24)) {
         error = bad("heartbeat.interval", v, "a duration up to 24h");
       }
       if (error.empty()) o.heartbeat_interval = interval;
       return error;
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.heartbeat_interval)); }},
    {"metrics.address", "--metrics-address", "HARK_METRICS_ADDRESS", "",
     "serve GET /metrics (Prometheus text format) on this HOST:PORT (empty: off)",
     [](ServerOptions& o, std::string_view v) {
       return apply_address(o.metrics_address, "metrics.address", v, true);
     },
     [](const ServerOptions& o) { return toml_string(o.metrics_address); }},
    {"metrics.max_partition_series", "--metrics-max-partition-series",
     "HARK_METRICS_MAX_PARTITION_SERIES", "",
     "partitions with their own hark_partition_next_offset series (the rest: one series)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<0, series_limit>(o.metrics_max_partition_series,
                                           "metrics.max_partition_series", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.metrics_max_partition_series); }},
    {"metrics.max_consumer_series", "--metrics-max-consumer-series",
     "HARK_METRICS_MAX_CONSUMER_SERIES", "",
     "consumers and groups with their own hark_consumer_lag_messages series (the rest: one)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<0, series_limit>(o.metrics_max_consumer_series,
                                           "metrics.max_consumer_series", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.metrics_max_consumer_series); }},
    {"metrics.request_timeout", "--metrics-request-timeout", "HARK_METRICS_REQUEST_TIMEOUT", "",
     "a scrape's whole exchange (request in, answer out) must end within this",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.metrics_request_timeout, "metrics.request_timeout", v, false);
     },
     [](const ServerOptions& o) {
       return toml_string(format_duration(o.metrics_request_timeout));
     }},
    {"tcp.tls.enabled", "--tls-enabled", "HARK_TLS_ENABLED", "IGGY_TCP_TLS_ENABLED",
     "true: clients connect with TLS (needs the cert and key files; Iggy 0.8.0's [tcp.tls])",
     [](ServerOptions& o, std::string_view v) {
       return apply_bool(o.tls_enabled, "tcp.tls.enabled", v);
     },
     [](const ServerOptions& o) { return std::string(o.tls_enabled ? "true" : "false"); }},
    {"tcp.tls.self_signed", "--tls-self-signed", "HARK_TLS_SELF_SIGNED", "IGGY_TCP_TLS_SELF_SIGNED",
     "Iggy's key; harkd generates no certificate: only false",
     [](ServerOptions& o, std::string_view v) {
       return apply_bool(o.tls_self_signed, "tcp.tls.self_signed", v);
     },
     [](const ServerOptions& o) { return std::string(o.tls_self_signed ? "true" : "false"); }},
    {"tcp.tls.cert_file", "--tls-cert", "HARK_TLS_CERT_FILE", "IGGY_TCP_TLS_CERT_FILE",
     "PEM certificate chain, leaf first (as a flag: turns TLS on)",
     [](ServerOptions& o, std::string_view v) {
       o.tls_cert_file = std::string(v);
       return std::string();
     },
     [](const ServerOptions& o) { return toml_string(o.tls_cert_file); }},
    {"tcp.tls.key_file", "--tls-key", "HARK_TLS_KEY_FILE", "IGGY_TCP_TLS_KEY_FILE",
     "PEM private key of the certificate (as a flag: turns TLS on)",
     [](ServerOptions& o, std::string_view v) {
       o.tls_key_file = std::string(v);
       return std::string();
     },
     [](const ServerOptions& o) { return toml_string(o.tls_key_file); }},
    {"node.id", "--node-id", "HARK_NODE_ID", "", "this node's id",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<0, UINT32_MAX>(o.node_id, "node.id", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.node_id); }},
    {"node.name", "--node-name", "HARK_NODE_NAME", "",
     "this node's name in cluster metadata (cluster disabled)",
     [](ServerOptions& o, std::string_view v) { return apply_name(o.node_name, "node.name", v); },
     [](const ServerOptions& o) { return toml_string(o.node_name); }},
    {"node.advertised_address", "--advertised-address", "HARK_ADVERTISED_ADDRESS", "",
     "HOST:PORT clients are told to use (empty: the bound address)",
     [](ServerOptions& o, std::string_view v) {
       return apply_address(o.advertised_address, "node.advertised_address", v, true);
     },
     [](const ServerOptions& o) { return toml_string(o.advertised_address); }},
    {"node.link_address", "--node-link-address", "HARK_NODE_LINK_ADDRESS", "",
     "HOST:PORT this node listens on for node links (cluster mode; port 0: any)",
     [](ServerOptions& o, std::string_view v) {
       return apply_address(o.node_link_address, "node.link_address", v, true);
     },
     [](const ServerOptions& o) { return toml_string(o.node_link_address); }},
    {"node.advertised_link_address", "--advertised-link-address", "HARK_ADVERTISED_LINK_ADDRESS",
     "", "HOST:PORT the other nodes dial for node links (empty: the bound link address)",
     [](ServerOptions& o, std::string_view v) {
       return apply_address(o.node_advertised_link_address, "node.advertised_link_address", v,
                            true);
     },
     [](const ServerOptions& o) { return toml_string(o.node_advertised_link_address); }},
    {"cluster.enabled", "--cluster-enabled", "HARK_CLUSTER_ENABLED", "IGGY_CLUSTER_ENABLED",
     "true: cluster metadata reports the cluster.* layout (metadata only)",
     [](ServerOptions& o, std::string_view v) {
       return apply_bool(o.cluster_enabled, "cluster.enabled", v);
     },
     [](const ServerOptions& o) -> std::string { return o.cluster_enabled ? "true" : "false"; }},
    {"cluster.name", "--cluster-name", "HARK_CLUSTER_NAME", "IGGY_CLUSTER_NAME",
     "the cluster's name in cluster metadata (cluster enabled)",
     [](ServerOptions& o, std::string_view v) {
       return apply_name(o.cluster_name, "cluster.name", v);
     },
     [](const ServerOptions& o) { return toml_string(o.cluster_name); }},
    {"cluster.node_name", "--cluster-node-name", "HARK_CLUSTER_NODE_NAME",
     "IGGY_CLUSTER_NODE_CURRENT_NAME", "this node's name in cluster metadata (cluster enabled)",
     [](ServerOptions& o, std::string_view v) {
       return apply_name(o.cluster_node_name, "cluster.node_name", v);
     },
     [](const ServerOptions& o) { return toml_string(o.cluster_node_name); }},
    {"cluster.node_ip", "--cluster-node-ip", "HARK_CLUSTER_NODE_IP", "IGGY_CLUSTER_NODE_CURRENT_IP",
     "this node's ip in cluster metadata (cluster enabled)",
     [](ServerOptions& o, std::string_view v) {
       return apply_name(o.cluster_node_ip, "cluster.node_ip", v);
     },
     [](const ServerOptions& o) { return toml_string(o.cluster_node_ip); }},
    {"cluster.node_ports", "--cluster-node-ports", "HARK_CLUSTER_NODE_PORTS", "",
     "QUIC/HTTP/WEBSOCKET ports reported for this node (cluster enabled)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       const std::optional<TransportPorts> ports = parse_transport_ports(v);
       if (!ports)
         return bad("cluster.node_ports", v, "QUIC/HTTP/WEBSOCKET such as 8080/3000/8092");
       o.cluster_node_ports = *ports;
       return {};
     },
     [](const ServerOptions& o) {
       return toml_string(format_transport_ports(o.cluster_node_ports));
     }},
    {"cluster.others", "--cluster-others", "HARK_CLUSTER_OTHERS", "",
     "the other nodes reported, NAME@IP:TCP/QUIC/HTTP/WEBSOCKET,... (cluster enabled)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       std::optional<std::vector<ClusterPeer>> peers = parse_cluster_peers(v);
       if (!peers) {
         return bad("cluster.others", v,
                    "NAME@IP:TCP/QUIC/HTTP/WEBSOCKET, comma-separated (empty: none)");
       }
       o.cluster_others = std::move(*peers);
       return {};
     },
     [](const ServerOptions& o) { return toml_string(format_cluster_peers(o.cluster_others)); }},
    {"cluster.etcd", "--etcd", "HARK_ETCD", "",
     "etcd client URLs, comma-separated; set: cluster mode, coordinated by etcd (docs/cluster.md)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       std::optional<std::vector<std::string>> urls = parse_name_list(v);
       const auto is_url = [](const std::string& url) {
         return url.starts_with("http://") || url.starts_with("https://");
       };
       if (!urls || !std::all_of(urls->begin(), urls->end(), is_url)) {
         return bad("cluster.etcd", v, "comma-separated http(s)://HOST:PORT (empty: one node)");
       }
       o.etcd_endpoints = std::move(*urls);
       return {};
     },
     [](const ServerOptions& o) { return toml_string(format_name_list(o.etcd_endpoints)); }},
    {"cluster.etcd_user", "--etcd-user", "HARK_ETCD_USER", "",
     "the etcd user harkd authenticates as (empty: etcd without auth)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       o.etcd_user = std::string(v);
       return {};
     },
     [](const ServerOptions& o) { return toml_string(o.etcd_user); }},
    {"cluster.etcd_password", "--etcd-password", "HARK_ETCD_PASSWORD", "",
     "the etcd user's password (prefer cluster.etcd_password_file)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       o.etcd_password = std::string(v);
       return {};
     },
     // Never printed.
     [](const ServerOptions& o) { return toml_string(o.etcd_password.empty() ? "" : "<hidden>"); }},
    {"cluster.etcd_password_file", "--etcd-password-file", "HARK_ETCD_PASSWORD_FILE", "",
     "a file whose first line is the etcd user's password",
     [](ServerOptions& o, std::string_view v) -> std::string {
       if (v.empty()) {
         o.etcd_password_file.clear();
         return {};
       }
       std::ifstream file{std::string(v)};
       std::string line;
       if (!file || !std::getline(file, line))
         return bad("cluster.etcd_password_file", v, "a readable file");
       o.etcd_password = line;
       o.etcd_password_file = std::string(v);
       return {};
     },
     [](const ServerOptions& o) { return toml_string(o.etcd_password_file); }},
    {"cluster.etcd_ca_file", "--etcd-ca-file", "HARK_ETCD_CA_FILE", "",
     "the CA file that signed etcd's certificate, for https:// endpoints (empty: the system's)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       return apply_readable_file(o.etcd_ca_file, "cluster.etcd_ca_file", v);
     },
     [](const ServerOptions& o) { return toml_string(o.etcd_ca_file); }},
    {"cluster.etcd_cert_file", "--etcd-cert-file", "HARK_ETCD_CERT_FILE", "",
     "the client certificate harkd shows an etcd that runs with --client-cert-auth",
     [](ServerOptions& o, std::string_view v) -> std::string {
       return apply_readable_file(o.etcd_cert_file, "cluster.etcd_cert_file", v);
     },
     [](const ServerOptions& o) { return toml_string(o.etcd_cert_file); }},
    {"cluster.etcd_key_file", "--etcd-key-file", "HARK_ETCD_KEY_FILE", "",
     "the key of cluster.etcd_cert_file",
     [](ServerOptions& o, std::string_view v) -> std::string {
       return apply_readable_file(o.etcd_key_file, "cluster.etcd_key_file", v);
     },
     [](const ServerOptions& o) { return toml_string(o.etcd_key_file); }},
    {"cluster.secret_file", "--cluster-secret-file", "HARK_CLUSTER_SECRET_FILE", "",
     "the cluster secret node links authenticate with (cluster mode: required, >= 32 bytes, "
     "not world-readable)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       o.cluster_secret_file = std::string(v);
       return {};
     },
     [](const ServerOptions& o) { return toml_string(o.cluster_secret_file); }},
    {"cluster.tls_cert", "--node-link-tls-cert", "HARK_CLUSTER_TLS_CERT", "",
     "this node's certificate for mutual TLS on node links (PEM; with tls_key and tls_ca)",
     [](ServerOptions& o, std::string_view v) {
       return apply_readable_file(o.link_tls_cert_file, "cluster.tls_cert", v);
     },
     [](const ServerOptions& o) { return toml_string(o.link_tls_cert_file); }},
    {"cluster.tls_key", "--node-link-tls-key", "HARK_CLUSTER_TLS_KEY", "",
     "the key of cluster.tls_cert (PEM)",
     [](ServerOptions& o, std::string_view v) {
       return apply_readable_file(o.link_tls_key_file, "cluster.tls_key", v);
     },
     [](const ServerOptions& o) { return toml_string(o.link_tls_key_file); }},
    {"cluster.tls_ca", "--node-link-tls-ca", "HARK_CLUSTER_TLS_CA", "",
     "the CA every node's link certificate must be signed by (PEM; a CA for this cluster only)",
     [](ServerOptions& o, std::string_view v) {
       return apply_readable_file(o.link_tls_ca_file, "cluster.tls_ca", v);
     },
     [](const ServerOptions& o) { return toml_string(o.link_tls_ca_file); }},
    {"cluster.lease_ttl", "--cluster-lease-ttl", "HARK_CLUSTER_LEASE_TTL", "",
     "how long a silent node stays a member (its etcd lease; kept alive every third of it)",
     [](ServerOptions& o, std::string_view v) -> std::string {
       Duration ttl{};
       std::string error = apply_duration(ttl, "cluster.lease_ttl", v, false);
       if (error.empty() && (ttl < std::chrono::seconds(2) || ttl > std::chrono::minutes(5))) {
         error = bad("cluster.lease_ttl", v, "a duration from 2s to 5m");
       }
       if (error.empty()) o.cluster_lease_ttl = ttl;
       return error;
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.cluster_lease_ttl)); }},
    {"cluster.min_replication_factor", "--min-replication-factor", "HARK_MIN_REPLICATION_FACTOR",
     "",
     "the least replication factor a topic gets, whatever CreateTopic asks (0: 3 in cluster "
     "mode, 1 on one node)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<0, 255>(o.min_replication_factor, "cluster.min_replication_factor", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.min_replication_factor); }},
    {"cluster.replica_replace_after", "--replica-replace-after", "HARK_REPLICA_REPLACE_AFTER", "",
     "how long a replica's node may be gone before the controller replaces it with a live node",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.replica_replace_after, "cluster.replica_replace_after", v, false);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.replica_replace_after)); }},
    {"auth.root_username", "--root-username", "HARK_ROOT_USERNAME", "IGGY_ROOT_USERNAME",
     "the root user's name, used only when the users log is created",
     [](ServerOptions& o, std::string_view v) -> std::string {
       if (v.size() < 3 || v.size() > 50) return bad("auth.root_username", v, "3..50 bytes");
       o.root_username = std::string(v);
       return {};
     },
     [](const ServerOptions& o) { return toml_string(o.root_username); }},
    {"auth.root_password", "--root-password", "HARK_ROOT_PASSWORD", "IGGY_ROOT_PASSWORD",
     "the root user's password, used only when the users log is created",
     [](ServerOptions& o, std::string_view v) -> std::string {
       if (v.size() < 3 || v.size() > 100)
         return "invalid auth.root_password: expected 3..100 bytes";
       o.root_password = std::string(v);
       return {};
     },
     // Never printed: --print-config output is often pasted into tickets.
     [](const ServerOptions& o) {
       return toml_string(o.root_password == default_root_password ? o.root_password : "<hidden>");
     }},
    {"auth.allow_default_root_password", "--allow-default-root-password",
     "HARK_ALLOW_DEFAULT_ROOT_PASSWORD", "",
     "true: listen on a non-loopback address even while root's password is the default",
     [](ServerOptions& o, std::string_view v) {
       return apply_bool(o.allow_default_root_password, "auth.allow_default_root_password", v);
     },
     [](const ServerOptions& o) -> std::string {
       return o.allow_default_root_password ? "true" : "false";
     }},
    {"auth.login_failures_max", "--login-failures-max", "HARK_LOGIN_FAILURES_MAX", "",
     "failed logins from one address before a lockout (0: no throttling)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<0, 1'000'000>(o.login_failures_max, "auth.login_failures_max", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.login_failures_max); }},
    {"auth.login_lockout", "--login-lockout", "HARK_LOGIN_LOCKOUT", "",
     "how long an address is refused after too many failed logins",
     [](ServerOptions& o, std::string_view v) {
       return apply_duration(o.login_lockout, "auth.login_lockout", v, false);
     },
     [](const ServerOptions& o) { return toml_string(format_duration(o.login_lockout)); }},
    {"auth.hash_threads", "--auth-threads", "HARK_AUTH_THREADS", "",
     "threads that hash passwords and tokens (off the shards), 1..64",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, 64>(o.auth_threads, "auth.hash_threads", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.auth_threads); }},
    {"auth.queue_max", "--auth-queue-max", "HARK_AUTH_QUEUE_MAX", "",
     "logins and user commands waiting for a hash thread before more are refused",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, 1'000'000>(o.auth_queue_max, "auth.queue_max", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.auth_queue_max); }},
    {"auth.tokens_per_user_max", "--tokens-per-user-max", "HARK_TOKENS_PER_USER_MAX", "",
     "personal access tokens a user may hold (Iggy 0.8.0: 100)",
     [](ServerOptions& o, std::string_view v) {
       return apply_count<1, 100'000>(o.tokens_per_user_max, "auth.tokens_per_user_max", v);
     },
     [](const ServerOptions& o) { return std::to_string(o.tokens_per_user_max); }},
};

const Setting* setting_of_key(std::string_view key) {
  for (const Setting& setting : settings) {
    if (setting.key == key) return &setting;
  }
  return nullptr;
}

const Setting* setting_of_flag(std::string_view flag) {
  for (const Setting& setting : settings) {
    if (setting.flag == flag) return &setting;
  }
  return nullptr;
}

ParsedFlags failed(std::string error) {
  ParsedFlags parsed;
  parsed.outcome = ParsedFlags::Outcome::error;
  parsed.error = std::move(error);
  return parsed;
}

// A TOML value as the text a flag would carry; nullopt for arrays, tables and floats.
std::optional<std::string> text_of(const toml::node& node) {
  if (const auto* text = node.as_string()) return text->get();
  if (const auto* number = node.as_integer()) {
    if (number->get() < 0) return std::nullopt;
    return std::to_string(number->get());
  }
  if (const auto* flag = node.as_boolean()) return flag->get() ? "true" : "false";
  return std::nullopt;
}

// Applies one table of the file whose keys start with `prefix` ("server.", "tcp.tls."): every
// key must be a setting's; a table inside it ([tcp.tls]) is applied with its name added.
std::string apply_table(const std::string& path, const toml::table& table,
                        const std::string& prefix, ServerOptions& options) {
  for (const auto& [name, value] : table) {
    const std::string key = prefix + std::string(name.str());
    if (const toml::table* inner = value.as_table()) {
      std::string error = apply_table(path, *inner, key + ".", options);
      if (!error.empty()) return error;
      continue;
    }
    const Setting* setting = setting_of_key(key);
    if (setting == nullptr) return "config file " + path + ": unknown key '" + key + "'";
    const std::optional<std::string> text = text_of(value);
    if (!text) return "config file " + path + ": " + key + " has a value of the wrong type";
    std::string error = setting->apply(options, *text);
    if (!error.empty()) return "config file " + path + ": " + error;
  }
  return {};
}

// Applies the file at `path`: every key must be a setting's.
std::string apply_file(const std::string& path, ServerOptions& options) {
  toml::parse_result parsed = toml::parse_file(path);
  if (!parsed) {
    std::ostringstream error;
    error << "config file " << path << ": " << parsed.error().description() << " (line "
          << parsed.error().source().begin.line << ")";
    return error.str();
  }
  for (const auto& [section_key, section] : parsed.table()) {
    if (section.as_table() == nullptr) {
      return "config file " + path + ": unknown key '" + std::string(section_key.str()) +
             "' (settings live in sections: [server], [storage], ...)";
    }
  }
  return apply_table(path, parsed.table(), "", options);
}

// Applies HARK_* and the matching IGGY_* variables (HARK_* wins where both are set).
std::string apply_environment(std::span<const char* const> environment, ServerOptions& options,
                              std::vector<std::string>& warnings) {
  auto lookup = [&](std::string_view name) -> std::optional<std::string_view> {
    if (name.empty()) return std::nullopt;
    for (const char* entry : environment) {
      const std::string_view text = entry;
      if (text.size() > name.size() && text.starts_with(name) && text[name.size()] == '=') {
        return text.substr(name.size() + 1);
      }
    }
    return std::nullopt;
  };
  for (const Setting& setting : settings) {
    std::optional<std::string_view> value = lookup(setting.env);
    std::string_view source = setting.env;
    if (!value) {
      value = lookup(setting.iggy_env);
      source = setting.iggy_env;
    }
    if (!value) continue;
    std::string error = setting.apply(options, *value);
    if (!error.empty()) return "environment " + std::string(source) + ": " + error;
  }
  for (const char* entry : environment) {
    const std::string_view text = entry;
    if (!text.starts_with("HARK_")) continue;
    const std::string_view name = text.substr(0, text.find('='));
    const bool known = name == "HARK_CONFIG" ||
                       std::any_of(std::begin(settings), std::end(settings),
                                   [&](const Setting& setting) { return setting.env == name; });
    if (!known)
      warnings.push_back("unknown environment variable " + std::string(name) + " (ignored)");
  }
  return {};
}

// A flag and its value, from "--flag value" or "--flag=value".
struct FlagValue {
  std::string_view name;
  std::string_view value;
};

std::string split_flags(std::span<const char* const> args, std::vector<FlagValue>& flags,
                        bool& help, bool& print) {
  for (size_t i = 0; i < args.size(); i++) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      continue;
    }
    if (arg == "--print-config") {
      print = true;
      continue;
    }
    if (!arg.starts_with("--")) return "unexpected argument '" + std::string(arg) + "'";
    FlagValue flag{arg, {}};
    if (const size_t equals = arg.find('='); equals != std::string_view::npos) {
      flag.name = arg.substr(0, equals);
      flag.value = arg.substr(equals + 1);
    } else if (i + 1 < args.size()) {
      flag.value = args[++i];
    } else {
      return "flag '" + std::string(arg) + "' needs a value";
    }
    if (flag.name != "--config" && setting_of_flag(flag.name) == nullptr) {
      return "unknown flag '" + std::string(flag.name) + "'";
    }
    flags.push_back(flag);
  }
  return {};
}

// etcd's client certificate and its key go together; TLS settings without an https:// endpoint
// would be silently unused.
std::string check_etcd_tls(const ServerOptions& options) {
  if (options.etcd_cert_file.empty() != options.etcd_key_file.empty()) {
    return "cluster.etcd_cert_file and cluster.etcd_key_file go together (--etcd-cert-file FILE "
           "--etcd-key-file FILE)";
  }
  const bool any_tls = !options.etcd_ca_file.empty() || !options.etcd_cert_file.empty();
  const auto is_https = [](const std::string& url) { return url.starts_with("https://"); };
  if (any_tls &&
      !std::any_of(options.etcd_endpoints.begin(), options.etcd_endpoints.end(), is_https)) {
    return "cluster.etcd_ca_file, etcd_cert_file and etcd_key_file need https:// etcd endpoints "
           "(cluster.etcd, --etcd)";
  }
  return {};
}

// Mutual TLS on node links takes all three files, and node links exist in cluster mode only:
// a part of it, or all of it on one node, would be silently unused.
std::string check_link_tls(const ServerOptions& options) {
  const int set = int{!options.link_tls_cert_file.empty()} +
                  int{!options.link_tls_key_file.empty()} + int{!options.link_tls_ca_file.empty()};
  if (set == 0) return {};
  if (set != 3) {
    return "cluster.tls_cert, cluster.tls_key and cluster.tls_ca go together (--node-link-tls-cert "
           "FILE --node-link-tls-key FILE --node-link-tls-ca FILE)";
  }
  if (options.etcd_endpoints.empty()) {
    return "cluster.tls_cert, tls_key and tls_ca protect node links, which run in cluster mode "
           "only (cluster.etcd, --etcd)";
  }
  return {};
}

// One node holds one copy: a minimum above 1 there would be silently unused.
std::string check_replication(const ServerOptions& options) {
  if (options.etcd_endpoints.empty() && options.min_replication_factor > 1) {
    return "cluster.min_replication_factor above 1 needs cluster mode (cluster.etcd, --etcd): "
           "one node holds one copy";
  }
  return {};
}

// TLS needs both files; harkd makes no certificate of its own (Iggy's self_signed).
std::string check_tls(const ServerOptions& options) {
  if (!options.tls_enabled) return {};
  if (options.tls_self_signed) {
    return "tcp.tls.self_signed = true: harkd generates no certificate; set "
           "tcp.tls.cert_file and tcp.tls.key_file (--tls-cert, --tls-key) and self_signed = "
           "false";
  }
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    return "tcp.tls.enabled needs both tcp.tls.cert_file and tcp.tls.key_file (--tls-cert FILE "
           "--tls-key FILE)";
  }
  return {};
}

// A default wait for classic polls must name whom it is for: never silently everyone.
std::string check_classic_wait_scope(const ServerOptions& options) {
  if (options.classic_default_wait == Duration(0) || !options.classic_default_wait_users.empty() ||
      !options.classic_default_wait_streams.empty()) {
    return {};
  }
  return "polling.classic_default_wait is set but applies to nobody: list users in "
         "polling.classic_default_wait_users (* for every user) or streams in "
         "polling.classic_default_wait_streams";
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  if (text == "0") return Duration(0);
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') digits++;
  if (digits == 0 || digits > 12) return std::nullopt;
  const std::optional<uint64_t> number = parse_number(text.substr(0, digits), 0, UINT64_MAX);
  if (!number) return std::nullopt;
  const auto count = static_cast<int64_t>(*number);
  const std::string_view unit = text.substr(digits);
  int64_t nanos_per_unit = 0;
  if (unit == "us") nanos_per_unit = 1'000;
  if (unit == "ms") nanos_per_unit = 1'000'000;
  if (unit == "s") nanos_per_unit = 1'000'000'000;
  if (unit == "m") nanos_per_unit = 60'000'000'000;
  if (unit == "h") nanos_per_unit = 3'600'000'000'000;
  // 12 digits of hours overflow int64 nanoseconds: refuse rather than wrap.
  if (nanos_per_unit == 0 || count > Duration::max().count() / nanos_per_unit) return std::nullopt;
  return Duration(count * nanos_per_unit);
}

std::string format_duration(Duration duration) {
  using std::chrono::duration_cast;
  const auto micros = duration_cast<std::chrono::microseconds>(duration).count();
  if (micros == 0) return "0";
  struct Unit {
    int64_t micros;
    const char* name;
  };
  for (const Unit unit :
       {Unit{3'600'000'000, "h"}, Unit{60'000'000, "m"}, Unit{1'000'000, "s"}, Unit{1'000, "ms"}}) {
    if (micros % unit.micros == 0) return std::to_string(micros / unit.micros) + unit.name;
  }
  return std::to_string(micros) + "us";
}

std::optional<uint64_t> parse_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') digits++;
  if (digits == 0 || digits > 19) return std::nullopt;
  const std::optional<uint64_t> number = parse_number(text.substr(0, digits), 0, UINT64_MAX);
  if (!number) return std::nullopt;
  std::string_view unit = text.substr(digits);
  if (unit.starts_with(' ')) unit.remove_prefix(1);
  uint64_t multiplier = 0;
  if (unit.empty() || unit == "B") multiplier = 1;
  if (unit == "KB") multiplier = 1000;
  if (unit == "MB") multiplier = 1000 * 1000;
  if (unit == "GB") multiplier = 1000 * 1000 * 1000;
  if (unit == "KiB") multiplier = 1ull << 10;
  if (unit == "MiB") multiplier = 1ull << 20;
  if (unit == "GiB") multiplier = 1ull << 30;
  if (multiplier == 0 || *number > UINT64_MAX / multiplier) return std::nullopt;
  return *number * multiplier;
}

ParsedFlags load_config(std::span<const char* const> args, std::span<const char* const> environment,
                        uint32_t shards_default) {
  ParsedFlags parsed;
  parsed.options.shards_count = std::max<uint32_t>(1, std::min(shards_default, shards_max));
  std::vector<FlagValue> flags;
  bool help = false;
  bool print = false;
  std::string error = split_flags(args, flags, help, print);
  if (help) {
    parsed.outcome = ParsedFlags::Outcome::help;
    return parsed;
  }
  if (!error.empty()) return failed(std::move(error));

  std::string config_path;
  for (const char* entry : environment) {
    const std::string_view text = entry;
    if (text.starts_with("HARK_CONFIG=")) config_path = std::string(text.substr(12));
  }
  for (const FlagValue& flag : flags) {
    if (flag.name == "--config") config_path = std::string(flag.value);
  }
  if (!config_path.empty()) {
    error = apply_file(config_path, parsed.options);
    if (!error.empty()) return failed(std::move(error));
  }
  error = apply_environment(environment, parsed.options, parsed.warnings);
  if (!error.empty()) return failed(std::move(error));
  for (const FlagValue& flag : flags) {
    if (flag.name == "--config") continue;
    error = setting_of_flag(flag.name)->apply(parsed.options, flag.value);
    if (!error.empty()) return failed(std::move(error));
    // A certificate or key on the command line asks for TLS.
    if (flag.name == "--tls-cert" || flag.name == "--tls-key") parsed.options.tls_enabled = true;
  }
  error = check_tls(parsed.options);
  if (error.empty()) error = check_etcd_tls(parsed.options);
  if (error.empty()) error = check_link_tls(parsed.options);
  if (error.empty()) error = check_replication(parsed.options);
  if (!error.empty()) return failed(std::move(error));
  error = check_classic_wait_scope(parsed.options);
  if (!error.empty()) return failed(std::move(error));
  if (print) parsed.outcome = ParsedFlags::Outcome::print;
  return parsed;
}

ParsedFlags parse_flags(std::span<const char* const> args, uint32_t shards_default) {
  return load_config(args, {}, shards_default);
}

std::string print_config(const ServerOptions& options) {
  std::string out = "# harkd's effective configuration (docs/operations.md)\n";
  std::string_view section;
  for (const Setting& setting : settings) {
    const size_t dot = setting.key.rfind('.');
    const std::string_view this_section = setting.key.substr(0, dot);
    if (this_section != section) {
      section = this_section;
      out += "\n[" + std::string(section) + "]\n";
    }
    out += std::string(setting.key.substr(dot + 1)) + " = " + setting.print(options) + "\n";
  }
  return out;
}

std::string usage() {
  std::string out =
      "usage: harkd [flags]\n"
      "\n"
      "hark's server: Apache Iggy 0.8.0's classic TCP protocol, with deferred-response\n"
      "polling (wait_timeout_us). Prints 'harkd listening on HOST:PORT' when ready;\n"
      "SIGTERM or SIGINT stops it (parked polls are answered empty first); SIGUSR1 logs the\n"
      "wait-path counters. Precedence: flags > HARK_* / IGGY_* environment > --config file >\n"
      "defaults (docs/operations.md). Durations: 500us, 250ms, 5s, 2m, 1h. Sizes: 1048576,\n"
      "64KiB, 1GiB.\n"
      "\n"
      "  --config FILE                   a TOML file (also HARK_CONFIG)\n"
      "  --print-config                  print the effective configuration and exit\n"
      "  --help                          print this and exit\n";
  for (const Setting& setting : settings) {
    std::string flag = "  " + std::string(setting.flag) + " VALUE";
    flag.resize(std::max<size_t>(flag.size() + 1, 34), ' ');
    out += flag + std::string(setting.help) + "\n";
  }
  return out;
}

std::string_view durability_name(storage::Durability durability) {
  switch (durability) {
    case storage::Durability::memory: return "memory";
    case storage::Durability::write: return "write";
    case storage::Durability::interval: return "interval";
    case storage::Durability::always: return "always";
  }
  return "write";
}

}  // namespace hark::server
