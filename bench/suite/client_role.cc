#include "hark/bench/suite/client_role.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hark/bench/peers/nats.h"
#include "hark/bench/peers/peer_measures.h"
#include "hark/bench/peers/redis.h"
#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/net.h"
#include "hark/bench/suite/process_stats.h"

namespace hark::bench {
namespace {

constexpr int wait_seconds = 5;

struct RoleArgs {
  std::string role;
  std::string system;
  std::string address;
  std::string key;  // Redis: the stream key; NATS: the stream (consumer "c0" on it).
  TopicIds topic;   // hark: partition 0 of it.
  int count = 0;
  std::chrono::microseconds gap{1000};
};

// One parked receive: the message's stamp and when its reply was parsed; no stamp if the wait
// ended empty.
struct Received {
  bool ok = false;
  std::optional<SteadyClock::time_point> stamp;
  SteadyClock::time_point at;
};

// One system's client on one blocking connection.
class RoleClient {
 public:
  virtual ~RoleClient() = default;
  virtual bool connect(const RoleArgs& args) = 0;
  // One message stamped with the current time; returns once the server acknowledged it.
  virtual bool send_stamped() = 0;
  // Parks (up to wait_seconds) for message `index`.
  virtual Received receive(uint64_t index) = 0;
};

class HarkRole final : public RoleClient {
 public:
  bool connect(const RoleArgs& args) override {
    auto client = connect_hark(args.address);
    if (!client.ok()) return false;
    client_ = std::move(*client);
    topic_ = args.topic;
    return true;
  }
  bool send_stamped() override {
    const Status sent = bench::send_stamped(*client_, topic_, 0);
    if (!sent.ok())
      std::fprintf(stderr, "hark producer: %s\n", std::string(error_name(sent.error())).c_str());
    return sent.ok();
  }
  Received receive(uint64_t index) override {
    const protocol::PollMessagesRequest request = poll_request(
        topic_, 0, {protocol::ConsumerKind::consumer, protocol::Identifier::numeric(1)},
        {protocol::PollingKind::offset, index}, 1, wait_seconds * 1'000'000ull, false);
    const Result<client::PolledMessages> polled = client_->poll_messages(request);
    Received got{.ok = polled.ok(), .at = SteadyClock::now()};
    if (!polled.ok()) {
      std::fprintf(stderr, "hark consumer: %s\n", std::string(error_name(polled.error())).c_str());
      return got;
    }
    for (const protocol::MessageView message : polled->messages()) {
      got.stamp = read_stamp(message.payload());
      break;
    }
    return got;
  }

 private:
  std::unique_ptr<client::Client> client_;
  TopicIds topic_;
};

class RedisRole final : public RoleClient {
 public:
  bool connect(const RoleArgs& args) override {
    key_ = args.key;
    return client_.connect(args.address);
  }
  bool send_stamped() override {
    Resp reply;
    return client_.call(resp_command({"XADD", key_, "*", "s", stamped_payload(8)}), reply);
  }
  Received receive(uint64_t /*index*/) override {
    Resp reply;
    const std::string block = std::to_string(wait_seconds * 1000);
    Received got{
        .ok = client_.call(
            resp_command({"XREAD", "COUNT", "1", "BLOCK", block, "STREAMS", key_, last_}), reply)};
    got.at = SteadyClock::now();
    const auto entries = xread_entries(reply);
    if (got.ok && !entries.empty()) {
      last_ = entries[0].first;
      got.stamp = stamp_of(entries[0].second);
    }
    return got;
  }

 private:
  RedisClient client_;
  std::string key_;
  std::string last_ = "0-0";
};

class NatsRole final : public RoleClient {
 public:
  bool connect(const RoleArgs& args) override {
    name_ = args.key;
    return client_.connect(args.address);
  }
  bool send_stamped() override {
    return client_.send(nats_pub(name_, client_.inbox("ack"), stamped_payload(8))) &&
           nats_read_acks(client_, 1);
  }
  Received receive(uint64_t /*index*/) override {
    const long long expires_ns = wait_seconds * 1'000'000'000ll;
    NatsEvent event;
    Received got{.ok = client_.send(nats_pull(name_, "c0", client_.inbox("pull"), 1, expires_ns)) &&
                       client_.next(event)};
    got.at = SteadyClock::now();
    if (!got.ok || event.status != 0) return got;  // 408: the pull expired empty.
    got.stamp = stamp_of(event.payload);
    got.ok = client_.send(nats_pub(event.reply, "", "+ACK"));  // After the clock was read.
    return got;
  }

 private:
  NatsClient client_;
  std::string name_;
};

std::unique_ptr<RoleClient> make_client(const std::string& system) {
  if (system == "hark") return std::make_unique<HarkRole>();
  if (system == "redis") return std::make_unique<RedisRole>();
  if (system == "nats") return std::make_unique<NatsRole>();
  return nullptr;
}

bool parse_role(int argc, char** argv, RoleArgs& args) {
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--role")
      args.role = value;
    else if (flag == "--system")
      args.system = value;
    else if (flag == "--address")
      args.address = value;
    else if (flag == "--key")
      args.key = value;
    else if (flag == "--stream")
      args.topic.stream = static_cast<uint32_t>(std::atoi(value));
    else if (flag == "--topic")
      args.topic.topic = static_cast<uint32_t>(std::atoi(value));
    else if (flag == "--count")
      args.count = std::atoi(value);
    else if (flag == "--gap-us")
      args.gap = std::chrono::microseconds(std::atoi(value));
    else
      return false;
  }
  return (args.role == "producer" || args.role == "consumer") && args.count > 0 &&
         args.address.rfind("127.", 0) == 0;
}

bool produce(RoleClient& client, const RoleArgs& args) {
  char line[16];
  if (std::fgets(line, sizeof line, stdin) == nullptr || std::strcmp(line, "go\n") != 0) {
    return false;
  }
  const int64_t switches = process_context_switches(::getpid());
  std::vector<double> ack_us;
  bool ok = true;
  for (int i = 0; i < args.count && ok; i++) {
    std::this_thread::sleep_for(args.gap);
    // From just before the stamp to the parsed acknowledgement: what the producer waits.
    const SteadyClock::time_point sent = SteadyClock::now();
    ok = client.send_stamped();
    ack_us.push_back(micros_between(sent, SteadyClock::now()));
  }
  for (const double sample : ack_us) std::printf("ack %.3f\n", sample);
  std::printf("switches %lld\n",
              static_cast<long long>(process_context_switches(::getpid()) - switches));
  return ok;
}

bool consume(RoleClient& client, const RoleArgs& args) {
  const int64_t switches = process_context_switches(::getpid());
  std::vector<double> latency_us;
  uint64_t empty = 0;
  // Bounded: every receive returns within its wait.
  for (int polls = 0; std::ssize(latency_us) < args.count && polls < args.count + 10; polls++) {
    const Received got = client.receive(latency_us.size());
    if (!got.ok) break;
    if (!got.stamp) {
      empty++;
      continue;
    }
    latency_us.push_back(micros_between(*got.stamp, got.at));
  }
  const int64_t used = process_context_switches(::getpid()) - switches;
  for (const double sample : latency_us) std::printf("%.3f\n", sample);
  std::printf("empty %llu\nswitches %lld\n", static_cast<unsigned long long>(empty),
              static_cast<long long>(used));
  return std::ssize(latency_us) == args.count;
}

}  // namespace

int run_client_role(int argc, char** argv) {
  RoleArgs args;
  std::unique_ptr<RoleClient> client;
  if (!parse_role(argc, argv, args) || !(client = make_client(args.system))) {
    std::fprintf(stderr, "hark-bench client-role: bad arguments\n");
    return 2;
  }
  if (!client->connect(args)) {
    std::fprintf(stderr, "hark-bench client-role: %s %s cannot connect to %s\n",
                 args.system.c_str(), args.role.c_str(), args.address.c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  const bool ok = args.role == "producer" ? produce(*client, args) : consume(*client, args);
  std::fflush(stdout);
  // Holds the connection until the parent has read its figures and closes our stdin.
  for (int c = std::getchar(); c != EOF; c = std::getchar()) {
  }
  return ok ? 0 : 1;
}

}  // namespace hark::bench
