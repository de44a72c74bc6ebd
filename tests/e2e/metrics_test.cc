// Covers harkd's /metrics listener (server/metrics_server.h, docs/operations.md §Metrics) end to
// end: the counters move when a poll parks, is woken by a send and times out (waited on through
// the scrapes themselves, never a sleep); the lag series equal what WaitForLag reports for the
// same consumer and group; the series caps sum what they leave out into one overflow series;
// paths other than /metrics get 404; and hostile scrapers stay bounded (an oversized request
// head is answered 431, a slowloris is closed at metrics.request_timeout while other scrapes are
// answered meanwhile, and a scraper holding every slot does not lock others out).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/socket.h>

#include "hark/protocol/notify_requests.h"
#include "hark/protocol/notify_responses.h"
#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/e2e/metrics_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

constexpr auto request_timeout = 500ms;

class Metrics : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--metrics-address", "127.0.0.1:0", "--metrics-request-timeout",
                          std::to_string(request_timeout.count()) + "ms"};
    for (const std::string& arg : extra_args_) options.extra_args.push_back(arg);
    return options;
  }

  uint16_t port() const { return harkd_.metrics_port(); }

  Scrape must_scrape() {
    std::optional<Scrape> got = scrape(port());
    EXPECT_TRUE(got.has_value()) << "no answer from the metrics port " << port();
    if (!got) return {};
    EXPECT_EQ(got->status_line, "HTTP/1.1 200 OK");
    return *got;
  }

  // Scrapes until `ready(scrape)` holds (the signal), bounded; the last scrape either way.
  template <typename Ready>
  Scrape scrape_until(Ready ready) {
    Scrape last;
    const bool held = wait_until([&] {
      last = must_scrape();
      return ready(last);
    });
    EXPECT_TRUE(held) << "the metrics never got there; last scrape:\n" << last.body;
    return last;
  }

  Status store(protocol::Consumer who, uint32_t partition, uint64_t offset) {
    return admin_->store_consumer_offset({.consumer = who,
                                          .stream_id = Identifier::numeric(0),
                                          .topic_id = Identifier::numeric(0),
                                          .partition_id = partition,
                                          .offset = offset});
  }

  uint64_t wait_for_lag_total(protocol::Consumer who) {
    const auto lag = admin_->wait_for_lag({.consumer = who,
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = std::nullopt,
                                           .wait_timeout_us = 1'000'000,
                                           .watch = protocol::LagWatch::above,
                                           .threshold = 0});
    EXPECT_TRUE(lag.ok() && lag->has_value());
    return lag.ok() && lag->has_value() ? (*lag)->total_lag : UINT64_MAX;
  }

  std::vector<std::string> extra_args_;
};

protocol::Consumer consumer(uint32_t id) {
  return {.kind = protocol::ConsumerKind::consumer, .id = Identifier::numeric(id)};
}

protocol::Consumer group(uint32_t id) {
  return {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(id)};
}

TEST_F(Metrics, CountersMoveWhenAPollParksWakesAndTimesOut) {
  create_stream_and_topic(2);
  ASSERT_NE(port(), 0) << "harkd printed no metrics line";
  Scrape before = must_scrape();
  EXPECT_EQ(before["hark_parked_polls"], 0);
  EXPECT_EQ(before["hark_wakes_total"], 0);

  AsyncPoll parked(address(), poll_request(1, 1, next_strategy(), 10, 30s));
  scrape_until([](const Scrape& s) { return s["hark_parked_polls"] == 1; });
  ASSERT_TRUE(send_text(1, "wake").ok());
  const PollOutcome& woken = parked.wait(at_once_bound);
  ASSERT_TRUE(woken.answered);
  EXPECT_EQ(woken.payloads, std::vector<std::string>{"wake"});
  // The wake is counted before the send is acknowledged (docs/long-polling.md §Counters).
  const Scrape after_wake = must_scrape();
  EXPECT_EQ(after_wake["hark_wakes_total"], 1);
  EXPECT_EQ(after_wake["hark_parked_polls"], 0);
  EXPECT_EQ(after_wake["hark_wake_latency_seconds_count"], 1);
  EXPECT_EQ(after_wake["hark_messages_appended_total"], 1);
  EXPECT_GT(after_wake["hark_bytes_appended_total"], 4);
  EXPECT_EQ(after_wake["hark_commit_latency_seconds_count{durability=\"write\"}"], 1);
  EXPECT_EQ(after_wake["hark_partition_next_offset{stream=\"s\",topic=\"t\",partition=\"1\"}"], 1);

  // A short wait that runs out: that passing of time is the behaviour under test.
  AsyncPoll timing_out(address(), poll_request(1, 0, next_strategy(), 10, 100ms));
  const PollOutcome& empty = timing_out.wait(at_once_bound);
  ASSERT_TRUE(empty.answered);
  EXPECT_TRUE(empty.payloads.empty());
  const Scrape after_timeout = must_scrape();
  EXPECT_EQ(after_timeout["hark_poll_timeouts_total"], 1);
  EXPECT_EQ(after_timeout["hark_wakes_total"], 1);
  EXPECT_EQ(after_timeout["hark_parked_polls"], 0);
}

TEST_F(Metrics, LagEqualsWhatWaitForLagReports) {
  create_stream_and_topic(2);
  ASSERT_TRUE(admin_
                  ->create_consumer_group({.stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .name = "workers"})
                  .ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(send_text(0, "p0").ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(send_text(1, "p1").ok());
  ASSERT_TRUE(store(consumer(7), 0, 1).ok());  // Read 0..1 of partition 0, nothing of 1.
  ASSERT_TRUE(store(group(0), 1, 2).ok());     // Read all of partition 1, nothing of 0.

  const uint64_t consumer_lag = wait_for_lag_total(consumer(7));
  const uint64_t group_lag = wait_for_lag_total(group(0));
  EXPECT_EQ(consumer_lag, 3u + 3u);
  EXPECT_EQ(group_lag, 5u + 0u);
  const Scrape s = must_scrape();
  EXPECT_EQ(s["hark_consumer_lag_messages{stream=\"s\",topic=\"t\",consumer=\"7\"}"],
            static_cast<double>(consumer_lag))
      << s.body;
  EXPECT_EQ(s["hark_consumer_lag_messages{stream=\"s\",topic=\"t\",group=\"workers\"}"],
            static_cast<double>(group_lag))
      << s.body;
}

TEST_F(Metrics, OtherPathsAndMethodsAreRefused) {
  const auto other = http_exchange(port(), "GET /other HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->substr(0, other->find("\r\n")), "HTTP/1.1 404 Not Found");
  const auto post = http_exchange(port(), "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(post.has_value());
  EXPECT_EQ(post->substr(0, post->find("\r\n")), "HTTP/1.1 405 Method Not Allowed");
  const Scrape s = must_scrape();
  EXPECT_EQ(s["hark_metrics_requests_refused_total{reason=\"not_found\"}"], 2);
}

TEST_F(Metrics, AnOversizedRequestHeadIsAnswered431) {
  const std::string huge = "GET /metrics HTTP/1.1\r\nX-Fill: " + std::string(64 * 1024, 'a');
  const int fd = connect_loopback(port());
  ASSERT_GE(fd, 0);
  // harkd answers after its 8 KiB bound and closes; the rest may not all be taken.
  (void)::send(fd, huge.data(), huge.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  const auto answer = read_until_closed(fd, SteadyClock::now() + at_once_bound);
  ::close(fd);
  ASSERT_TRUE(answer.has_value()) << "harkd kept the connection open";
  if (!answer->empty()) {  // A reset may beat the answer to the client; the count says.
    EXPECT_EQ(answer->substr(0, answer->find("\r\n")),
              "HTTP/1.1 431 Request Header Fields Too Large");
  }
  EXPECT_EQ(must_scrape()["hark_metrics_requests_refused_total{reason=\"too_large\"}"], 1);
}

TEST_F(Metrics, ASlowlorisIsClosedAndDoesNotStallOtherScrapes) {
  const int slow = connect_loopback(port());
  ASSERT_GE(slow, 0);
  ASSERT_EQ(::send(slow, "GET /met", 8, MSG_NOSIGNAL), 8);
  // Served meanwhile: the listener is not held by the slow one.
  const Scrape meanwhile = must_scrape();
  EXPECT_EQ(meanwhile["hark_metrics_requests_refused_total{reason=\"timed_out\"}"], 0);
  const auto closed = read_until_closed(slow, SteadyClock::now() + at_once_bound);
  ::close(slow);
  ASSERT_TRUE(closed.has_value()) << "the slow scraper was never closed";
  EXPECT_TRUE(closed->empty()) << "it got an answer: " << *closed;
  EXPECT_EQ(must_scrape()["hark_metrics_requests_refused_total{reason=\"timed_out\"}"], 1);
}

TEST_F(Metrics, ScrapersHoldingEverySlotDoNotLockOthersOut) {
  std::vector<int> idle;
  for (int i = 0; i < 6; ++i) idle.push_back(connect_loopback(port()));
  const Scrape s = must_scrape();
  EXPECT_EQ(s.status_line, "HTTP/1.1 200 OK");
  EXPECT_GE(s["hark_metrics_requests_refused_total{reason=\"evicted\"}"], 3);
  for (const int fd : idle) ::close(fd);
}

class MetricsCapped : public Metrics {
 protected:
  MetricsCapped() {
    extra_args_ = {"--metrics-max-partition-series", "1", "--metrics-max-consumer-series", "1"};
  }
};

TEST_F(MetricsCapped, SeriesPastTheCapsAreSummedIntoOneOverflowSeries) {
  create_stream_and_topic(3);
  for (uint32_t p = 0; p < 3; ++p) {
    for (uint32_t i = 0; i <= p; ++i) ASSERT_TRUE(send_text(p, "m").ok());
  }
  ASSERT_TRUE(store(consumer(1), 2, 0).ok());
  ASSERT_TRUE(store(consumer(2), 2, 1).ok());
  const Scrape s = must_scrape();
  EXPECT_EQ(s["hark_metrics_partition_series_dropped"], 2);
  EXPECT_EQ(s["hark_metrics_consumer_series_dropped"], 1);
  double listed = 0;
  int partition_series = 0;
  for (const auto& [key, value] : s.samples) {
    if (key.rfind("hark_partition_next_offset{", 0) != 0 || key.find("_overflow") != key.npos) {
      continue;
    }
    listed += value;
    partition_series++;
  }
  EXPECT_EQ(partition_series, 1);
  const std::string overflow = "{stream=\"_overflow\",topic=\"_overflow\",";
  EXPECT_EQ(listed + s["hark_partition_next_offset" + overflow + "partition=\"_overflow\"}"],
            1 + 2 + 3)
      << s.body;
  // Consumer 1 or 2 is listed; the other's lag on partition 2 (2 or 1) is the overflow's.
  const double one = s["hark_consumer_lag_messages{stream=\"s\",topic=\"t\",consumer=\"1\"}"];
  const double two = s["hark_consumer_lag_messages{stream=\"s\",topic=\"t\",consumer=\"2\"}"];
  const double rest = s["hark_consumer_lag_messages" + overflow + "consumer=\"_overflow\"}"];
  EXPECT_TRUE((one == 1 + 2 + 2 && rest == 1) || (two == 1 + 2 + 1 && rest == 2)) << s.body;
}

}  // namespace
}  // namespace hark::test
