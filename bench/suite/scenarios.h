#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <sys/types.h>

#include "hark/bench/suite/fleet.h"
#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/options.h"
#include "hark/bench/suite/report.h"

namespace hark::bench {

// Each scenario fills its report and returns false if a measurement failed (a figure it could
// not take); a peer that is not installed is skipped with a note, which is no failure.
// docs/bench.md says what each one measures.
bool run_wake(const Options& options, Report& report);
bool run_fanout(const Options& options, Report& report);
bool run_group(const Options& options, Report& report);
bool run_idle(const Options& options, Report& report);
bool run_timeout(const Options& options, Report& report);
bool run_throughput(const Options& options, Report& report);
bool run_peers(const Options& options, Report& report);
bool run_classic(const Options& options, Report& report);
bool run_notify(const Options& options, Report& report);
bool run_cluster(const Options& options, Report& report);
bool run_replication(const Options& options, Report& report);
bool run_durable(const Options& options, Report& report);

// The wake between one producer and one parked consumer (one partition, idle `gap` before
// each message): latencies in µs, and harkd's CPU per message (-1 if unknown). Shared by
// `wake` and `peers` so both measure hark the same way.
struct WakeResult {
  std::vector<double> latency_us;
  double server_cpu_us_per_message = -1;
  uint64_t empty_polls = 0;
  bool failed = false;
};
WakeResult measure_hark_wake(const std::string& address, pid_t pid, int count,
                             std::chrono::microseconds gap);
// The same on an existing topic's partition 0, the producer and the consumer connected to
// two addresses (`cluster`: the consumer on the owner, or on a node that forwards its polls),
// the CPU per message summed over `pids` (none: unknown).
WakeResult measure_wake_between(const std::string& producer_address,
                                const std::string& consumer_address, const TopicIds& topic,
                                std::span<const pid_t> pids, int count,
                                std::chrono::microseconds gap);

// K consumers parked on one partition, one send per round: the first and the last woken of
// each round, harkd's CPU per woken poll, and what the client's reading threads cost (their
// CPU per woken poll, and the busiest one's share of the round spent out of epoll_wait: near
// 1 would make the client the bottleneck).
struct FanoutResult {
  std::vector<double> first_us;
  std::vector<double> last_us;
  double server_cpu_us_per_woken = -1;
  double client_cpu_us_per_woken = -1;
  double client_busiest = -1;  // Mean over rounds of the busiest client thread's busy share.
  size_t client_threads = 1;
  bool failed = false;
};
// `threads`: how many client threads read the replies (a FleetPool of that many fleets).
FanoutResult measure_hark_fanout(const std::string& address, pid_t pid, size_t consumers,
                                 int rounds, size_t threads);
// How many threads read K consumers' replies: --client-threads, else 1 up to K = 100, then
// one per 2500 consumers, between 2 and 4.
size_t fanout_client_threads(const Options& options, size_t consumers);
// The K values of `fanout` and `peers`: --consumers, else 1, 10, 100, 1000, 10 000 (smoke:
// 1, 10).
std::vector<size_t> fanout_sizes(const Options& options);
// A server's connection limit for those K (the largest plus room for the producer and admin).
uint32_t fanout_connections(const Options& options);
// A fan-out round's replies per fleet of `pool`: one per link (the K polls, the send).
std::vector<uint64_t> round_replies(const FleetPool& pool);
// A fan-out row's notes: rounds, and the client's threads, CPU per woken and busiest thread.
std::string fanout_notes(int rounds, const FanoutResult& run);
// The rounds of a fan-out measurement (hark's or a peer's), added up.
struct FanoutTally {
  FanoutResult result{.failed = true};  // Until finish().
  int64_t cpu_ns_total = 0;
  int64_t client_cpu_ns_total = 0;
  double client_busiest_total = 0;
  bool cpu_known = false;  // Whether the server's pid is known and every window was read.
  int rounds = 0;
  // A round: the message's send time, each consumer's wake time, the server's CPU (-1: none)
  // and the client pool that read it.
  void add_round(std::chrono::steady_clock::time_point sent,
                 std::span<const std::chrono::steady_clock::time_point> woken, int64_t cpu_ns,
                 const FleetPool& client);
  // The same, read by one Fleet's loop.
  void add_round(std::chrono::steady_clock::time_point sent,
                 std::span<const std::chrono::steady_clock::time_point> woken, int64_t cpu_ns,
                 const Fleet& client);
  void add_client(int64_t cpu_ns, double busiest, size_t threads);
  // The server side of a round, whichever client read it.
  void add_wakes(SteadyClock::time_point sent, std::span<const SteadyClock::time_point> woken,
                 int64_t cpu_ns);
  FanoutResult finish(size_t consumers);
};

// One producer sending `count` messages of `size` bytes in batches of `batch`, one consumer
// long-polling them (1000 per poll): the rate as the consumer sees it, and each poll's
// latency (its first message's send time to the poll's return).
struct ThroughputResult {
  std::vector<double> latency_us;
  double msgs_per_s = 0;
  double mb_per_s = 0;
  double server_cpu_us_per_message = -1;
  bool failed = false;
};
ThroughputResult measure_hark_throughput(const std::string& address, pid_t pid, size_t size,
                                         size_t count, size_t batch);
// The same on an existing topic's partition 0, the producer and the consumer connected to two
// addresses (`cluster`: both on the owner, or both on a node that forwards their requests),
// the CPU per message summed over `pids`.
ThroughputResult measure_throughput_between(const std::string& producer_address,
                                            const std::string& consumer_address,
                                            const TopicIds& topic, std::span<const pid_t> pids,
                                            size_t size, size_t count, size_t batch);
// `throughput`'s message sizes, counts and batches (smoke: small counts); `cluster` uses them.
struct ThroughputCase {
  size_t size = 0;
  size_t count = 0;
  size_t batch = 0;
};
std::vector<ThroughputCase> throughput_cases(const Options& options);
// Fills the rates (over `elapsed`) and the CPU per message of a run that received `received`
// of `count` messages of `size` bytes; failed if any is missing.
void finish_throughput(ThroughputResult& result, size_t received, size_t count, size_t size,
                       std::chrono::steady_clock::duration elapsed, int64_t cpu_ns, bool failed);

}  // namespace hark::bench
