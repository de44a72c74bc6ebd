#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "hark/tests/support/wait_until.h"

namespace hark::test {

// How a harkd process ended.
struct ProcessExit {
  bool exited = false;       // Returned from main or called exit(): `code` is valid.
  int code = -1;             // Exit status when `exited`.
  int signal = 0;            // The signal that ended it otherwise.
  bool killed_late = false;  // It did not stop within the bounded wait and was SIGKILLed.

  bool clean() const { return exited && code == 0 && !killed_late; }
};

// "exited 0", "killed by signal 6", "exited 1 (SIGKILLed after the wait ran out)".
std::string describe(const ProcessExit& exit);

// What harkd's stats line says (SIGUSR1; docs/operations.md §Logs): the counters a test waits
// on instead of sleeping. A poll counts in `parked_now` from the moment harkd parked it until
// it is answered; `woken` is counted by the partition's owner before the send that woke it is
// answered, so "this send woke nobody" is a `woken` that did not move.
struct HarkdStats {
  uint64_t connections = 0;
  uint64_t parked_now = 0;
  uint64_t parked = 0;
  uint64_t woken = 0;
  uint64_t timed_out = 0;
  uint64_t cancelled = 0;
  uint64_t aborted = 0;
  uint64_t rejected_full = 0;
  uint64_t reparked = 0;
  // Notifications (docs/notifications.md): a parked notify counts in parked_now too.
  uint64_t conditions_evaluated = 0;
  uint64_t condition_reports = 0;
  std::vector<uint32_t> by_shard;  // shard_connections=a/b
  uint64_t migrations = 0;
  uint64_t refused = 0;  // migrations_refused
  // Admission and connection limits (docs/operations.md §Connections).
  uint64_t refused_per_address = 0;
  uint64_t evicted = 0;
  uint64_t login_timeouts = 0;
  uint64_t write_timeouts = 0;
  uint64_t refused_no_files = 0;
  uint64_t heartbeat_evictions = 0;
  uint64_t receive_paused = 0;
  uint64_t tls_failures = 0;  // Failed TLS handshakes and records (docs/operations.md §TLS).
  // Cluster mode only (0 on one node): node links and forwarding (docs/cluster.md).
  uint64_t links_up = 0;
  uint64_t link_handshakes_refused = 0;
  uint64_t link_tls_failures = 0;
  uint64_t forwarded = 0;
  uint64_t forwarded_executed = 0;
  uint64_t links_dropped = 0;
  uint64_t forwarded_replayed = 0;
  uint64_t forwarded_forgotten = 0;
  uint64_t forward_unavailable = 0;
  uint64_t forwarded_not_hosted = 0;
  uint64_t rerouted = 0;
  uint64_t view_assignments = 0;
  uint64_t view_nodes = 0;
  uint32_t total() const;
};
std::ostream& operator<<(std::ostream& out, const HarkdStats& stats);

// One harkd child process for an end-to-end test or a benchmark, on loopback.
//
// start() creates a fresh data directory under $TMPDIR (or /tmp), runs
// `harkd --address 127.0.0.1:0 --data-dir DIR --shards N` with stdout on a pipe and stderr in
// DIR/../harkd.stderr, and waits (bounded) for harkd's one ready line
// `harkd listening on 127.0.0.1:PORT`. After that a thread drains stdout, so harkd never
// blocks on it. stop() sends SIGTERM and waits (bounded) for the exit; if the wait runs out
// it SIGKILLs and reports killed_late. The destructor SIGKILLs a harkd still running and
// removes the directory. The child gets SIGKILL if the thread that started it dies (a crashed
// or timed-out test leaves no harkd behind).
//
// Owned by one thread (the test's). Not thread-safe. Control plane: allocates freely.
class HarkdProcess {
 public:
  struct Options {
    std::string harkd_path;
    uint32_t shards_count = 2;
    std::chrono::milliseconds ready_timeout{30'000};  // Sanitizer builds start slowly.
    std::chrono::milliseconds stop_timeout{30'000};
    // Run on this existing data directory (a restart) instead of a fresh one; it is not
    // removed by the destructor.
    std::string data_directory;
    // Appended to harkd's command line (limits, config).
    std::vector<std::string> extra_args;
    // harkd's RLIMIT_NOFILE, soft and hard, set in the child before exec; 0: inherited.
    uint64_t open_files_max = 0;
  };

  HarkdProcess() = default;
  ~HarkdProcess();
  HarkdProcess(const HarkdProcess&) = delete;
  HarkdProcess& operator=(const HarkdProcess&) = delete;

  // Starts harkd and returns true once it printed its ready line. On failure (no such binary,
  // an early exit, no line before the timeout, a malformed line) the child is killed and
  // reaped, false is returned and error_text() says what happened. Once only.
  [[nodiscard]] bool start(const Options& options);

  // Sends SIGTERM and waits up to options.stop_timeout for the exit; then SIGKILL. Once only.
  ProcessExit stop();
  // Sends `signal` (SIGKILL for a crash, SIGUSR1 for the stats line). For SIGKILL the process
  // is reaped before this returns.
  void signal(int signal_number);
  // Where harkd's stderr goes.
  const std::string& stderr_path() const { return stderr_path_; }
  // Asks for a stats line (SIGUSR1) and returns it parsed; nullopt if no readable line comes
  // within 5 s. The line's call site logs at most 10 lines a second, so a request the rate
  // limit swallowed is sent again once that second is over.
  std::optional<HarkdStats> stats();

  // "127.0.0.1:PORT", valid after a successful start().
  const std::string& address() const { return address_; }
  uint16_t port() const { return port_; }
  // The port of the metrics listener (--metrics-address), from the line harkd prints with its
  // ready line (`harkd metrics on 127.0.0.1:PORT`); 0 if it printed none.
  uint16_t metrics_port() const;
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& data_directory() const { return data_directory_; }
  // Why start() failed, in words.
  const std::string& error_text() const { return error_text_; }

  // The last `lines` lines harkd wrote to stderr (for a failing test's report).
  std::string stderr_tail(size_t lines = 40) const;

 private:
  bool fail_start(std::string text);
  bool read_ready_line(std::chrono::milliseconds timeout);
  ProcessExit wait_exit(std::chrono::milliseconds timeout);
  void drain_stdout();

  Options options_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdout_fd_ = -1;
  std::thread drainer_;
  std::string root_directory_;  // Holds data/ and harkd.stderr; removed by the destructor.
  std::string data_directory_;
  std::string stderr_path_;
  std::string address_;
  uint16_t port_ = 0;
  std::string error_text_;
  std::string stdout_seen_;  // What harkd printed before its ready line (for error_text).
};

// How often wait_for_stats asks: well under the stats line's 10 a second.
inline constexpr std::chrono::milliseconds stats_every{150};

// Waits (bounded by signal_timeout) until `ready(stats)` holds for harkd's counters; true if
// it did. On false it prints the counters last seen to stderr (the caller's assertion fails).
template <typename Ready>
bool wait_for_stats(HarkdProcess& harkd, Ready ready) {
  HarkdStats seen;
  const auto check = [&] {
    const std::optional<HarkdStats> stats = harkd.stats();
    if (!stats.has_value()) return false;
    seen = *stats;
    return ready(seen);
  };
  if (wait_until(check, signal_timeout, stats_every)) return true;
  std::cerr << "harkd's counters never got there; last seen: " << seen << '\n';
  return false;
}

// Waits until exactly `count` polls are parked in `harkd` (over every shard): the signal a
// test waits on before it asserts that a poll has not been answered.
bool wait_until_parked(HarkdProcess& harkd, uint64_t count);

}  // namespace hark::test
