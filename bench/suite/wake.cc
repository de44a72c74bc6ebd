// `wake`: one producer, one consumer long-polling one partition (next, auto-commit, wait 1 s);
// before each message the producer idles 1 ms (the consumer parks again meanwhile), then sends
// one message carrying its send time: latency = the poll returned - sent (--gap-us changes the
// idle time; --shards 1 keeps every hop on one shard). Alongside, in
// alternating blocks so a neighbour's load weighs on all rows alike: a loopback TCP echo of
// the producer's frame size (the floor) and a PING round trip to harkd (its request path).
// That is the threads mode; --clients processes measures harkd with separate producer and
// consumer processes in each placement instead (client_processes.h).
#include <atomic>
#include <cstdio>
#include <thread>

#include "hark/bench/suite/client_processes.h"
#include "hark/bench/suite/echo.h"
#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/process_stats.h"
#include "hark/bench/suite/scenarios.h"

namespace hark::bench {
namespace {

using namespace std::chrono_literals;

std::vector<double> measure_ping(const std::string& address, int count,
                                 std::chrono::microseconds gap, bool& failed) {
  std::vector<double> samples;
  auto client = connect_hark(address);
  if (!client.ok()) {
    failed = true;
    return samples;
  }
  for (int i = 0; i < count; i++) {
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
    const auto sent = SteadyClock::now();
    if (!(*client)->ping().ok()) {
      std::fprintf(stderr, "ping: failed\n");
      failed = true;
      break;
    }
    samples.push_back(micros_between(sent, SteadyClock::now()));
  }
  return samples;
}

void append(std::vector<double>& to, std::vector<double> block) {
  block = without_warmup(std::move(block));
  to.insert(to.end(), block.begin(), block.end());
}

}  // namespace

WakeResult measure_hark_wake(const std::string& address, pid_t pid, int count,
                             std::chrono::microseconds gap) {
  const std::optional<TopicIds> topic = create_topic(address, "wake", 1);
  if (!topic) {
    std::fprintf(stderr, "wake: cannot create a topic on %s\n", address.c_str());
    return {.failed = true};
  }
  const pid_t pids[] = {pid};
  return measure_wake_between(address, address, *topic, pids, count, gap);
}

WakeResult measure_wake_between(const std::string& producer_address,
                                const std::string& consumer_address, const TopicIds& topic_ids,
                                std::span<const pid_t> pids, int count,
                                std::chrono::microseconds gap) {
  WakeResult run;
  const std::optional<TopicIds> topic = topic_ids;
  auto producer = connect_hark(producer_address);
  auto consumer = connect_hark(consumer_address);
  if (!producer.ok() || !consumer.ok()) {
    std::fprintf(stderr, "wake: cannot connect to %s and %s\n", producer_address.c_str(),
                 consumer_address.c_str());
    run.failed = true;
    return run;
  }
  std::atomic<int> received{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> consumer_failed{false};
  const CpuWindow cpu(pids);
  // The consumer thread owns run.latency_us and run.empty_polls until it is joined.
  std::thread consumer_thread([&] {
    const protocol::PollMessagesRequest request = poll_request(
        *topic, 0, {protocol::ConsumerKind::consumer, protocol::Identifier::numeric(1)},
        {protocol::PollingKind::next, 0}, 1, 1'000'000, true);
    // Bounded: every poll returns within its wait, and `stop` ends the loop.
    for (int polls = 0; received.load() < count && !stop.load() && polls < count + 10; polls++) {
      const Result<client::PolledMessages> polled = (*consumer)->poll_messages(request);
      const auto returned = SteadyClock::now();
      if (!polled.ok()) {
        std::fprintf(stderr, "wake: poll failed: %s\n",
                     std::string(error_name(polled.error())).c_str());
        consumer_failed.store(true);
        break;
      }
      if (polled->messages().count() == 0) {
        run.empty_polls++;
        continue;
      }
      for (const protocol::MessageView message : polled->messages()) {
        run.latency_us.push_back(micros_between(read_stamp(message.payload()), returned));
      }
      received.fetch_add(static_cast<int>(polled->messages().count()));
      received.notify_one();
    }
    received.store(count);  // Releases a producer waiting on a consumer that gave up.
    received.notify_one();
  });
  bool send_failed = false;
  for (int i = 0; i < count; i++) {
    for (int seen = received.load(); seen < i; seen = received.load()) received.wait(seen);
    if (received.load() >= count) break;
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
    if (const Status sent = send_stamped(**producer, *topic, 0); !sent.ok()) {
      std::fprintf(stderr, "wake: send failed: %s\n",
                   std::string(error_name(sent.error())).c_str());
      send_failed = true;
      break;
    }
  }
  stop.store(true);
  consumer_thread.join();
  const int64_t cpu_ns = cpu.used_ns();
  if (cpu_ns >= 0 && !run.latency_us.empty()) {
    run.server_cpu_us_per_message =
        static_cast<double>(cpu_ns) / 1e3 / static_cast<double>(run.latency_us.size());
  }
  run.failed = send_failed || consumer_failed.load() || run.latency_us.empty();
  return run;
}

namespace {

// What run_wake() collects over its blocks.
struct WakeSamples {
  std::vector<double> echo;
  std::vector<double> ping;
  std::vector<double> wake;        // harkd as configured (connections migrate).
  std::vector<double> wake_fixed;  // A second harkd with --migrate-connections false.
  double cpu_us_total = 0;
  bool cpu_known = true;
  uint64_t empty = 0;
  bool failed = false;
};

// Echo, ping and the wakes alternate in blocks, so a neighbour's load weighs on all alike.
WakeSamples measure_wake_blocks(const Options& options, const HarkServer& server,
                                const HarkServer* fixed) {
  WakeSamples samples;
  const int count = options.smoke ? 20 : 2000;
  const int blocks = options.smoke ? 1 : 10;
  const size_t size = send_frame_size();
  for (int block = 0; block < blocks && !samples.failed; block++) {
    append(samples.echo, measure_echo(count / blocks, size, options.gap));
    append(samples.ping,
           measure_ping(server.address(), count / blocks, options.gap, samples.failed));
    WakeResult run = measure_hark_wake(server.address(), server.pid(), count / blocks, options.gap);
    samples.cpu_known = samples.cpu_known && run.server_cpu_us_per_message >= 0;
    samples.cpu_us_total +=
        run.server_cpu_us_per_message * static_cast<double>(run.latency_us.size());
    append(samples.wake, std::move(run.latency_us));
    samples.empty += run.empty_polls;
    samples.failed = samples.failed || run.failed;
    if (fixed != nullptr && !samples.failed) {
      WakeResult other =
          measure_hark_wake(fixed->address(), fixed->pid(), count / blocks, options.gap);
      append(samples.wake_fixed, std::move(other.latency_us));
      samples.empty += other.empty_polls;
      samples.failed = other.failed;
    }
  }
  return samples;
}

void report_wake(const Options& options, WakeSamples samples, bool compared, Report& report) {
  const std::string gap_note = "gap " + std::to_string(options.gap.count()) + " µs";
  const std::string server_note = ", harkd " + std::to_string(options.shards) + " shards, " +
                                  options.durability + ", wait 1 s, next + auto-commit";
  const size_t wakes = samples.wake.size();
  report.add({.system = "echo",
              .name = "loopback TCP round trip",
              .samples_us = std::move(samples.echo),
              .notes = std::to_string(send_frame_size()) + "-byte messages, " + gap_note});
  report.add({.name = "ping (request round trip)",
              .samples_us = std::move(samples.ping),
              .notes = gap_note});
  const double wake_p50 =
      report
          .add({.name = "wake (send -> parked poll returns)",
                .samples_us = std::move(samples.wake),
                .server_cpu_us_per_op = samples.cpu_known && wakes > 0
                                            ? samples.cpu_us_total / static_cast<double>(wakes)
                                            : -1,
                .notes = gap_note + server_note +
                         ", connections migrate to the partition's owner; " +
                         std::to_string(samples.empty) +
                         " empty polls; cpu per message (send + wake + poll)"})
          .latency.p50;
  double fixed_p50 = 0;
  if (compared) {
    fixed_p50 = report
                    .add({.name = "wake, migration off",
                          .samples_us = std::move(samples.wake_fixed),
                          .notes = gap_note + server_note + ", connections stay where accepted"})
                    .latency.p50;
  }
  const Row* floor = report.find("echo", "");
  if (floor == nullptr || floor->latency.p50 <= 0) return;
  char line[200];
  std::snprintf(line, sizeof line, "wake p50 / echo p50 = %.2f (contract target <= 1.5)%s",
                wake_p50 / floor->latency.p50,
                options.smoke ? "  [smoke: too few samples to mean anything]" : "");
  report.note(line);
  if (compared) {
    std::snprintf(line, sizeof line, "migration off: wake p50 / echo p50 = %.2f",
                  fixed_p50 / floor->latency.p50);
    report.note(line);
  }
}

// --clients processes: harkd as configured, in each placement (client_processes.h).
bool run_wake_processes(const Options& options, Report& report) {
  HarkServer server;
  if (!server.start(options)) return false;
  const ProcessTarget targets[] = {hark_process_target(server, "")};
  const bool ok = measure_process_wakes(options, targets, {}, report);
  return server.stop() && ok;
}

}  // namespace

bool run_wake(const Options& options, Report& report) {
  if (options.client_processes) return run_wake_processes(options, report);
  // Two servers side by side: connections migrating to the partition's owner shard (harkd's
  // default) and staying where accepted, so the zero-hop gain is measured in one run. An
  // external harkd (--address) is measured as it is.
  HarkServer server;
  HarkServer fixed;
  if (!server.start(options)) return false;
  const bool compare = options.address.empty();
  if (compare && !fixed.start(options, 1024, {"--migrate-connections", "false"})) return false;
  WakeSamples samples = measure_wake_blocks(options, server, compare ? &fixed : nullptr);
  const bool failed = samples.failed;
  report_wake(options, std::move(samples), compare, report);
  const bool stopped = fixed.stop();
  return server.stop() && stopped && !failed;
}

}  // namespace hark::bench
