// `classic`: the poll loop of an unmodified Iggy SDK on an idle partition. One blocking client
// polls an empty partition back to back with classic frames (no wait_timeout_us: released SDKs
// cannot send it) for 10 s, on a fresh harkd each way: without a default wait (every poll is
// answered at once, so the loop spins) and with polling.classic_default_wait 2s for root (every
// poll parks until the wait ends). Reported: harkd's CPU and the client thread's CPU over the
// loop, and the polls it sent (docs/bench.md, docs/long-polling.md §Classic clients).
#include <time.h>

#include <cstdio>
#include <string>

#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/process_stats.h"
#include "hark/bench/suite/scenarios.h"

namespace hark::bench {
namespace {

using namespace std::chrono_literals;

int64_t thread_cpu_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// Polls until `length` has passed; false on any error or message.
bool poll_loop(client::Client& client, const TopicIds& topic, std::chrono::milliseconds length,
               uint64_t& polls) {
  const protocol::PollMessagesRequest request =
      poll_request(topic, 0, {protocol::ConsumerKind::consumer, protocol::Identifier::numeric(1)},
                   {protocol::PollingKind::next, 0}, 10, /*wait_us=*/0, /*auto_commit=*/true);
  const auto end = SteadyClock::now() + length;
  while (SteadyClock::now() < end) {
    const Result<client::PolledMessages> polled = client.poll_messages(request);
    if (!polled.ok() || polled->messages().count() != 0) return false;
    polls++;
  }
  return true;
}

bool measure_classic(const Options& options, const std::string& wait, Report& report) {
  HarkServer server;
  const std::vector<std::string> setting =
      wait == "0" ? std::vector<std::string>{}
                  : std::vector<std::string>{"--classic-default-wait", wait,
                                             "--classic-default-wait-users", "iggy"};
  if (!server.start(options, 1024, setting)) return false;
  const std::optional<TopicIds> topic = create_topic(server.address(), "classic", 1);
  auto consumer = connect_hark(server.address());
  if (!topic || !consumer.ok()) return false;
  const std::chrono::milliseconds length = options.smoke ? 500ms : 10'000ms;
  uint64_t polls = 0;
  const CpuWindow server_cpu(server.pid());
  const int64_t client_start = thread_cpu_ns();
  const auto start = SteadyClock::now();
  const bool ok = poll_loop(**consumer, *topic, length, polls);
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  const double client_s = static_cast<double>(thread_cpu_ns() - client_start) / 1e9;
  const double server_s = static_cast<double>(server_cpu.used_ns()) / 1e9;
  Row row{.name = "classic poll loop, default wait " + wait};
  row.msgs_per_s = static_cast<double>(polls) / seconds;  // Polls per second.
  if (server_s >= 0) row.server_cpu_percent = 100.0 * server_s / seconds;
  char notes[160];
  std::snprintf(notes, sizeof notes, "%llu polls in %.1f s; CPU s: harkd %.3f, client %.3f",
                static_cast<unsigned long long>(polls), seconds, server_s, client_s);
  row.notes = notes;
  report.add(std::move(row));
  return server.stop() && ok;
}

}  // namespace

bool run_classic(const Options& options, Report& report) {
  bool ok = true;
  for (const char* wait : {"0", options.smoke ? "100ms" : "2s"}) {
    ok = measure_classic(options, wait, report) && ok;
  }
  return ok;
}

}  // namespace hark::bench
