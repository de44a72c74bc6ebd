// `idle`: N consumers (N = 1000, 10 000) on one partition with no traffic, on N connections in
// one epoll loop, three ways on a fresh harkd each:
//   long poll      every consumer parks a poll with a 60 s wait (answered empty and parked
//                  again if it runs out);
//   busy poll 1 ms / 10 ms   every consumer polls with no wait every 1 ms or 10 ms (start times
//                  spread over the interval; a poll still in flight when its turn comes is sent
//                  when it returns).
// For each: harkd's CPU over an idle window (no messages), its RSS growth per consumer since
// before they connected (the connection included), the bench client's own CPU, and then the
// latency of a few probe messages: each consumer's time from the send to the poll that brought
// it. The trade-off long polling removes: busy polling pays CPU for latency.
#include <cstdio>
#include <optional>
#include <queue>
#include <thread>

#include <sys/resource.h>

#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/process_stats.h"
#include "hark/bench/suite/scenarios.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/poll_response.h"

namespace hark::bench {
namespace {

using namespace std::chrono_literals;

int64_t self_cpu_ns() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto ns = [](const timeval& t) {
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + static_cast<int64_t>(t.tv_usec) * 1000;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

struct Consumers;

// Sends each busy consumer's poll when its turn comes.
class Schedule : public FleetTimer {
 public:
  explicit Schedule(Consumers& consumers) : consumers_(consumers) {}
  SteadyClock::time_point due() const override {
    return queue_.empty() ? SteadyClock::time_point::max() : queue_.top().first;
  }
  void fire(SteadyClock::time_point now) override;
  void add(SteadyClock::time_point at, size_t link) { queue_.emplace(at, link); }

 private:
  using Entry = std::pair<SteadyClock::time_point, size_t>;
  Consumers& consumers_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue_;
};

// The N consumers' state, and what they measured.
struct Consumers {
  TopicIds topic;
  std::chrono::microseconds interval{0};  // 0: long poll.
  std::vector<uint64_t> next_offset;
  std::vector<bool> in_flight;
  std::vector<bool> overdue;  // Its turn came while a poll was in flight.
  std::vector<SteadyClock::time_point> last_sent;
  std::vector<double> latency_us;
  size_t pending_logins = 0;
  size_t delivered = 0;  // Probe messages received, over all consumers.
  uint64_t polls_sent = 0;
  Fleet* fleet = nullptr;
  Schedule* schedule = nullptr;

  bool poll(size_t link) {
    const uint64_t wait_us = interval.count() == 0 ? 60'000'000 : 0;
    const protocol::Bytes frame = frame_of(
        poll_request(topic, 0,
                     {protocol::ConsumerKind::consumer,
                      protocol::Identifier::numeric(static_cast<uint32_t>(link + 1))},
                     {protocol::PollingKind::offset, next_offset[link]}, 100, wait_us, false));
    in_flight[link] = true;
    overdue[link] = false;
    last_sent[link] = SteadyClock::now();
    polls_sent++;
    return fleet->send(link, frame);
  }

  bool on_reply(size_t link, uint32_t status, std::span<const std::byte> payload,
                SteadyClock::time_point at) {
    if (status != 0) {
      std::fprintf(stderr, "idle: harkd answered %s (%u)\n",
                   std::string(error_name(static_cast<Error>(status))).c_str(), status);
      return false;
    }
    if (payload.size() < 16) {  // A login.
      if (pending_logins > 0) pending_logins--;
      return true;
    }
    auto decoded = protocol::decode_payload<protocol::PollMessagesResponse>(payload);
    if (!decoded.ok()) return false;
    for (const protocol::MessageView message : decoded->value.messages) {
      latency_us.push_back(micros_between(read_stamp(message.payload()), at));
      next_offset[link] = message.offset() + 1;
      delivered++;
    }
    in_flight[link] = false;
    if (interval.count() == 0) return poll(link);  // Park again at once.
    if (overdue[link]) return poll(link);
    schedule->add(last_sent[link] + interval, link);
    return true;
  }
};

void Schedule::fire(SteadyClock::time_point now) {
  for (int fired = 0; fired < 1024 && !queue_.empty() && queue_.top().first <= now; fired++) {
    const size_t link = queue_.top().second;
    queue_.pop();
    if (consumers_.in_flight[link]) {
      consumers_.overdue[link] = true;
    } else {
      (void)consumers_.poll(link);
    }
  }
}

struct IdleRun {
  Row row;
  bool failed = true;
};

// The idle window: harkd's and the client's CPU and the polls sent, with no messages.
struct IdleWindow {
  double seconds = 0;
  int64_t server_ns = -1;
  double client_percent = 0;
  double polls_per_s = 0;
};

bool run_idle_window(Fleet& fleet, Schedule& schedule, const Consumers& consumers, pid_t pid,
                     std::chrono::milliseconds length, IdleWindow& window) {
  const CpuWindow server_cpu(pid);
  const int64_t client_before = self_cpu_ns();
  const uint64_t polls_before = consumers.polls_sent;
  const auto start = SteadyClock::now();
  if (!fleet.run_until(start + length, &schedule)) return false;
  window.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  window.server_ns = server_cpu.used_ns();
  window.client_percent =
      static_cast<double>(self_cpu_ns() - client_before) / 1e9 / window.seconds * 100;
  window.polls_per_s = static_cast<double>(consumers.polls_sent - polls_before) / window.seconds;
  return true;
}

// Sends `probes` messages, each once the previous one reached every consumer (and 200 ms
// passed), while the consumers keep polling their way.
bool send_probes(Fleet& fleet, Schedule& schedule, Consumers& consumers, client::Client& producer,
                 int probes) {
  const size_t n = consumers.next_offset.size();
  for (int probe = 0; probe < probes; probe++) {
    if (!send_stamped(producer, consumers.topic, 0).ok()) return false;
    const size_t want = n * static_cast<size_t>(probe + 1);
    if (!fleet.run([&] { return consumers.delivered >= want; }, SteadyClock::now() + 30s,
                   &schedule) ||
        !fleet.run_until(SteadyClock::now() + 200ms, &schedule)) {
      std::fprintf(stderr, "idle: probe %d reached %zu of %zu consumers\n", probe,
                   consumers.delivered - n * static_cast<size_t>(probe), n);
      return false;
    }
  }
  return true;
}

void fill_row(Row& row, Consumers& consumers, const IdleWindow& window,
              std::optional<int64_t> rss_growth, int probes) {
  const size_t n = consumers.next_offset.size();
  row.samples_us = std::move(consumers.latency_us);
  if (window.server_ns >= 0) {
    row.server_cpu_percent = static_cast<double>(window.server_ns) / 1e9 / window.seconds * 100;
  }
  if (rss_growth) row.rss_bytes_per_op = static_cast<double>(*rss_growth) / static_cast<double>(n);
  const std::string schedule =
      consumers.interval.count() == 0
          ? ""
          : " (schedule: " +
                std::to_string(static_cast<int64_t>(n) * 1'000'000 / consumers.interval.count()) +
                ")";
  char notes[200];
  std::snprintf(notes, sizeof notes,
                "idle %.1f s: %.0f polls/s%s, client cpu %.1f %%, rss %+.0f B per consumer; "
                "latency of %d probes x N",
                window.seconds, window.polls_per_s, schedule.c_str(), window.client_percent,
                row.rss_bytes_per_op, probes);
  row.notes = notes;
}

IdleRun measure_idle(const Options& options, size_t n, std::chrono::microseconds interval) {
  IdleRun run;
  run.row.name =
      (interval.count() == 0 ? std::string("long poll")
                             : "busy poll " + std::to_string(interval.count() / 1000) + " ms") +
      ", N=" + std::to_string(n);
  HarkServer server;
  // N consumers, the producer, and room for the previous row's connections that are still
  // closing (--connections-max counts every shard's; N + N/4 stays under 20 000 files).
  if (!server.start(options, static_cast<uint32_t>(n + n / 4 + 64))) return run;
  const std::optional<TopicIds> topic = create_topic(server.address(), "idle", 1);
  auto producer = connect_hark(server.address());
  if (!topic || !producer.ok()) return run;
  const int64_t rss_before = process_rss_bytes(server.pid());

  Consumers consumers;
  consumers.topic = *topic;
  consumers.interval = interval;
  consumers.next_offset.assign(n, 0);
  consumers.in_flight.assign(n, false);
  consumers.overdue.assign(n, false);
  consumers.last_sent.assign(n, SteadyClock::now());
  HarkReplies replies(
      [&](size_t link, uint32_t status, std::span<const std::byte> payload,
          SteadyClock::time_point at) { return consumers.on_reply(link, status, payload, at); });
  Fleet fleet(replies);
  Schedule schedule(consumers);
  consumers.fleet = &fleet;
  consumers.schedule = &schedule;
  if (!open_fleet(fleet, server.address(), n, consumers.pending_logins)) return run;

  const auto start = SteadyClock::now();
  for (size_t i = 0; i < n; i++) {
    if (interval.count() == 0) {
      if (!consumers.poll(i)) return run;
    } else {
      schedule.add(start + interval * static_cast<int64_t>(i) / static_cast<int64_t>(n), i);
    }
  }
  const auto settle = options.smoke ? 200ms : 1000ms + std::chrono::microseconds(100 * n);
  if (!fleet.run_until(SteadyClock::now() + settle, &schedule)) return run;
  const int64_t rss_parked = process_rss_bytes(server.pid());
  IdleWindow window;
  const int probes = options.smoke ? 2 : 5;
  if (!run_idle_window(fleet, schedule, consumers, server.pid(), options.smoke ? 300ms : 5000ms,
                       window) ||
      !send_probes(fleet, schedule, consumers, **producer, probes)) {
    return run;
  }
  fill_row(run.row, consumers, window,
           rss_before >= 0 && rss_parked >= 0 ? std::optional<int64_t>(rss_parked - rss_before)
                                              : std::nullopt,
           probes);
  run.failed = !server.stop();
  return run;
}

}  // namespace

bool run_idle(const Options& options, Report& report) {
  bool ok = true;
  const std::vector<size_t> sizes =
      options.smoke ? std::vector<size_t>{50} : std::vector<size_t>{1000, 10000};
  for (const size_t n : sizes) {
    for (const auto interval :
         {0us, std::chrono::microseconds(1ms), std::chrono::microseconds(10ms)}) {
      IdleRun run = measure_idle(options, n, interval);
      ok = ok && !run.failed;
      if (run.failed) run.row.notes = "FAILED";
      report.add(std::move(run.row));
    }
  }
  return ok;
}

}  // namespace hark::bench
