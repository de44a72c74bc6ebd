#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hark/bench/suite/fleet.h"
#include "hark/bench/suite/options.h"
#include "hark/core/base/result.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/message_requests.h"
#include "hark/protocol/send_messages.h"
#include "hark/tests/e2e/harkd_process.h"
#include "hark/tools/client/client.h"

namespace hark::bench {

// The harkd a scenario measures: spawned (fresh temp data directory, ephemeral loopback port,
// killed by PID at the end, on error and on SIGINT/SIGTERM) or external (--address: no pid,
// so no CPU or RSS figures).
class HarkServer {
 public:
  // `connections_max`: harkd's --connections-max (the idle scenario needs 10 000 and more).
  HarkServer() = default;
  ~HarkServer();
  HarkServer(const HarkServer&) = delete;
  HarkServer& operator=(const HarkServer&) = delete;

  // `extra_args` go to harkd after the options' own (--shards, --durability, ...).
  bool start(const Options& options, uint32_t connections_max = 1024,
             const std::vector<std::string>& extra_args = {});
  // Stops a spawned harkd; false (and its stderr tail) if it did not exit cleanly.
  bool stop();
  const std::string& address() const { return address_; }
  pid_t pid() const { return process_.running() ? process_.pid() : -1; }

 private:
  test::HarkdProcess process_;
  std::string address_;
};

// A blocking client logged in as root (with TLS when the last HarkServer started with
// Options::tls: a certificate for 127.0.0.1 made once per run with the openssl command).
Result<std::unique_ptr<client::Client>> connect_hark(const std::string& address);

// A fresh stream (unique name) holding one topic of `partitions` partitions, asking for
// `replication_factor` (CreateTopic's field; a cluster node raises it to its minimum,
// docs/cluster.md §Replication factor; one node keeps it and holds one copy).
struct TopicIds {
  uint32_t stream = 0;
  uint32_t topic = 0;
};
std::optional<TopicIds> create_topic(const std::string& address, const std::string& name,
                                     uint32_t partitions, uint8_t replication_factor = 1);

// Whole frames of harkd's replies for a Fleet, handed to `on_reply` (which returns false to
// fail the loop).
class HarkReplies : public ReplyParser {
 public:
  using Handler =
      std::function<bool(size_t link, uint32_t status, std::span<const std::byte> payload,
                         SteadyClock::time_point at)>;
  explicit HarkReplies(Handler on_reply) : on_reply_(std::move(on_reply)) {}
  ptrdiff_t parse(size_t link, std::span<const std::byte> received,
                  SteadyClock::time_point at) override;

 private:
  Handler on_reply_;
};

// A request's frame.
template <typename T>
protocol::Bytes frame_of(const T& request) {
  protocol::Bytes frame;
  (void)protocol::encode_request(request, frame);
  return frame;
}

// Opens `count` connections into `fleet` and logs each in (pipelined: all logins are sent, then
// the loop waits for every answer). `replies` must route status-0 answers through
// `pending` (see scenarios): this counts them down. False with a message on failure.
bool open_fleet(Fleet& fleet, const std::string& address, size_t count, size_t& pending);
// The same for every link of `pool`, fleet by fleet (from the caller's thread).
bool open_fleet(FleetPool& pool, const std::string& address, size_t& pending);

// The bytes of send_stamped's frame with an 8-byte message (header, metadata, index, message):
// the echo floor moves as many.
size_t send_frame_size();

// A send_messages frame of one message carrying the current time (the first 8 of `size` bytes),
// for a producer that is a Fleet link.
protocol::Bytes stamped_send_frame(const TopicIds& topic, uint32_t partition, size_t size = 8);

// Sends one message carrying its send time (the first 8 of `size` bytes) to `partition`.
Status send_stamped(client::Client& producer, const TopicIds& topic, uint32_t partition,
                    size_t size = 8);

// A poll of `partition` (next or an offset) for a consumer or a group, waiting `wait_us`.
protocol::PollMessagesRequest poll_request(const TopicIds& topic, std::optional<uint32_t> partition,
                                           protocol::Consumer consumer,
                                           protocol::PollingStrategy strategy, uint32_t count,
                                           uint64_t wait_us, bool auto_commit);

}  // namespace hark::bench
