#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/base/log.h"
#include "core/broker/broker.h"
#include "protocol/framing.h"

namespace hark::server {

// What harkd runs with: its command-line flags, plus the fixed per-shard sizes of the server.
// Control plane: parsed once in main().
struct ServerOptions {
  // HOST:PORT of every shard's listener (SO_REUSEPORT). Port 0: one ephemeral port for all.
  std::string address = "127.0.0.1:8090";
  // Relative paths are relative to the working directory.
  std::string data_directory = "./data";
  uint32_t shards_count = 1;
  // Open client connections, over all shards (each shard takes its share, rounded up). A
  // connection over the limit is closed at once (logged).
  uint32_t connections_max = 10'000;
  log::Level log_level = log::Level::info;

  // Frame caps: control frames 10 MiB as Iggy 0.8.0; send frames up to protocol's default.
  protocol::FrameLimits frame_limits;
  // The per-shard pool of receive buffers (io::BufferRing): received bytes are copied into the
  // connection's own buffer and the ring buffer recycled at once, so a few suffice.
  uint32_t receive_buffers_count = 256;
  uint32_t receive_buffer_bytes = 16 * 1024;
  int listen_backlog = 1024;
};

// The outcome of parsing harkd's flags.
struct ParsedFlags {
  enum class Outcome : uint8_t { run, help, error };
  Outcome outcome = Outcome::run;
  ServerOptions options;
  std::string error;  // For Outcome::error: one line, for stderr.
};

// Parses harkd's flags (argv without the program name): --address HOST:PORT,
// --data-dir DIR, --shards N (1..1024), --connections-max N, --log-level LEVEL and --help;
// each as `--flag value` or `--flag=value`. `shards_default` is used without --shards (the
// number of CPUs; at least 1). Never exits and never prints: main() decides.
ParsedFlags parse_flags(std::span<const char* const> args, uint32_t shards_default);

// The --help text.
std::string usage();

// The broker settings these options stand for (hooks not set).
core::BrokerOptions broker_options(const ServerOptions& options);

}  // namespace hark::server
