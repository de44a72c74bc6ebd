#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "hark/bench/peers/nats.h"
#include "hark/bench/peers/peer_measures.h"
#include "hark/bench/suite/fleet.h"
#include "hark/bench/suite/process_stats.h"

namespace hark::bench {

std::chrono::microseconds park_settle(size_t polls);  // fanout.cc

namespace {

constexpr long long second_ns = 1'000'000'000;

std::string fresh_name(const char* what) {
  static std::atomic<int> next{0};
  return std::string(what) + std::to_string(next.fetch_add(1));
}

// NATS events for a Fleet: answers PINGs, hands PONGs and messages to `on_event`.
class NatsReplies : public ReplyParser {
 public:
  using Handler = std::function<bool(size_t, const NatsEvent&, SteadyClock::time_point)>;
  explicit NatsReplies(Handler on_event) : on_event_(std::move(on_event)) {}
  Fleet* fleet = nullptr;
  ptrdiff_t parse(size_t link, std::span<const std::byte> received,
                  SteadyClock::time_point at) override {
    NatsEvent event;
    const ptrdiff_t size = parse_nats(received, event);
    if (size <= 0) return size;
    if (event.kind == NatsEvent::Kind::ping) {
      const std::string pong = "PONG\r\n";
      return fleet->send(link, std::as_bytes(std::span(pong.data(), pong.size()))) ? size : -1;
    }
    if (event.kind == NatsEvent::Kind::err) {
      std::fprintf(stderr, "nats: %s\n", event.payload.c_str());
      return -1;
    }
    if (event.kind == NatsEvent::Kind::pong || event.kind == NatsEvent::Kind::msg) {
      if (!on_event_(link, event, at)) return -1;
    }
    return size;
  }

 private:
  Handler on_event_;
};

bool fleet_send(Fleet& fleet, size_t link, const std::string& bytes) {
  return fleet.send(link, std::as_bytes(std::span(bytes.data(), bytes.size())));
}

}  // namespace

bool nats_set_up(NatsClient& admin, const std::string& name, size_t consumers) {
  if (!nats_create_stream(admin, name, name)) return false;
  for (size_t i = 0; i < consumers; i++) {
    if (!nats_create_consumer(admin, name, "c" + std::to_string(i))) return false;
  }
  return true;
}

bool nats_read_acks(NatsClient& producer, size_t count) {
  NatsEvent event;
  for (size_t i = 0; i < count; i++) {
    if (!producer.next(event) || event.payload.find("\"error\"") != std::string::npos) {
      std::fprintf(stderr, "nats: publish not acked: %s\n", event.payload.c_str());
      return false;
    }
  }
  return true;
}

WakeResult nats_wake(const std::string& address, pid_t pid, int count,
                     std::chrono::microseconds gap) {
  WakeResult run;
  run.failed = true;
  NatsClient producer;
  NatsClient consumer;
  const std::string name = fresh_name("WAKE");
  if (!producer.connect(address) || !consumer.connect(address) || !nats_set_up(producer, name, 1)) {
    return run;
  }
  std::atomic<int> received{0};
  std::atomic<bool> consumer_failed{false};
  const CpuWindow cpu(pid);
  std::thread consumer_thread([&] {
    const std::string pull = nats_pull(name, "c0", consumer.inbox("pull"), 1, second_ns);
    // Bounded: each pull ends within its 1 s expiry.
    for (int pulls = 0; received.load() < count && pulls < count + 10; pulls++) {
      NatsEvent event;
      if (!consumer.send(pull) || !consumer.next(event)) {
        consumer_failed.store(true);
        break;
      }
      const auto at = SteadyClock::now();
      if (event.status != 0) {  // 408: the pull expired empty.
        run.empty_polls++;
        continue;
      }
      run.latency_us.push_back(micros_between(stamp_of(event.payload), at));
      if (!consumer.send(nats_pub(event.reply, "", "+ACK"))) {
        consumer_failed.store(true);
        break;
      }
      received.fetch_add(1);
      received.notify_one();
    }
    received.store(count);
    received.notify_one();
  });
  bool send_failed = false;
  for (int i = 0; i < count && !send_failed; i++) {
    for (int seen = received.load(); seen < i; seen = received.load()) received.wait(seen);
    if (received.load() >= count) break;
    std::this_thread::sleep_for(gap);
    send_failed = !producer.send(nats_pub(name, producer.inbox("ack"), stamped_payload(8))) ||
                  !nats_read_acks(producer, 1);
  }
  consumer_thread.join();
  const int64_t cpu_ns = cpu.used_ns();
  if (cpu_ns >= 0 && !run.latency_us.empty()) {
    run.server_cpu_us_per_message =
        static_cast<double>(cpu_ns) / 1e3 / static_cast<double>(run.latency_us.size());
  }
  run.failed = send_failed || consumer_failed.load() || run.latency_us.empty();
  return run;
}

FanoutResult nats_fanout(const std::string& address, pid_t pid, size_t consumers, int rounds,
                         size_t /*threads*/) {
  FanoutResult result;
  result.failed = true;
  NatsClient admin;
  const std::string name = fresh_name("FAN");
  if (!admin.connect(address) || !nats_set_up(admin, name, consumers)) return result;
  const size_t producer = consumers;  // The last link: publishes from the same loop.
  size_t pending = 0;
  std::vector<SteadyClock::time_point> woken(consumers);
  std::vector<std::string> prefixes(consumers + 1);
  SteadyClock::time_point stamp;
  Fleet* fleet_ptr = nullptr;
  auto pull = [&](size_t link) {
    return nats_pull(name, "c" + std::to_string(link), "_INBOX." + prefixes[link] + ".pull", 1,
                     10 * second_ns);
  };
  NatsReplies replies([&](size_t link, const NatsEvent& event, SteadyClock::time_point at) {
    if (event.kind == NatsEvent::Kind::pong || link == producer) {  // Handshake or PubAck.
      if (event.payload.find("\"error\"") != std::string::npos) return false;
      pending--;
      return true;
    }
    if (event.status != 0) return fleet_send(*fleet_ptr, link, pull(link));  // Expired: again.
    stamp = stamp_of(event.payload);
    woken[link] = at;
    pending--;
    return fleet_send(*fleet_ptr, link, nats_pub(event.reply, "", "+ACK"));
  });
  Fleet fleet(replies);
  replies.fleet = &fleet;
  fleet_ptr = &fleet;
  pending = consumers + 1;
  for (size_t i = 0; i <= consumers; i++) {
    prefixes[i] = nats_inbox_prefix();
    const int fd = connect_tcp(address);
    if (fd < 0 || fleet.add(fd) < 0 || !fleet_send(fleet, i, nats_handshake(prefixes[i]))) {
      return result;
    }
  }
  if (!fleet.run([&] { return pending == 0; }, SteadyClock::now() + std::chrono::seconds(30))) {
    return result;
  }
  const std::string ack_inbox = "_INBOX." + prefixes[producer] + ".ack";
  FanoutTally tally{.cpu_known = pid > 0};
  for (int round = 0; round < rounds; round++) {
    for (size_t i = 0; i < consumers; i++) {
      if (!fleet_send(fleet, i, pull(i))) return result;
    }
    std::this_thread::sleep_for(park_settle(consumers));
    pending = consumers + 1;
    const CpuWindow cpu(pid);
    if (!fleet_send(fleet, producer, nats_pub(name, ack_inbox, stamped_payload(8))) ||
        !fleet.run([&] { return pending == 0; }, SteadyClock::now() + std::chrono::seconds(15))) {
      std::fprintf(stderr, "nats fanout: round %d with K=%zu failed\n", round, consumers);
      return result;
    }
    tally.add_round(stamp, woken, cpu.used_ns(), fleet);
  }
  return tally.finish(consumers);
}

namespace {

// Publishes `count` messages in batches, waiting for the stream's acks of each batch.
void publish_batches(NatsClient& producer, const std::string& subject, size_t size, size_t count,
                     size_t batch, std::atomic<bool>& failed) {
  std::string commands;
  const std::string ack = producer.inbox("ack");
  for (size_t sent = 0; sent < count && !failed.load(); sent += batch) {
    const size_t n = std::min(batch, count - sent);
    commands.clear();
    const std::string payload = stamped_payload(size);
    for (size_t i = 0; i < n; i++) commands += nats_pub(subject, ack, payload);
    if (!producer.send(commands) || !nats_read_acks(producer, n)) failed.store(true);
  }
}

}  // namespace

ThroughputResult nats_throughput(const std::string& address, pid_t pid, size_t size, size_t count,
                                 size_t batch) {
  ThroughputResult result;
  result.failed = true;
  NatsClient producer;
  NatsClient consumer;
  const std::string name = fresh_name("TP");
  if (!producer.connect(address) || !consumer.connect(address) || !nats_set_up(producer, name, 1)) {
    return result;
  }
  std::atomic<bool> failed{false};
  std::atomic<bool> producer_done{false};
  const CpuWindow cpu(pid);
  const auto start = SteadyClock::now();
  std::thread producer_thread([&] {
    publish_batches(producer, name, size, count, batch, failed);
    producer_done.store(true);
  });
  constexpr size_t pull_batch = 1000;
  const std::string pull = nats_pull(name, "c0", consumer.inbox("pull"), pull_batch, second_ns);
  size_t received = 0;
  size_t in_pull = 0;
  std::string last_reply;  // The last message's ack subject, acked when its pull ends.
  auto last_at = start;
  bool ok = consumer.send(pull);
  // Bounded: every pull fills or expires within 1 s; an expired one after the producer is done
  // ends the loop.
  while (ok && received < count && !failed.load()) {
    NatsEvent event;
    ok = consumer.next(event);
    if (ok && event.status != 0) {  // The pull expired (408) or was cut short: pull again.
      if (producer_done.load() && in_pull == 0) break;
      ok = consumer.send((in_pull > 0 ? nats_pub(last_reply, "", "+ACK") : "") + pull);
      in_pull = 0;
    } else if (ok) {
      last_at = SteadyClock::now();
      if (in_pull == 0) {
        result.latency_us.push_back(micros_between(stamp_of(event.payload), last_at));
      }
      received++;
      last_reply = event.reply;
      if (++in_pull == pull_batch) {  // Ack all of this pull at once, then pull again.
        in_pull = 0;
        ok = consumer.send(nats_pub(event.reply, "", "+ACK") + pull);
      }
    }
  }
  producer_thread.join();
  finish_throughput(result, received, count, size, last_at - start, cpu.used_ns(),
                    failed.load() || !ok);
  return result;
}

}  // namespace hark::bench
