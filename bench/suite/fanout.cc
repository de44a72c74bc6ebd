// `fanout`: K consumers (K = 1, 10, 100, 1000, 10 000) parked on one partition, each on its own
// connection, each polling the next offset with a 10 s wait. Per round the bench waits for them
// to park, sends one message carrying its send time, and records when the first and the last
// of the K polls returned; harkd's CPU over the round, divided by K, is its cost per woken poll
// (the producer's send included, amortized over K). The connections are spread over a few
// epoll loops in threads of their own (FleetPool), so at K = 10 000 the reading is not one
// thread's; each row says what those threads cost and how busy the busiest was. The producer is
// one more connection of the caller's loop, so no reply waits while the send is answered.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <thread>

#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/process_stats.h"
#include "hark/bench/suite/scenarios.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/poll_response.h"

namespace hark::bench {

// How long to let K fresh polls reach harkd and park before a send: they are written at once,
// so this covers harkd's reading and parking them.
std::chrono::microseconds park_settle(size_t polls) {
  return std::chrono::milliseconds(20) + std::chrono::microseconds(20 * polls);
}

size_t fanout_client_threads(const Options& options, size_t consumers) {
  if (options.client_threads > 0) return options.client_threads;
  if (consumers <= 100) return 1;
  return std::clamp<size_t>(consumers / 2500, 2, 4);
}

uint32_t fanout_connections(const Options& options) {
  const std::vector<size_t> sizes = fanout_sizes(options);
  const size_t largest = *std::max_element(sizes.begin(), sizes.end());
  return static_cast<uint32_t>(std::max<size_t>(2048, largest + 64));
}

std::vector<size_t> fanout_sizes(const Options& options) {
  if (!options.consumers.empty()) return options.consumers;
  return options.smoke ? std::vector<size_t>{1, 10} : std::vector<size_t>{1, 10, 100, 1000, 10000};
}

void FanoutTally::add_round(SteadyClock::time_point sent,
                            std::span<const SteadyClock::time_point> woken, int64_t cpu_ns,
                            const FleetPool& client) {
  add_client(client.round_cpu_ns(), client.round_busiest_fraction(), client.fleets());
  add_wakes(sent, woken, cpu_ns);
}

void FanoutTally::add_round(SteadyClock::time_point sent,
                            std::span<const SteadyClock::time_point> woken, int64_t cpu_ns,
                            const Fleet& client) {
  const LoopCost& cost = client.last_cost();
  const double busy = cost.wall_ns > 0 ? static_cast<double>(cost.wall_ns - cost.waited_ns) /
                                             static_cast<double>(cost.wall_ns)
                                       : 0.0;
  add_client(cost.cpu_ns, busy, 1);
  add_wakes(sent, woken, cpu_ns);
}

void FanoutTally::add_wakes(SteadyClock::time_point sent,
                            std::span<const SteadyClock::time_point> woken, int64_t cpu_ns) {
  cpu_known = cpu_known && cpu_ns >= 0;
  cpu_ns_total += cpu_ns;
  rounds++;
  const auto [first, last] = std::minmax_element(woken.begin(), woken.end());
  result.first_us.push_back(micros_between(sent, *first));
  result.last_us.push_back(micros_between(sent, *last));
}

void FanoutTally::add_client(int64_t cpu_ns, double busiest, size_t threads) {
  client_cpu_ns_total += cpu_ns;
  client_busiest_total += busiest;
  result.client_threads = threads;
}

FanoutResult FanoutTally::finish(size_t consumers) {
  const double per_woken =
      1e3 * static_cast<double>(std::max(rounds, 1)) * static_cast<double>(consumers);
  if (cpu_known && rounds > 0) {
    result.server_cpu_us_per_woken = static_cast<double>(cpu_ns_total) / per_woken;
  }
  if (rounds > 0) {
    result.client_cpu_us_per_woken = static_cast<double>(client_cpu_ns_total) / per_woken;
    result.client_busiest = client_busiest_total / rounds;
  }
  result.failed = false;
  return std::move(result);
}

namespace {

// What the loops' replies tell a hark fan-out round; called from every client thread, each
// for its own links.
struct HarkFanoutState {
  size_t pending = 0;  // Logins not yet answered (while opening, from one thread).
  std::vector<SteadyClock::time_point> woken;
  std::atomic<SteadyClock::rep> stamp{0};

  bool on_reply(size_t link, uint32_t status, std::span<const std::byte> payload,
                SteadyClock::time_point at) {
    if (status != 0) {
      std::fprintf(stderr, "fanout: harkd answered %s (%u)\n",
                   std::string(error_name(static_cast<Error>(status))).c_str(), status);
      return false;
    }
    if (pending > 0) pending--;
    if (link < woken.size()) woken[link] = at;
    if (payload.size() <= 16) return true;  // A login or the send's answer.
    auto decoded = protocol::decode_payload<protocol::PollMessagesResponse>(payload);
    if (!decoded.ok() || decoded->value.messages.count() != 1) {
      std::fprintf(stderr, "fanout: a poll answer without the one message\n");
      return false;
    }
    const auto sent = read_stamp((*decoded->value.messages.begin()).payload());
    stamp.store(sent.time_since_epoch().count(), std::memory_order_relaxed);
    return true;
  }
  SteadyClock::time_point sent() const {
    return SteadyClock::time_point(SteadyClock::duration(stamp.load()));
  }
};

}  // namespace

std::vector<uint64_t> round_replies(const FleetPool& pool) {
  std::vector<uint64_t> replies(pool.fleets());
  for (size_t f = 0; f < pool.fleets(); f++) replies[f] = pool.links_of(f);
  return replies;
}

FanoutResult measure_hark_fanout(const std::string& address, pid_t pid, size_t consumers,
                                 int rounds, size_t threads) {
  FanoutTally tally{.cpu_known = pid > 0};
  const std::optional<TopicIds> topic = create_topic(address, "fanout", 1);
  if (!topic) return tally.result;
  HarkFanoutState state;
  state.woken.resize(consumers);
  HarkReplies replies(
      [&](size_t link, uint32_t status, std::span<const std::byte> payload,
          SteadyClock::time_point at) { return state.on_reply(link, status, payload, at); });
  FleetPool fleet(replies, consumers + 1, threads);
  const size_t producer = consumers;  // The last link, in the caller's fleet.
  if (!open_fleet(fleet, address, state.pending)) return tally.result;
  const std::vector<uint64_t> expected = round_replies(fleet);  // Every link answers once.
  for (int round = 0; round < rounds; round++) {
    for (size_t i = 0; i < consumers; i++) {
      const protocol::Bytes poll = frame_of(poll_request(
          *topic, 0,
          {protocol::ConsumerKind::consumer,
           protocol::Identifier::numeric(static_cast<uint32_t>(i + 1))},
          {protocol::PollingKind::offset, static_cast<uint64_t>(round)}, 1, 10'000'000, false));
      if (!fleet.send(i, poll)) return tally.result;
    }
    std::this_thread::sleep_for(park_settle(consumers));
    std::optional<CpuWindow> cpu;
    const bool served = fleet.run_round(
        expected,
        [&] {
          cpu.emplace(pid);
          return fleet.send(producer, stamped_send_frame(*topic, 0));
        },
        SteadyClock::now() + std::chrono::seconds(15));
    if (!served) {
      std::fprintf(stderr, "fanout: round %d with K=%zu failed\n", round, consumers);
      return tally.result;
    }
    tally.add_round(state.sent(), state.woken, cpu->used_ns(), fleet);
  }
  return tally.finish(consumers);
}

std::string fanout_notes(int rounds, const FanoutResult& run) {
  char line[200];
  std::snprintf(line, sizeof line,
                "%d rounds; cpu per woken; client: %zu threads, %.2f µs cpu per woken, busiest "
                "thread busy %.0f %% of the round",
                rounds, run.client_threads, run.client_cpu_us_per_woken, run.client_busiest * 100);
  return line;
}

bool run_fanout(const Options& options, Report& report) {
  HarkServer server;
  if (!server.start(options, fanout_connections(options))) return false;
  bool ok = true;
  for (const size_t k : fanout_sizes(options)) {
    const int rounds = options.smoke ? 3 : k >= 10000 ? 20 : k >= 1000 ? 50 : k >= 100 ? 100 : 200;
    FanoutResult run = measure_hark_fanout(server.address(), server.pid(), k, rounds,
                                           fanout_client_threads(options, k));
    ok = ok && !run.failed;
    const std::string name = "fanout K=" + std::to_string(k);
    report.add({.name = name + " first woken", .samples_us = std::move(run.first_us)});
    report.add({.name = name + " last woken",
                .samples_us = run.last_us,
                .server_cpu_us_per_op = run.server_cpu_us_per_woken,
                .notes = fanout_notes(rounds, run)});
  }
  return server.stop() && ok;
}

}  // namespace hark::bench
