// Heartbeats (docs/operations.md §Connections, heartbeat.*): with heartbeat.enabled a client
// that sends nothing for heartbeat.interval × 1.2 while none of its requests is being answered
// is closed and counted (heartbeat_evictions); a client that pings stays, and so does one
// parked on a long poll. Off by default. The tests never sleep: the clock they wait on is a
// silent connection of their own being closed (or, heartbeats off, the login deadline closing
// one), and harkd's counters.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "hark/protocol/request.h"
#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

constexpr auto interval = 500ms;

// harkd with heartbeats every `interval`, and no connection of the fixture's own (HarkdTest's
// admin connection would be one more silent client).
class HarkdHeartbeat : public HarkdTest {
 protected:
  void SetUp() override { ASSERT_TRUE(harkd_.start(harkd_options())) << harkd_.error_text(); }
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--heartbeat-enabled", "true", "--heartbeat-interval", "500ms"};
    return options;
  }

  // A logged-in connection that then says nothing.
  std::unique_ptr<RawConnection> silent_client() {
    auto connection = std::make_unique<RawConnection>();
    EXPECT_TRUE(connection->connect_and_login(address()));
    return connection;
  }

  // Stream 0 / topic 0 with one partition, through a client that is closed at once.
  void create_topic() {
    admin_ = connect_client();
    ASSERT_NE(admin_, nullptr);
    create_stream_and_topic(1);
    admin_.reset();
  }
};

bool pings(RawConnection& connection) {
  const std::optional<RawResponse> pong =
      connection.exchange(request_frame(protocol::PingRequest{}));
  return pong.has_value() && pong->status == 0;
}

TEST_F(HarkdHeartbeat, ASilentClientIsClosedAfterTheIntervalAndCounted) {
  const std::unique_ptr<RawConnection> silent = silent_client();
  const SteadyClock::time_point logged_in = SteadyClock::now();
  ASSERT_TRUE(silent->closed_by_peer(logged_in + signal_timeout));
  // Never before the interval (harkd waits 1.2 × it from its answer to the login).
  EXPECT_GE(SteadyClock::now() - logged_in, interval);
  EXPECT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& s) {
    return s.heartbeat_evictions == 1 && s.connections == 0;
  }));
  EXPECT_TRUE(wait_until(
      [&] { return harkd_.stderr_tail().find("sent nothing for 600ms") != std::string::npos; }));
}

TEST_F(HarkdHeartbeat, AClientThatPingsWithinTheIntervalStays) {
  RawConnection pinging;
  ASSERT_TRUE(pinging.connect_and_login(address()));
  // The clock: a client logged in after the pinging one, closed once it was silent too long.
  const std::unique_ptr<RawConnection> clock = silent_client();
  bool clock_closed = false;
  const SteadyClock::time_point give_up = SteadyClock::now() + signal_timeout;
  while (!clock_closed && SteadyClock::now() < give_up) {
    ASSERT_TRUE(pings(pinging));
    // Paces the pings on a socket event: the clock's close, or 50 ms without it.
    clock_closed = clock->closed_by_peer(SteadyClock::now() + 50ms);
  }
  ASSERT_TRUE(clock_closed);
  EXPECT_TRUE(pings(pinging));
  EXPECT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& s) {
    return s.heartbeat_evictions == 1 && s.connections == 1;
  }));
}

TEST_F(HarkdHeartbeat, AClientParkedOnALongPollStaysAndGetsItsAnswer) {
  create_topic();
  AsyncPoll poll(address(), poll_request(1, 0, offset_strategy(0), 10, 20s));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  // Logged in after the poll parked: once it is closed, the poll has waited longer than 1.2 ×
  // the interval without its client sending anything.
  const std::unique_ptr<RawConnection> clock = silent_client();
  ASSERT_TRUE(clock->closed_by_peer(SteadyClock::now() + signal_timeout));
  EXPECT_FALSE(poll.answered());
  const std::unique_ptr<client::Client> producer = connect_client();
  ASSERT_NE(producer, nullptr);
  ASSERT_TRUE(send_text(*producer, protocol::Partitioning::partition(0), "late").ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.payloads, std::vector<std::string>{"late"});
  EXPECT_TRUE(wait_for_stats(
      harkd_, [](const HarkdStats& s) { return s.heartbeat_evictions >= 1 && s.parked_now == 0; }));
}

// Heartbeats off (the default), with an interval set: a silent client outlives it. The clock
// is the login deadline (1 s, above 1.2 × 500 ms) closing a connection that never logs in.
class HarkdNoHeartbeat : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--heartbeat-interval", "500ms", "--login-timeout", "1s"};
    return options;
  }
};

TEST_F(HarkdNoHeartbeat, ASilentClientStaysWhenHeartbeatsAreOff) {
  RawConnection silent;
  ASSERT_TRUE(silent.connect_and_login(address()));
  RawConnection clock;
  ASSERT_TRUE(clock.connect(address()));
  ASSERT_TRUE(clock.closed_by_peer(SteadyClock::now() + signal_timeout));
  EXPECT_FALSE(silent.readable_now());
  EXPECT_TRUE(pings(silent));
  const HarkdStats stats = harkd_stats();
  EXPECT_EQ(stats.heartbeat_evictions, 0u);
  EXPECT_EQ(stats.login_timeouts, 1u);
}

}  // namespace
}  // namespace hark::test
