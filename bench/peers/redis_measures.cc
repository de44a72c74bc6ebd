#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <thread>

#include "hark/bench/peers/peer_measures.h"
#include "hark/bench/peers/redis.h"
#include "hark/bench/suite/fleet.h"
#include "hark/bench/suite/process_stats.h"

namespace hark::bench {

std::chrono::microseconds park_settle(size_t polls);  // fanout.cc

namespace {

std::string fresh_key(const char* what) {
  static std::atomic<int> next{0};
  return std::string("bench-") + what + "-" + std::to_string(next.fetch_add(1));
}

// RESP replies for a Fleet, handed to `on_reply`.
class RespReplies : public ReplyParser {
 public:
  using Handler = std::function<bool(size_t, const Resp&, SteadyClock::time_point)>;
  explicit RespReplies(Handler on_reply) : on_reply_(std::move(on_reply)) {}
  ptrdiff_t parse(size_t link, std::span<const std::byte> received,
                  SteadyClock::time_point at) override {
    Resp reply;
    const ptrdiff_t size = parse_resp(received, reply);
    if (size > 0 && !on_reply_(link, reply, at)) return -1;
    return size;
  }

 private:
  Handler on_reply_;
};

}  // namespace

std::string stamped_payload(size_t size) {
  std::string payload(std::max<size_t>(size, 8), 'x');
  write_stamp(std::as_writable_bytes(std::span(payload.data(), payload.size())),
              SteadyClock::now());
  return payload;
}

SteadyClock::time_point stamp_of(const std::string& payload) {
  return read_stamp(std::as_bytes(std::span(payload.data(), payload.size())));
}

WakeResult redis_wake(const std::string& address, pid_t pid, int count,
                      std::chrono::microseconds gap) {
  WakeResult run;
  RedisClient producer;
  RedisClient consumer;
  if (!producer.connect(address) || !consumer.connect(address)) {
    run.failed = true;
    return run;
  }
  const std::string key = fresh_key("wake");
  std::atomic<int> received{0};
  std::atomic<bool> consumer_failed{false};
  const CpuWindow cpu(pid);
  std::thread consumer_thread([&] {
    std::string last = "0-0";
    for (int polls = 0; received.load() < count && polls < count + 10; polls++) {
      Resp reply;
      if (!consumer.call(resp_command({"XREAD", "BLOCK", "1000", "STREAMS", key, last}), reply)) {
        consumer_failed.store(true);
        break;
      }
      const auto at = SteadyClock::now();
      const auto entries = xread_entries(reply);
      if (entries.empty()) run.empty_polls++;
      for (const auto& [id, payload] : entries) {
        run.latency_us.push_back(micros_between(stamp_of(payload), at));
        last = id;
      }
      received.fetch_add(static_cast<int>(entries.size()));
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
    Resp reply;
    send_failed = !producer.call(resp_command({"XADD", key, "*", "s", stamped_payload(8)}), reply);
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

FanoutResult redis_fanout(const std::string& address, pid_t pid, size_t consumers, int rounds,
                          size_t threads) {
  FanoutResult result;
  result.failed = true;
  const std::string key = fresh_key("fanout");
  const size_t producer = consumers;  // The last link: XADD from the caller's loop.
  std::vector<SteadyClock::time_point> woken(consumers);
  std::atomic<SteadyClock::rep> stamp{0};
  std::string last = "0-0";  // Written by the producer's reply, read between rounds.
  // Called from every client thread, each for its own links.
  RespReplies replies([&](size_t link, const Resp& reply, SteadyClock::time_point at) {
    if (link == producer) {  // XADD's answer: the new entry's id.
      if (reply.kind != Resp::Kind::bulk) return false;
      last = reply.text;
      return true;
    }
    const auto entries = xread_entries(reply);
    if (entries.size() != 1) {
      std::fprintf(stderr, "redis fanout: XREAD answered %zu entries\n", entries.size());
      return false;
    }
    stamp.store(stamp_of(entries[0].second).time_since_epoch().count(), std::memory_order_relaxed);
    woken[link] = at;
    return true;
  });
  FleetPool fleet(replies, consumers + 1, threads);
  for (size_t i = 0; i <= consumers; i++) {
    const int fd = connect_tcp(address);
    if (fd < 0 || fleet.add(fd) < 0) return result;
  }
  auto send = [&](size_t link, const std::string& command) {
    return fleet.send(link, std::as_bytes(std::span(command.data(), command.size())));
  };
  const std::vector<uint64_t> expected = round_replies(fleet);
  FanoutTally tally{.cpu_known = pid > 0};
  for (int round = 0; round < rounds; round++) {
    const std::string read = resp_command({"XREAD", "BLOCK", "10000", "STREAMS", key, last});
    for (size_t i = 0; i < consumers; i++) {
      if (!send(i, read)) return result;
    }
    std::this_thread::sleep_for(park_settle(consumers));
    std::optional<CpuWindow> cpu;
    const bool served = fleet.run_round(
        expected,
        [&] {
          cpu.emplace(pid);
          return send(producer, resp_command({"XADD", key, "*", "s", stamped_payload(8)}));
        },
        SteadyClock::now() + std::chrono::seconds(15));
    if (!served) return result;
    tally.add_round(SteadyClock::time_point(SteadyClock::duration(stamp.load())), woken,
                    cpu->used_ns(), fleet);
  }
  return tally.finish(consumers);
}

ThroughputResult redis_throughput(const std::string& address, pid_t pid, size_t size, size_t count,
                                  size_t batch) {
  ThroughputResult result;
  RedisClient producer;
  RedisClient consumer;
  if (!producer.connect(address) || !consumer.connect(address)) {
    result.failed = true;
    return result;
  }
  const std::string key = fresh_key("throughput");
  std::atomic<bool> failed{false};
  std::atomic<bool> producer_done{false};
  const CpuWindow cpu(pid);
  const auto start = SteadyClock::now();
  std::thread producer_thread([&] {
    std::string commands;
    for (size_t sent = 0; sent < count && !failed.load(); sent += batch) {
      const size_t n = std::min(batch, count - sent);
      commands.clear();
      const std::string payload = stamped_payload(size);
      for (size_t i = 0; i < n; i++) commands += resp_command({"XADD", key, "*", "s", payload});
      bool ok = producer.send(commands);
      for (size_t i = 0; i < n && ok; i++) {
        Resp reply;
        ok = producer.read(reply) && reply.kind == Resp::Kind::bulk;
      }
      if (!ok) {
        std::fprintf(stderr, "redis throughput: XADD failed\n");
        failed.store(true);
      }
    }
    producer_done.store(true);
  });
  std::string last = "0-0";
  size_t received = 0;
  auto last_at = start;
  while (received < count && !failed.load()) {
    Resp reply;
    if (!consumer.call(
            resp_command({"XREAD", "COUNT", "1000", "BLOCK", "1000", "STREAMS", key, last}),
            reply)) {
      failed.store(true);
      break;
    }
    last_at = SteadyClock::now();
    const auto entries = xread_entries(reply);
    if (entries.empty()) {
      if (producer_done.load()) break;
      continue;
    }
    result.latency_us.push_back(micros_between(stamp_of(entries.front().second), last_at));
    received += entries.size();
    last = entries.back().first;
  }
  producer_thread.join();
  finish_throughput(result, received, count, size, last_at - start, cpu.used_ns(), failed.load());
  return result;
}

}  // namespace hark::bench
