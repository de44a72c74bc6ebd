// `fanout`: K consumers (K = 1, 10, 100, 1000) parked on one partition, each on its own
// connection in one epoll loop, each polling the next offset with a 10 s wait. Per round the
// bench waits for them to park, sends one message carrying its send time, and records when the
// first and the last of the K polls returned; harkd's CPU over the round, divided by K, is its
// cost per woken poll (the producer's send included, amortized over K). The producer is one
// more connection of the same loop, so no reply waits while the send is answered.
#include <algorithm>
#include <cstdio>
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

void FanoutTally::add_round(SteadyClock::time_point sent,
                            std::span<const SteadyClock::time_point> woken, int64_t cpu_ns) {
  cpu_known = cpu_known && cpu_ns >= 0;
  cpu_ns_total += cpu_ns;
  rounds++;
  const auto [first, last] = std::minmax_element(woken.begin(), woken.end());
  result.first_us.push_back(micros_between(sent, *first));
  result.last_us.push_back(micros_between(sent, *last));
}

FanoutResult FanoutTally::finish(size_t consumers) {
  if (cpu_known && rounds > 0) {
    result.server_cpu_us_per_woken = static_cast<double>(cpu_ns_total) / 1e3 /
                                     static_cast<double>(rounds) / static_cast<double>(consumers);
  }
  result.failed = false;
  return std::move(result);
}

namespace {

// What the loop's replies tell a hark fan-out round.
struct HarkFanoutState {
  size_t pending = 0;  // Logins, or a round's polls and its send's answer, not yet answered.
  std::vector<SteadyClock::time_point> woken;
  SteadyClock::time_point stamp;

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
    stamp = read_stamp((*decoded->value.messages.begin()).payload());
    return true;
  }
};

}  // namespace

FanoutResult measure_hark_fanout(const std::string& address, pid_t pid, size_t consumers,
                                 int rounds) {
  FanoutTally tally{.cpu_known = pid > 0};
  const std::optional<TopicIds> topic = create_topic(address, "fanout", 1);
  if (!topic) return tally.result;
  HarkFanoutState state;
  state.woken.resize(consumers);
  HarkReplies replies(
      [&](size_t link, uint32_t status, std::span<const std::byte> payload,
          SteadyClock::time_point at) { return state.on_reply(link, status, payload, at); });
  Fleet fleet(replies);
  const size_t producer = consumers;  // The last link.
  if (!open_fleet(fleet, address, consumers + 1, state.pending)) return tally.result;
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
    state.pending = consumers + 1;  // The polls and the send's answer.
    const CpuWindow cpu(pid);
    if (!fleet.send(producer, stamped_send_frame(*topic, 0)) ||
        !fleet.run([&] { return state.pending == 0; },
                   SteadyClock::now() + std::chrono::seconds(15))) {
      std::fprintf(stderr, "fanout: round %d with K=%zu failed\n", round, consumers);
      return tally.result;
    }
    tally.add_round(state.stamp, state.woken, cpu.used_ns());
  }
  return tally.finish(consumers);
}

bool run_fanout(const Options& options, Report& report) {
  HarkServer server;
  if (!server.start(options, 2048)) return false;
  bool ok = true;
  const std::vector<size_t> sizes =
      options.smoke ? std::vector<size_t>{1, 10} : std::vector<size_t>{1, 10, 100, 1000};
  for (const size_t k : sizes) {
    const int rounds = options.smoke ? 3 : k >= 1000 ? 50 : k >= 100 ? 100 : 200;
    FanoutResult run = measure_hark_fanout(server.address(), server.pid(), k, rounds);
    ok = ok && !run.failed;
    const std::string name = "fanout K=" + std::to_string(k);
    report.add({.name = name + " first woken", .samples_us = std::move(run.first_us)});
    report.add({.name = name + " last woken",
                .samples_us = std::move(run.last_us),
                .server_cpu_us_per_op = run.server_cpu_us_per_woken,
                .notes = std::to_string(rounds) + " rounds; cpu per woken poll"});
  }
  return server.stop() && ok;
}

}  // namespace hark::bench
