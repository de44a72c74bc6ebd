#include "hark/bench/suite/hark_link.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "hark/bench/suite/children.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/user_requests.h"

namespace hark::bench {
namespace {

// Up to 64 MiB per reply: the throughput scenario's polls of 1000 × 1 KB fit easily.
constexpr uint32_t reply_payload_max = 64 * 1024 * 1024;

// How connect_hark() connects: set by the last HarkServer::start (one scenario at a time).
client::TlsOptions hark_tls;

// One certificate for the run, whichever harkd serves it (a scenario may run two at once);
// its directory is removed at exit.
struct RunCertificate {
  ~RunCertificate() {
    if (!directory.empty()) std::filesystem::remove_all(directory);
  }
  std::string directory;
};

const std::string* run_certificate() {
  static RunCertificate certificate;
  if (!certificate.directory.empty()) return &certificate.directory;
  std::string pattern = (std::filesystem::temp_directory_path() / "hark-bench-tls-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return nullptr;
  certificate.directory = pattern;
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
      pattern + "/key.pem -out " + pattern + "/cert.pem 2>/dev/null";
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "hark-bench --tls: the openssl command failed: %s\n", command.c_str());
    return nullptr;
  }
  return &certificate.directory;
}

}  // namespace

HarkServer::~HarkServer() {
  if (process_.running()) unregister_child(process_.pid());  // Its destructor kills it.
}

bool HarkServer::start(const Options& options, uint32_t connections_max,
                       const std::vector<std::string>& extra_args) {
  if (!options.address.empty()) {
    address_ = options.address;
    return true;
  }
  test::HarkdProcess::Options spawn;
  spawn.harkd_path = options.harkd_path;
  spawn.shards_count = options.shards;
  // A fleet logs every connection in at once (open_fleet): let them all wait for a hash.
  spawn.extra_args = {"--connections-max", std::to_string(connections_max),
                      "--auth-queue-max",  std::to_string(connections_max),
                      "--durability",      options.durability};
  spawn.extra_args.insert(spawn.extra_args.end(), extra_args.begin(), extra_args.end());
  hark_tls = {};
  if (options.tls) {
    const std::string* directory = run_certificate();
    if (directory == nullptr) return false;
    spawn.extra_args.insert(spawn.extra_args.end(), {"--tls-cert", *directory + "/cert.pem",
                                                     "--tls-key", *directory + "/key.pem"});
    hark_tls = {.enabled = true, .ca_file = *directory + "/cert.pem"};
  }
  if (!process_.start(spawn)) {
    std::fprintf(stderr, "harkd (%s) did not start: %s\n%s", options.harkd_path.c_str(),
                 process_.error_text().c_str(), process_.stderr_tail().c_str());
    return false;
  }
  register_child(process_.pid());
  address_ = process_.address();
  return true;
}

bool HarkServer::stop() {
  if (!process_.running()) return true;
  const pid_t pid = process_.pid();
  const test::ProcessExit exit = process_.stop();
  unregister_child(pid);
  if (!exit.clean()) {
    std::fprintf(stderr, "harkd did not stop cleanly: %s\n%s", test::describe(exit).c_str(),
                 process_.stderr_tail().c_str());
    return false;
  }
  return true;
}

Result<std::unique_ptr<client::Client>> connect_hark(const std::string& address) {
  client::ClientOptions options;
  options.tls = hark_tls;
  auto connection = std::make_unique<client::Client>(options);
  HARK_TRY(connection->connect(address));
  const auto login = connection->login("iggy", "iggy");
  if (!login.ok()) return login.error();
  return connection;
}

std::optional<TopicIds> create_topic(const std::string& address, const std::string& name,
                                     uint32_t partitions, uint8_t replication_factor) {
  static std::atomic<int> created{0};
  auto admin = connect_hark(address);
  if (!admin.ok()) {
    std::fprintf(stderr, "cannot log in to %s: %s\n", address.c_str(),
                 std::string(error_name(admin.error())).c_str());
    return std::nullopt;
  }
  // Unique across runs against one external server too.
  const std::string stream_name = "bench-" + name + "-" + std::to_string(::getpid()) + "-" +
                                  std::to_string(created.fetch_add(1));
  const auto stream = (*admin)->create_stream({.name = stream_name});
  if (!stream.ok()) {
    std::fprintf(stderr, "create stream: %s\n", std::string(error_name(stream.error())).c_str());
    return std::nullopt;
  }
  protocol::CreateTopicRequest request;
  request.stream_id = protocol::Identifier::numeric(stream->id);
  request.partitions_count = partitions;
  request.replication_factor = replication_factor;
  request.name = name;
  const auto topic = (*admin)->create_topic(request);
  if (!topic.ok()) {
    std::fprintf(stderr, "create topic: %s\n", std::string(error_name(topic.error())).c_str());
    return std::nullopt;
  }
  return TopicIds{.stream = stream->id, .topic = topic->topic.id};
}

ptrdiff_t HarkReplies::parse(size_t link, std::span<const std::byte> received,
                             SteadyClock::time_point at) {
  const protocol::FrameScan scan = protocol::scan_response(received, reply_payload_max);
  if (scan.state == protocol::FrameState::need_more) return 0;
  if (scan.state == protocol::FrameState::rejected) return -1;
  if (!on_reply_(link, scan.code, scan.payload, at)) return -1;
  return static_cast<ptrdiff_t>(scan.frame_size);
}

bool open_fleet(Fleet& fleet, const std::string& address, size_t count, size_t& pending) {
  const protocol::Bytes login =
      frame_of(protocol::LoginUserRequest{.username = "iggy", .password = "iggy"});
  // harkd takes at most limits.unauthenticated_per_address_max (64) connections not yet
  // logged in from one address, and closes one not logged in within limits.login_timeout
  // (10 s): connections open in a window of 32 logins in flight, each opened as one ends.
  constexpr size_t window = 32;
  pending = count;
  // A password login costs harkd one yescrypt hash (~30 ms of one core here, on
  // auth.hash_threads threads): 10 000 logins take minutes, so the wait scales with them, with
  // room for a machine shared with builds (48 ms a login was seen under load 5).
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30) +
                        std::chrono::milliseconds(100) * static_cast<int64_t>(count);
  size_t opened = 0;
  while (opened < count) {
    while (opened < count && opened - (count - pending) < window) {
      const int fd = connect_tcp(address);
      if (fd < 0) return false;
      const ptrdiff_t link = fleet.add(fd);
      if (link < 0 || !fleet.send(static_cast<size_t>(link), login)) return false;
      opened++;
    }
    if (!fleet.run([&] { return opened - (count - pending) < window; }, deadline)) return false;
  }
  return fleet.run([&] { return pending == 0; }, deadline);
}

bool open_fleet(FleetPool& pool, const std::string& address, size_t& pending) {
  for (size_t f = 0; f < pool.fleets(); f++) {
    if (!open_fleet(pool.fleet(f), address, pool.links_of(f), pending)) return false;
  }
  return true;
}

size_t send_frame_size() {
  protocol::Bytes payload(8);
  const protocol::OutgoingMessage message{.payload = payload};
  const protocol::SendTarget target{.stream_id = protocol::Identifier::numeric(1),
                                    .topic_id = protocol::Identifier::numeric(1),
                                    .partitioning = protocol::Partitioning::partition(0)};
  protocol::Bytes frame;
  (void)protocol::encode_send_messages(target, {&message, 1}, frame);
  return frame.size();
}

protocol::Bytes stamped_send_frame(const TopicIds& topic, uint32_t partition, size_t size) {
  protocol::Bytes payload(std::max<size_t>(size, 8));
  write_stamp(payload, SteadyClock::now());
  const protocol::OutgoingMessage message{.payload = payload};
  const protocol::SendTarget target{.stream_id = protocol::Identifier::numeric(topic.stream),
                                    .topic_id = protocol::Identifier::numeric(topic.topic),
                                    .partitioning = protocol::Partitioning::partition(partition)};
  protocol::Bytes frame;
  (void)protocol::encode_send_messages(target, {&message, 1}, frame);
  return frame;
}

Status send_stamped(client::Client& producer, const TopicIds& topic, uint32_t partition,
                    size_t size) {
  protocol::Bytes payload(std::max<size_t>(size, 8));
  write_stamp(payload, SteadyClock::now());
  const protocol::OutgoingMessage message{.payload = payload};
  const protocol::SendTarget target{.stream_id = protocol::Identifier::numeric(topic.stream),
                                    .topic_id = protocol::Identifier::numeric(topic.topic),
                                    .partitioning = protocol::Partitioning::partition(partition)};
  return producer.send_messages(target, {&message, 1});
}

protocol::PollMessagesRequest poll_request(const TopicIds& topic, std::optional<uint32_t> partition,
                                           protocol::Consumer consumer,
                                           protocol::PollingStrategy strategy, uint32_t count,
                                           uint64_t wait_us, bool auto_commit) {
  protocol::PollMessagesRequest request;
  request.consumer = consumer;
  request.stream_id = protocol::Identifier::numeric(topic.stream);
  request.topic_id = protocol::Identifier::numeric(topic.topic);
  request.partition_id = partition;
  request.strategy = strategy;
  request.count = count;
  request.auto_commit = auto_commit;
  if (wait_us != 0) request.wait_timeout_us = wait_us;  // 0: a classic poll, as SDKs send.
  return request;
}

}  // namespace hark::bench
