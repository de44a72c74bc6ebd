// End-to-end wake-up latency of a parked poll against harkd, next to a loopback TCP echo round
// trip measured in the same run (the contract's yardstick: wake p50 ≤ 1.5 × echo p50).
// Scenarios:
//   echo   a client thread sends one frame-sized message to an echo thread (blocking sockets,
//          TCP_NODELAY) every `gap` and reads it back: latency = read back - sent.
//   wake   harkd (2 shards, temp data dir, ephemeral port) with one producer and one consumer
//          connection. The consumer long-polls partition 0 (`next`, auto-commit, wait 1 s) in
//          a loop; the producer waits until the previous message arrived, idles `gap` (the
//          consumer parks again meanwhile), records the steady clock and sends one message
//          carrying that time in its payload. latency = poll returned - sent, which covers
//          the producer's send, harkd's append, the wake and the poll response. Measured on
//          two servers in the same run: one with connection migration (the default: both
//          connections move to the partition's owner shard after their first request, so
//          the wake needs no hop) and one with --migrate-connections false (the producer's
//          append and the consumer's answer may each cross shards).
//   ping   a client sends PING to harkd every `gap` and reads the answer: harkd's own request
//          round trip, the floor under the wake (which adds the append and the wake itself).
//   timeout  the consumer polls past the end of partition 0 with a 10 ms wait, one poll after
//          another: overshoot = answered - sent - 10 ms, as a client sees it (it includes one
//          loopback round trip; the contract's ≤ 1 ms p99 is for the server's timer). Each
//          poll is followed by a plain client sleep_for(10 ms), whose overshoot is the
//          machine's own scheduling noise at the same moments.
// The echo message is as long as the producer's send frame, so both move the same bytes out.
// Loopback only, bounded loops. Echo and wake alternate in 10 blocks (1 with --smoke); the
// first 5 % of each block are warm-up and not counted.
// Usage: hark_e2e_wake_bench [--smoke] [--count N] [--shards N] [--gap-us N] [--harkd PATH]
//                            [--durability never|interval|always]
//   (smoke: 20 iterations, for the bench-smoke ctest label; shards: harkd's, default 2 (1
//   keeps every hop on one shard); gap: the idle time before each message, default 1000 µs
//   (the wake scenario with a gap shorter than harkd's answer measures less than a park);
//   PATH defaults to the built harkd; durability: harkd's, default never — under always the
//   wake follows the fdatasync of the send)
#include <poll.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "bench/support/latency.h"
#include "protocol/send_messages.h"
#include "tests/e2e/harkd_process.h"
#include "tools/client/client.h"

#ifndef HARK_HARKD_PATH
#error "HARK_HARKD_PATH must name the harkd binary (bench/CMakeLists.txt sets it)"
#endif

namespace hark::bench {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// The idle time before each message; --gap-us changes it (0: back to back).
std::chrono::microseconds gap = 1ms;
constexpr auto poll_wait = 1s;

double micros_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

// Drops the warm-up from the front of a run's samples.
std::vector<double> without_warmup(std::vector<double> samples) {
  const size_t warmup = samples.size() / 20;
  samples.erase(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(warmup));
  return samples;
}

bool write_all(int fd, const std::byte* data, size_t size) {
  while (size > 0) {
    const ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

bool read_all(int fd, std::byte* data, size_t size) {
  while (size > 0) {
    const ssize_t got = ::recv(fd, data, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    data += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// The echo round trip: a server thread echoing `size`-byte messages on one connection.
std::vector<double> measure_echo(int count, size_t size) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("echo listener");
    return {};
  }
  std::thread server([listener, size] {
    const int connection = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) return;
    set_nodelay(connection);
    std::vector<std::byte> buffer(size);
    while (read_all(connection, buffer.data(), size) &&
           write_all(connection, buffer.data(), size)) {
    }
    ::close(connection);
  });

  std::vector<double> samples;
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client >= 0 &&
      ::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    set_nodelay(client);
    std::vector<std::byte> message(size, std::byte{0x5a});
    std::vector<std::byte> echoed(size);
    for (int i = 0; i < count; i++) {
      if (gap.count() > 0) std::this_thread::sleep_for(gap);
      const auto sent = SteadyClock::now();
      if (!write_all(client, message.data(), size) || !read_all(client, echoed.data(), size)) {
        std::fprintf(stderr, "echo: connection failed\n");
        break;
      }
      samples.push_back(micros_between(sent, SteadyClock::now()));
    }
  } else {
    std::perror("echo connect");
  }
  if (client >= 0) ::close(client);  // The server reads end of stream and returns.
  server.join();
  ::close(listener);
  return samples;
}

// The producer's message: the steady-clock send time, 8 bytes.
protocol::Bytes stamp_payload(SteadyClock::time_point sent) {
  const int64_t nanos = sent.time_since_epoch().count();
  protocol::Bytes payload(sizeof nanos);
  std::memcpy(payload.data(), &nanos, sizeof nanos);
  return payload;
}

SteadyClock::time_point payload_stamp(std::span<const std::byte> payload) {
  int64_t nanos = 0;
  if (payload.size() == sizeof nanos) std::memcpy(&nanos, payload.data(), sizeof nanos);
  return SteadyClock::time_point(SteadyClock::duration(nanos));
}

const protocol::SendTarget& target() {
  static const protocol::SendTarget value{.stream_id = protocol::Identifier::numeric(0),
                                          .topic_id = protocol::Identifier::numeric(0),
                                          .partitioning = protocol::Partitioning::partition(0)};
  return value;
}

// Bytes of the producer's send frame (header, metadata, index, message): the echo's size.
size_t send_frame_size() {
  const protocol::Bytes payload = stamp_payload(SteadyClock::now());
  const protocol::OutgoingMessage message{.payload = payload};
  protocol::Bytes frame;
  if (!protocol::encode_send_messages(target(), {&message, 1}, frame).ok()) return 0;
  return frame.size();
}

Result<std::unique_ptr<client::Client>> connect(const std::string& address) {
  auto connection = std::make_unique<client::Client>();
  HARK_TRY(connection->connect(address));
  const auto login = connection->login("iggy", "iggy");
  if (!login.ok()) return login.error();
  return connection;
}

struct WakeRun {
  std::vector<double> latency_us;
  uint64_t empty_polls = 0;  // Polls that timed out (none expected: one message per gap).
  bool failed = false;
};

// The consumer: polls until `count` messages arrived or `stop`, recording each latency.
void consume(client::Client& consumer, int count, const std::atomic<bool>& stop,
             std::atomic<int>& received, WakeRun& run) {
  protocol::PollMessagesRequest request;
  request.consumer = {protocol::ConsumerKind::consumer, protocol::Identifier::numeric(1)};
  request.stream_id = protocol::Identifier::numeric(0);
  request.topic_id = protocol::Identifier::numeric(0);
  request.partition_id = 0;
  request.strategy = {protocol::PollingKind::next, 0};
  request.count = 1;
  request.auto_commit = true;
  request.wait_timeout_us =
      std::chrono::duration_cast<std::chrono::microseconds>(poll_wait).count();
  // Bounded: every poll returns a message or ends its wait, and `stop` ends the loop within a
  // wait of the producer giving up.
  const int polls_max = count + 10;
  for (int polls = 0; received.load() < count && !stop.load() && polls < polls_max; polls++) {
    const Result<client::PolledMessages> polled = consumer.poll_messages(request);
    const auto returned = SteadyClock::now();
    if (!polled.ok()) {
      std::fprintf(stderr, "wake: poll failed: %s\n",
                   std::string(error_name(polled.error())).c_str());
      run.failed = true;
      break;
    }
    if (polled->messages().count() == 0) {
      run.empty_polls++;
      continue;
    }
    for (const protocol::MessageView message : polled->messages()) {
      run.latency_us.push_back(micros_between(payload_stamp(message.payload()), returned));
    }
    received.fetch_add(static_cast<int>(polled->messages().count()));
    received.notify_one();
  }
  received.store(count);  // Releases a producer waiting on a consumer that gave up.
  received.notify_one();
}

WakeRun measure_wake(const std::string& address, int count) {
  WakeRun run;
  auto producer = connect(address);
  auto consumer = connect(address);
  if (!producer.ok() || !consumer.ok()) {
    std::fprintf(stderr, "wake: cannot connect and log in to %s\n", address.c_str());
    run.failed = true;
    return run;
  }
  std::atomic<int> received{0};
  std::atomic<bool> stop{false};
  bool send_failed = false;  // The consumer thread owns `run` until it is joined.
  std::thread consumer_thread([&] { consume(**consumer, count, stop, received, run); });
  for (int i = 0; i < count; i++) {
    for (int seen = received.load(); seen < i; seen = received.load()) received.wait(seen);
    if (received.load() >= count) break;  // The consumer gave up.
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
    const protocol::Bytes payload = stamp_payload(SteadyClock::now());
    const protocol::OutgoingMessage message{.payload = payload};
    const Status sent = (*producer)->send_messages(target(), {&message, 1});
    if (!sent.ok()) {
      std::fprintf(stderr, "wake: send failed: %s\n",
                   std::string(error_name(sent.error())).c_str());
      send_failed = true;
      break;
    }
  }
  stop.store(true);
  consumer_thread.join();
  run.failed = run.failed || send_failed;
  return run;
}

// PING round trips to harkd, one every `gap`.
std::vector<double> measure_ping(const std::string& address, int count, bool& failed) {
  std::vector<double> samples;
  auto client = connect(address);
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

// PING round trips to harkd over a plain blocking socket (no client library): harkd's own
// share of a request, next to the echo thread's.
std::vector<double> measure_raw_ping(const std::string& address, int count, bool& failed) {
  std::vector<double> samples;
  const size_t colon = address.rfind(':');
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &server.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof server) != 0) {
    std::perror("raw ping connect");
    if (fd >= 0) ::close(fd);
    failed = true;
    return samples;
  }
  set_nodelay(fd);
  // [length 4][code 1 = ping]; the answer is [status 0][length 0].
  const std::array<uint8_t, 8> ping{4, 0, 0, 0, 1, 0, 0, 0};
  std::array<std::byte, 8> answer{};
  for (int i = 0; i < count; i++) {
    if (gap.count() > 0) std::this_thread::sleep_for(gap);
    const auto sent = SteadyClock::now();
    if (!write_all(fd, reinterpret_cast<const std::byte*>(ping.data()), ping.size()) ||
        !read_all(fd, answer.data(), answer.size())) {
      std::fprintf(stderr, "raw ping: failed\n");
      failed = true;
      break;
    }
    samples.push_back(micros_between(sent, SteadyClock::now()));
  }
  ::close(fd);
  return samples;
}

constexpr auto timeout_wait = 10ms;

struct TimeoutRun {
  std::vector<double> overshoot_us;        // Of the polls.
  std::vector<double> sleep_overshoot_us;  // Of a plain sleep_for(timeout_wait) in between.
  bool failed = false;                     // A poll did not time out empty.
};

// Timed-out polls, one after another on one connection, each followed by a client-side sleep
// of the same length: the machine's own scheduling noise, measured alongside.
TimeoutRun measure_timeouts(const std::string& address, int count) {
  TimeoutRun run;
  auto consumer = connect(address);
  if (!consumer.ok()) {
    run.failed = true;
    return run;
  }
  const double wait_us = std::chrono::duration<double, std::micro>(timeout_wait).count();
  protocol::PollMessagesRequest request;
  request.consumer = {protocol::ConsumerKind::consumer, protocol::Identifier::numeric(2)};
  request.stream_id = protocol::Identifier::numeric(0);
  request.topic_id = protocol::Identifier::numeric(0);
  request.partition_id = 0;
  request.strategy = {protocol::PollingKind::offset, 1'000'000'000'000};  // Far past the end.
  request.count = 1;
  request.wait_timeout_us =
      std::chrono::duration_cast<std::chrono::microseconds>(timeout_wait).count();
  for (int i = 0; i < count; i++) {
    const auto sent = SteadyClock::now();
    const Result<client::PolledMessages> polled = (*consumer)->poll_messages(request);
    const auto answered = SteadyClock::now();
    if (!polled.ok() || polled->messages().count() != 0) {
      std::fprintf(stderr, "timeout: the poll did not time out empty\n");
      run.failed = true;
      break;
    }
    run.overshoot_us.push_back(micros_between(sent, answered) - wait_us);
    const auto slept = SteadyClock::now();
    std::this_thread::sleep_for(timeout_wait);
    run.sleep_overshoot_us.push_back(micros_between(slept, SteadyClock::now()) - wait_us);
  }
  return run;
}

Status create_topic(const std::string& address) {
  HARK_TRY_ASSIGN(auto admin, connect(address));
  const auto stream = admin->create_stream({.name = "bench"});
  if (!stream.ok()) return stream.error();
  protocol::CreateTopicRequest request;
  request.stream_id = protocol::Identifier::numeric(stream->id);
  request.partitions_count = 1;
  request.name = "wake";
  const auto topic = admin->create_topic(request);
  if (!topic.ok()) return topic.error();
  return ok_status();
}

// Everything one run measures.
struct Results {
  std::vector<double> echo_us;
  std::vector<double> ping_us;
  std::vector<double> raw_ping_us;
  std::vector<double> wake_us;        // harkd with connection migration (the default).
  std::vector<double> wake_fixed_us;  // harkd with --migrate-connections false.
  uint64_t empty_polls = 0;
  TimeoutRun timeouts;
  bool failed = false;
};

// Echo, ping and wake alternate in blocks, so a neighbour's load on this shared machine weighs
// on all of them the same way and their ratios stay meaningful; the timeouts come last.
Results measure_all(const std::string& address, const std::string& fixed_address, int count,
                    bool smoke) {
  Results results;
  const size_t size = send_frame_size();
  const int blocks = smoke ? 1 : 10;
  const auto append = [](std::vector<double>& to, std::vector<double> block) {
    block = without_warmup(std::move(block));
    to.insert(to.end(), block.begin(), block.end());
  };
  for (int block = 0; block < blocks && !results.failed; block++) {
    append(results.echo_us, measure_echo(count / blocks, size));
    bool ping_failed = false;
    append(results.ping_us, measure_ping(address, count / blocks, ping_failed));
    append(results.raw_ping_us, measure_raw_ping(address, count / blocks, ping_failed));
    WakeRun wake = measure_wake(address, count / blocks);
    append(results.wake_us, std::move(wake.latency_us));
    WakeRun fixed = measure_wake(fixed_address, count / blocks);
    append(results.wake_fixed_us, std::move(fixed.latency_us));
    results.empty_polls += wake.empty_polls + fixed.empty_polls;
    results.failed = ping_failed || wake.failed || fixed.failed;
  }
  results.timeouts = measure_timeouts(address, smoke ? 5 : count / 4);
  results.timeouts.overshoot_us = without_warmup(std::move(results.timeouts.overshoot_us));
  results.timeouts.sleep_overshoot_us =
      without_warmup(std::move(results.timeouts.sleep_overshoot_us));
  results.failed = results.failed || results.timeouts.failed || results.echo_us.empty() ||
                   results.wake_us.empty() || results.timeouts.overshoot_us.empty();
  return results;
}

void print_results(Results& results, uint32_t shards, bool smoke) {
  const std::string gap_note = "gap " + std::to_string(gap.count()) + " µs";
  const Percentiles echo = summarize(results.echo_us);
  const Percentiles wake = summarize(results.wake_us);
  const Percentiles fixed = summarize(results.wake_fixed_us);
  print_header();
  print_row("echo (loopback TCP round trip)", echo,
            std::to_string(send_frame_size()) + "-byte messages, " + gap_note);
  print_row("ping (harkd request round trip)", summarize(results.ping_us), gap_note);
  print_row("ping, plain socket", summarize(results.raw_ping_us),
            "as echo: blocking send/recv, no client library");
  print_row("wake (send -> parked poll returns)", wake,
            "harkd " + std::to_string(shards) + " shards, connections migrate to the owner");
  print_row("wake, migration off", fixed,
            "harkd " + std::to_string(shards) + " shards, connections stay where accepted");
  std::printf("(both: wait 1 s, next + auto-commit; %llu empty polls)\n",
              static_cast<unsigned long long>(results.empty_polls));
  print_row("timeout 10 ms: answered - sent - wait", summarize(results.timeouts.overshoot_us),
            "client side: includes one loopback round trip");
  print_row("client sleep_for(10 ms) overshoot", summarize(results.timeouts.sleep_overshoot_us),
            "this machine's scheduling noise, same moments");
  if (echo.p50 > 0) {
    std::printf("wake_p50 / echo_p50 = %.2f (target <= 1.5); migration off: %.2f%s\n",
                wake.p50 / echo.p50, fixed.p50 / echo.p50,
                smoke ? "  [smoke: too few samples to mean anything]" : "");
  }
}

}  // namespace
}  // namespace hark::bench

int main(int argc, char** argv) {
  using namespace hark;
  bool smoke = false;
  int count = 2000;
  uint32_t shards = 2;
  std::string harkd_path = HARK_HARKD_PATH;
  std::string durability = "never";
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "--smoke") {
      smoke = true;
      count = 20;
    } else if (arg == "--count" && i + 1 < argc) {
      count = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--gap-us" && i + 1 < argc) {
      bench::gap = std::chrono::microseconds(std::max(0, std::atoi(argv[++i])));
    } else if (arg == "--shards" && i + 1 < argc) {
      shards = static_cast<uint32_t>(std::max(1, std::atoi(argv[++i])));
    } else if (arg == "--harkd" && i + 1 < argc) {
      harkd_path = argv[++i];
    } else if (arg == "--durability" && i + 1 < argc) {
      durability = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--smoke] [--count N] [--shards N] [--gap-us N] [--harkd PATH] "
                   "[--durability never|interval|always]\n",
                   argv[0]);
      return 2;
    }
  }

  // Two servers side by side: migration on (the default) and off.
  test::HarkdProcess harkd;
  test::HarkdProcess fixed;
  test::HarkdProcess::Options options;
  options.harkd_path = harkd_path;
  options.shards_count = shards;
  options.extra_args = {"--durability", durability};
  std::printf("harkd durability: %s\n", durability.c_str());
  test::HarkdProcess::Options fixed_options = options;
  fixed_options.extra_args.insert(fixed_options.extra_args.end(),
                                  {"--migrate-connections", "false"});
  for (auto [process, process_options] : {std::pair{&harkd, &options}, {&fixed, &fixed_options}}) {
    if (!process->start(*process_options)) {
      std::fprintf(stderr, "harkd did not start: %s\n%s", process->error_text().c_str(),
                   process->stderr_tail().c_str());
      return 1;
    }
    if (const Status created = bench::create_topic(process->address()); !created.ok()) {
      std::fprintf(stderr, "cannot create the stream and topic: %s\n",
                   std::string(error_name(created.error())).c_str());
      return 1;
    }
  }
  bench::Results results = bench::measure_all(harkd.address(), fixed.address(), count, smoke);
  bench::print_results(results, shards, smoke);
  bool clean = true;
  for (test::HarkdProcess* process : {&harkd, &fixed}) {
    const test::ProcessExit exit = process->stop();
    if (!exit.clean()) {
      std::fprintf(stderr, "harkd did not stop cleanly: %s\n%s", test::describe(exit).c_str(),
                   process->stderr_tail().c_str());
      clean = false;
    }
  }
  return results.failed || !clean ? 1 : 0;
}
