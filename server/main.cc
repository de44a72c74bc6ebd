// harkd: hark's thin server. Parses flags, opens one SO_REUSEPORT listener per shard (all on
// one port), starts the broker with the server's ShardHooks, prints the ready line and waits
// for SIGTERM or SIGINT; then stops the broker (parked polls are answered empty first) and
// exits 0. Exit codes: 0 after a signal or --help, 1 when it cannot start, 2 for bad flags.
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <memory>
#include <span>
#include <thread>

#include "core/base/assert.h"
#include "core/base/log.h"
#include "core/broker/broker.h"
#include "io/socket.h"
#include "server/options.h"
#include "server/server.h"

namespace hark::server {
namespace {

int run(const ServerOptions& options, const sigset_t& stop_signals) {
  log::set_level(options.log_level);
  Result<io::SocketAddress> address = io::parse_address(options.address);
  HARK_ASSERT(address.ok());  // parse_flags() checked it.
  Result<std::vector<int>> listeners =
      open_listeners(*address, options.shards_count, options.listen_backlog);
  if (!listeners.ok()) {
    fprintf(stderr, "harkd: cannot listen on %s: %s\n", options.address.c_str(),
            std::string(error_name(listeners.error())).c_str());
    return 1;
  }
  const io::SocketAddress bound = *io::local_address(listeners->front());

  // Declared before the broker, so it is destroyed after it.
  Server server(options, std::move(listeners).value());
  core::BrokerOptions broker_settings = broker_options(options);
  broker_settings.hooks = &server;
  Result<std::unique_ptr<core::Broker>> broker = core::Broker::start(broker_settings);
  if (!broker.ok()) {
    fprintf(stderr, "harkd: the broker did not start: %s (see the log above)\n",
            std::string(error_name(broker.error())).c_str());
    log::flush();
    return 1;
  }
  printf("harkd listening on %s\n", bound.to_string().c_str());
  fflush(stdout);
  HARK_LOG_INFO("listening on %s with %u shards, data in %s", bound.to_string(),
                options.shards_count, options.data_directory);

  int signal_number = 0;
  while (sigwait(&stop_signals, &signal_number) != 0) {
  }
  HARK_LOG_INFO("%s: stopping", strsignal(signal_number));
  (*broker)->stop();
  broker->reset();
  HARK_LOG_INFO("stopped");
  log::flush();
  return 0;
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
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // Sends use MSG_NOSIGNAL; this covers anything else.

  const uint32_t cpus = std::max(1u, std::thread::hardware_concurrency());
  const ParsedFlags parsed = hark::server::parse_flags(
      std::span<const char* const>(argv + (argc > 0 ? 1 : 0),
                                   static_cast<size_t>(argc > 0 ? argc - 1 : 0)),
      cpus);
  switch (parsed.outcome) {
    case ParsedFlags::Outcome::help: printf("%s", hark::server::usage().c_str()); return 0;
    case ParsedFlags::Outcome::error:
      fprintf(stderr, "harkd: %s\n\n%s", parsed.error.c_str(), hark::server::usage().c_str());
      return 2;
    case ParsedFlags::Outcome::run: break;
  }
  return hark::server::run(parsed.options, stop_signals);
}
