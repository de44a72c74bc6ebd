// `throughput`: one producer sends 100 B or 1 KB messages in batches (each message carries its
// send time) while one consumer long-polls them, 1000 per poll (next, auto-commit, wait 1 s):
// messages and payload MB per second as the consumer receives them, each poll's latency (its
// first message's send time to the poll's return) and harkd's CPU per message.
#include <atomic>
#include <cstdio>
#include <thread>

#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/process_stats.h"
#include "hark/bench/suite/scenarios.h"
#include "hark/bench/suite/wire_ceiling.h"

namespace hark::bench {

namespace {

// Sends `count` messages of `size` bytes in batches, each stamped with its batch's send time.
void produce(client::Client& producer, const TopicIds& topic, size_t size, size_t count,
             size_t batch, std::atomic<bool>& failed) {
  std::vector<protocol::Bytes> payloads(batch, protocol::Bytes(size, std::byte{0x42}));
  std::vector<protocol::OutgoingMessage> messages(batch);
  const protocol::SendTarget target{.stream_id = protocol::Identifier::numeric(topic.stream),
                                    .topic_id = protocol::Identifier::numeric(topic.topic),
                                    .partitioning = protocol::Partitioning::partition(0)};
  for (size_t sent = 0; sent < count && !failed.load(); sent += batch) {
    const size_t n = std::min(batch, count - sent);
    const auto now = SteadyClock::now();
    for (size_t i = 0; i < n; i++) {
      write_stamp(payloads[i], now);
      messages[i] = {.payload = payloads[i]};
    }
    if (!producer.send_messages(target, {messages.data(), n}).ok()) {
      std::fprintf(stderr, "throughput: send failed\n");
      failed.store(true);
    }
  }
}

}  // namespace

void finish_throughput(ThroughputResult& result, size_t received, size_t count, size_t size,
                       SteadyClock::duration elapsed, int64_t cpu_ns, bool failed) {
  if (received < count) {
    std::fprintf(stderr, "throughput: received %zu of %zu messages\n", received, count);
    failed = true;
  }
  const double seconds = std::chrono::duration<double>(elapsed).count();
  if (seconds > 0) {
    result.msgs_per_s = static_cast<double>(received) / seconds;
    result.mb_per_s = static_cast<double>(received * size) / seconds / 1e6;
  }
  if (cpu_ns >= 0 && received > 0) {
    result.server_cpu_us_per_message =
        static_cast<double>(cpu_ns) / 1e3 / static_cast<double>(received);
  }
  result.failed = failed;
}

ThroughputResult measure_hark_throughput(const std::string& address, pid_t pid, size_t size,
                                         size_t count, size_t batch) {
  const std::optional<TopicIds> topic = create_topic(address, "throughput", 1);
  if (!topic) return {.failed = true};
  const pid_t pids[] = {pid};
  return measure_throughput_between(address, address, *topic, pids, size, count, batch);
}

ThroughputResult measure_throughput_between(const std::string& producer_address,
                                            const std::string& consumer_address,
                                            const TopicIds& topic, std::span<const pid_t> pids,
                                            size_t size, size_t count, size_t batch) {
  ThroughputResult result;
  auto producer = connect_hark(producer_address);
  auto consumer = connect_hark(consumer_address);
  if (!producer.ok() || !consumer.ok()) {
    result.failed = true;
    return result;
  }
  std::atomic<bool> producer_done{false};
  std::atomic<bool> failed{false};
  const CpuWindow cpu(pids);
  const auto start = SteadyClock::now();
  std::thread producer_thread([&] {
    produce(**producer, topic, size, count, batch, failed);
    producer_done.store(true);
  });
  const protocol::PollMessagesRequest request =
      poll_request(topic, 0, {protocol::ConsumerKind::consumer, protocol::Identifier::numeric(1)},
                   {protocol::PollingKind::next, 0}, 1000, 1'000'000, true);
  size_t received = 0;
  auto last = start;
  // Bounded: each poll returns within 1 s, and an empty one after the producer is done ends it.
  while (received < count && !failed.load()) {
    const Result<client::PolledMessages> polled = (*consumer)->poll_messages(request);
    last = SteadyClock::now();
    if (!polled.ok()) {
      std::fprintf(stderr, "throughput: poll failed\n");
      failed.store(true);
      break;
    }
    const auto& messages = polled->messages();
    if (messages.count() == 0) {
      if (producer_done.load()) break;
      continue;
    }
    result.latency_us.push_back(micros_between(read_stamp((*messages.begin()).payload()), last));
    received += messages.count();
  }
  producer_thread.join();
  finish_throughput(result, received, count, size, last - start, cpu.used_ns(), failed.load());
  return result;
}

std::vector<ThroughputCase> throughput_cases(const Options& options) {
  return {{.size = 100, .count = options.smoke ? 2000u : 1'000'000u, .batch = 1000},
          {.size = 1000, .count = options.smoke ? 1000u : 300'000u, .batch = 100}};
}

// Loopback's own ceilings in this run, next to the broker's figures: iperf3 (when installed),
// the bench's own blast of 128 KB writes, and a plain relay moving `relay_bytes` in writes of
// `batch_bytes` (producer -> relay -> consumer), streaming and with each batch acknowledged
// (the producer waits for it, as hark's and the SDKs' producers do). The notes read hark's
// MB/s against them.
struct WireCeiling {
  double iperf3 = -1;
  double blast = -1;
  double relay = -1;
  double acknowledged_relay = -1;
};

WireCeiling measure_wire_ceiling(const Options& options, Report& report, size_t batch_bytes,
                                 size_t relay_bytes) {
  WireCeiling ceiling;
  ceiling.iperf3 = iperf3_mb_per_s(options.smoke ? 1 : 5);
  ceiling.blast =
      loopback_blast_mb_per_s(128 * 1024, std::chrono::milliseconds(options.smoke ? 200 : 2000));
  ceiling.relay = relay_mb_per_s(batch_bytes, relay_bytes);
  ceiling.acknowledged_relay = relay_mb_per_s(batch_bytes, relay_bytes, true);
  if (ceiling.iperf3 > 0) {
    report.add({.system = "tcp",
                .name = "iperf3 -c 127.0.0.1 -l 128K",
                .mb_per_s = ceiling.iperf3,
                .notes = "loopback TCP, one stream"});
  } else {
    report.note("iperf3: not installed or failed; the blast row stands in for it");
  }
  report.add({.system = "tcp",
              .name = "blast, 128 KB writes",
              .mb_per_s = ceiling.blast,
              .notes = "loopback TCP, one stream, hark-bench's own"});
  report.add({.system = "tcp",
              .name = "relay, " + std::to_string(batch_bytes / 1024) + " KB writes",
              .mb_per_s = ceiling.relay,
              .notes = "producer -> relay -> consumer: the practical ceiling"});
  report.add({.system = "tcp",
              .name = "relay, " + std::to_string(batch_bytes / 1024) + " KB batches acknowledged",
              .mb_per_s = ceiling.acknowledged_relay,
              .notes = "the same, each batch answered before the next: one waiting producer's"});
  return ceiling;
}

void ceiling_notes(Report& report, const WireCeiling& ceiling, const std::string& what,
                   double mb_per_s) {
  const double wire = ceiling.iperf3 > 0 ? ceiling.iperf3 : ceiling.blast;
  if (wire <= 0 || mb_per_s <= 0) return;
  char line[300];
  std::snprintf(line, sizeof line,
                "%s: %.0f MB/s = %.2f x %s (%.0f MB/s; 0.5 is the ceiling), %.2f x the relay, "
                "%.2f x the acknowledged relay (%.2f x %s)",
                what.c_str(), mb_per_s, mb_per_s / wire, ceiling.iperf3 > 0 ? "iperf3" : "blast",
                wire, ceiling.relay > 0 ? mb_per_s / ceiling.relay : 0.0,
                ceiling.acknowledged_relay > 0 ? mb_per_s / ceiling.acknowledged_relay : 0.0,
                ceiling.acknowledged_relay / wire, ceiling.iperf3 > 0 ? "iperf3" : "blast");
  report.note(line);
}

bool run_throughput(const Options& options, Report& report) {
  HarkServer server;
  if (!server.start(options)) return false;
  bool ok = true;
  const std::vector<ThroughputCase> cases = throughput_cases(options);
  const WireCeiling ceiling =
      measure_wire_ceiling(options, report, 100 * 1000, cases[1].size * cases[1].count);
  for (const ThroughputCase& c : cases) {
    ThroughputResult run =
        measure_hark_throughput(server.address(), server.pid(), c.size, c.count, c.batch);
    ok = ok && !run.failed;
    const std::string name = std::to_string(c.size) + " B x " + std::to_string(c.count) +
                             ", batch " + std::to_string(c.batch);
    ceiling_notes(report, ceiling, "hark " + name, run.mb_per_s);
    report.add({.name = name,
                .samples_us = std::move(run.latency_us),
                .msgs_per_s = run.msgs_per_s,
                .mb_per_s = run.mb_per_s,
                .server_cpu_us_per_op = run.server_cpu_us_per_message,
                .notes = "latency per poll of up to 1000; cpu per message"});
  }
  return server.stop() && ok;
}

}  // namespace hark::bench
