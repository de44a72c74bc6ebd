#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/result.h"
#include "hark/protocol/request.h"
#include "hark/tests/e2e/harkd_process.h"
#include "hark/tools/client/client.h"

namespace hark::test {

// What the end-to-end tests share: a fixture that runs one harkd per test, byte-level
// connections for what the client library deliberately cannot do (a poll answered on another
// thread, malformed frames, a socket closed under a parked poll), and small builders.

using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// harkd's path (the HARK_HARKD_PATH compile definition).
std::string harkd_path();

// How late past its wait a timed-out poll may be answered before a test calls it a bug: the
// contract's overshoot is ≤ 1 ms p99, but these machines are shared and noisy, so the bound only
// catches "absurdly late" (a lost timer answered by something else). Doubled under sanitizers.
std::chrono::milliseconds late_bound();
// True in an ASan or TSan build: memory figures (RSS, address space) are then the sanitizer
// allocator's (quarantine, shadow), so tests assert them in plain builds only.
bool sanitized_build();
// How long "answered at once" may take: far below every wait a test uses (≥ 10 s), far above
// any scheduling noise.
inline constexpr std::chrono::milliseconds at_once_bound = 5s;

protocol::Bytes bytes_of(std::string_view text);
// Sends one message with `payload` to stream 0, topic 0 (to `partition`, in the second).
Status send_text_to(client::Client& client, const protocol::Partitioning& partitioning,
                    std::string_view payload);
Status send_to_partition(client::Client& client, uint32_t partition, std::string_view payload);
std::string text_of(std::span<const std::byte> bytes);

// Offsets and payloads of the messages a poll returned.
std::vector<uint64_t> offsets_of(const protocol::MessageBatchView& messages);
std::vector<std::string> payloads_of(const protocol::MessageBatchView& messages);

// A poll request on stream 0, topic 0 (numeric ids), partition `partition`; wait 0 leaves the
// wait_timeout_us field out (a classic poll, as released SDKs send).
protocol::PollMessagesRequest poll_request(uint32_t consumer_id, uint32_t partition,
                                           protocol::PollingStrategy strategy, uint32_t count,
                                           std::chrono::microseconds wait,
                                           bool auto_commit = false);
inline protocol::PollingStrategy next_strategy() { return {protocol::PollingKind::next, 0}; }
inline protocol::PollingStrategy offset_strategy(uint64_t offset) {
  return {protocol::PollingKind::offset, offset};
}

// The whole frame of `request`, as the client library would send it.
protocol::Bytes request_frame(const protocol::Request& request);

// One response frame, read whole.
struct RawResponse {
  uint32_t status = 0;
  protocol::Bytes payload;
};

// A blocking loopback TCP connection that speaks frames as bytes, owned by one thread except
// for shutdown(), which any thread may call to end a blocked read. Failures are reported
// through gtest and as a false/empty return, never thrown past the test.
class RawConnection {
 public:
  RawConnection() = default;
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  [[nodiscard]] bool connect(const std::string& address);
  // Connects and logs in (as iggy/iggy by default).
  [[nodiscard]] bool connect_and_login(const std::string& address,
                                       const std::string& username = "iggy",
                                       const std::string& password = "iggy");
  [[nodiscard]] bool send(std::span<const std::byte> bytes);
  // Reads one response before `deadline`; nullopt on a timeout, a closed or failed socket.
  std::optional<RawResponse> read_response(SteadyClock::time_point deadline);
  // Sends `frame` and reads its response within `timeout`.
  std::optional<RawResponse> exchange(std::span<const std::byte> frame,
                                      std::chrono::milliseconds timeout = at_once_bound);
  // True if a byte (or end of stream) can be read now: harkd answered or closed.
  bool readable_now() const;
  // True if harkd closes the connection (end of stream or reset) before `deadline` without
  // sending anything first; false on data or a timeout.
  bool closed_by_peer(SteadyClock::time_point deadline);
  void shutdown();
  void close();
  bool is_open() const { return fd_ >= 0; }

 private:
  bool read_exact(std::span<std::byte> buffer, SteadyClock::time_point deadline);

  int fd_ = -1;
};

// A poll's answer as the tests look at it.
struct PollOutcome {
  bool answered = false;  // False: no response before the deadline, or the socket failed.
  uint32_t status = 0;    // 0 or the Iggy error code.
  protocol::PollResponseHeader header;
  std::vector<uint64_t> offsets;
  std::vector<std::string> payloads;
  SteadyClock::time_point answered_at;
};

// Decodes a poll response (a malformed one is a test failure).
PollOutcome poll_outcome(const std::optional<RawResponse>& response);

// A poll sent on a connection of its own and answered on a thread of its own, so the test can
// do other things (produce, purge, stop harkd) while it is parked. The connection is opened
// and logged in on the calling thread; only the poll's exchange runs on the thread. The
// destructor shuts the socket down, so a test that fails early does not wait out the poll.
class AsyncPoll {
 public:
  AsyncPoll(const std::string& address, const protocol::PollMessagesRequest& request);
  // The same on an open, logged-in connection of the caller's (which must outlive this and
  // is not touched by the caller until wait() returned).
  AsyncPoll(RawConnection& connection, const protocol::PollMessagesRequest& request);
  ~AsyncPoll();
  AsyncPoll(const AsyncPoll&) = delete;
  AsyncPoll& operator=(const AsyncPoll&) = delete;

  bool answered() const { return finished_.load(std::memory_order_acquire); }
  // Waits until the poll's thread ended (answer, error or `timeout`) and returns the outcome.
  const PollOutcome& wait(std::chrono::milliseconds timeout);
  SteadyClock::time_point sent_at() const { return sent_at_; }

 private:
  void send(const protocol::PollMessagesRequest& request);
  void finish();

  RawConnection own_connection_;
  RawConnection& connection_;
  SteadyClock::time_point sent_at_;
  std::mutex mutex_;
  std::condition_variable finished_cv_;
  std::atomic<bool> finished_{false};
  PollOutcome outcome_;  // Written by the thread before finished_.
  std::thread thread_;
};

// One harkd (2 shards) per test, stopped with SIGTERM at the end of the test, which must exit 0;
// on failure the test's report ends with harkd's stderr.
class HarkdTest : public ::testing::Test {
 protected:
  static constexpr uint32_t shards_count = 2;

  void SetUp() override;
  void TearDown() override;
  // How this fixture's harkd runs; by default 2 shards and nothing else.
  virtual HarkdProcess::Options harkd_options() const;

  // How connect_client() connects (a TLS fixture adds its CA); by default plain TCP.
  virtual client::ClientOptions client_options() const { return {}; }
  // A client connected and logged in as iggy/iggy (fails the test otherwise).
  std::unique_ptr<client::Client> connect_client();
  // Creates `username` (password "secret") as admin_ and returns its id (UINT32_MAX and a
  // test failure if it could not).
  uint32_t create_user(const std::string& username,
                       std::optional<protocol::Permissions> permissions, uint8_t status = 1);
  // Creates stream "s" and its topic "t" with `partitions` partitions: ids 0 and 0.
  void create_stream_and_topic(uint32_t partitions);
  // Sends one message with `payload` to stream 0, topic 0.
  Status send_text(client::Client& client, const protocol::Partitioning& partitioning,
                   std::string_view payload);
  Status send_text(uint32_t partition, std::string_view payload);
  // The partition's answer to an immediate poll (wait 0) with the same request.
  PollOutcome poll_now(protocol::PollMessagesRequest request);

  const std::string& address() const { return harkd_.address(); }
  // Asks harkd for a stats line (SIGUSR1) and returns it (a test failure and an empty result
  // if no readable line with every shard comes).
  HarkdStats harkd_stats();
  // Open file descriptors of the harkd process.
  size_t harkd_open_files() const;

  HarkdProcess harkd_;
  std::unique_ptr<client::Client> admin_;
};

}  // namespace hark::test
