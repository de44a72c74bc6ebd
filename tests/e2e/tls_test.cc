// TLS on harkd's client listener (docs/operations.md §TLS), end to end through tools/client:
// a CA and certificates are made at run time (tls_certs.h); login, send and a parked poll
// woken over TLS, also after the connection migrated to its partition's shard; an expired
// and a wrong-host certificate fail the handshake on the client with Iggy's TLS codes while
// harkd keeps serving; a plain-TCP client and garbage are dropped and counted
// (tls_failures, also on /metrics); a silent TLS client is freed by the login deadline; a bad
// certificate or key stops harkd at start with a line naming it. Waits are harkd's counters and
// socket events, never sleeps.
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "hark/protocol/request.h"
#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/e2e/metrics_support.h"
#include "hark/tests/e2e/tls_certs.h"

namespace hark::test {
namespace {

std::string make_directory() {
  std::string pattern = (std::filesystem::temp_directory_path() / "hark-tls-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  return pattern;
}

// harkd with TLS on, its certificate for 127.0.0.1 and localhost from a fresh CA (or the one
// a test asks for), and clients that trust that CA.
class HarkdTls : public HarkdTest {
 protected:
  HarkdTls() : directory_(make_directory()), ca_(directory_) {
    server_ = ca_.issue("server", {"localhost", "IP:127.0.0.1"});
  }
  ~HarkdTls() override { std::filesystem::remove_all(directory_); }

  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--tls-cert", server_.cert, "--tls-key", server_.key};
    options.extra_args.insert(options.extra_args.end(), extra_args_.begin(), extra_args_.end());
    return options;
  }
  client::ClientOptions client_options() const override {
    client::ClientOptions options;
    options.tls = {.enabled = true, .ca_file = ca_.ca_file()};
    return options;
  }
  // A TLS client's connect outcome (no login).
  Status connect_with(client::TlsOptions tls) {
    client::ClientOptions options;
    options.tls = std::move(tls);
    client::Client client(options);
    return client.connect(address());
  }

  std::string directory_;
  TestCa ca_;
  CertFiles server_;
  std::vector<std::string> extra_args_;
};

TEST_F(HarkdTls, LoginSendAndAParkedPollWokenOverTls) {
  create_stream_and_topic(1);
  std::unique_ptr<client::Client> consumer = connect_client();
  ASSERT_NE(consumer, nullptr);
  auto polled = std::async(std::launch::async, [&] {
    return consumer->poll_messages(poll_request(1, 0, offset_strategy(0), 10, 10s));
  });
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_TRUE(send_text(0, "over tls").ok());
  const Result<client::PolledMessages> messages = polled.get();
  ASSERT_TRUE(messages.ok()) << error_name(messages.error());
  EXPECT_EQ(payloads_of(messages->messages()), std::vector<std::string>{"over tls"});
  EXPECT_EQ(harkd_stats().woken, 1u);
}

TEST_F(HarkdTls, AConnectionMigratesWithItsTlsSessionAndKeepsWorking) {
  create_stream_and_topic(2);
  // Each new connection lands on either shard; one that sends to a partition of the other
  // shard moves there with its session (2 shards: a handful of tries suffice).
  std::vector<std::unique_ptr<client::Client>> producers;
  for (int i = 0; i < 40 && harkd_stats().migrations == 0; i++) {
    producers.push_back(connect_client());
    ASSERT_NE(producers.back(), nullptr);
    ASSERT_TRUE(send_text(*producers.back(), protocol::Partitioning::partition(i % 2), "x").ok());
  }
  ASSERT_GE(harkd_stats().migrations, 1u);
  for (const std::unique_ptr<client::Client>& producer : producers) {
    EXPECT_TRUE(producer->ping().ok());
    EXPECT_TRUE(send_text(*producer, protocol::Partitioning::partition(0), "y").ok());
  }
}

TEST_F(HarkdTls, AWrongHostFailsTheHandshakeOnTheClientAndHarkdKeepsServing) {
  const Status wrong =
      connect_with({.enabled = true, .ca_file = ca_.ca_file(), .server_name = "elsewhere.example"});
  EXPECT_EQ(wrong.error(), Error::invalid_tls_domain);
  // The client's alert reaches harkd, which counts the failed handshake.
  EXPECT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& s) { return s.tls_failures == 1; }));
  // An untrusted CA (the system's) is refused too.
  EXPECT_EQ(connect_with({.enabled = true}).error(), Error::invalid_tls_certificate);
  EXPECT_EQ(connect_with({.enabled = true, .ca_file = directory_ + "/none.pem"}).error(),
            Error::invalid_tls_certificate_path);
  EXPECT_TRUE(
      connect_with({.enabled = true, .ca_file = ca_.ca_file(), .server_name = "localhost"}).ok());
  EXPECT_TRUE(admin_->ping().ok());
}

TEST_F(HarkdTls, APlainClientAndGarbageAreDroppedAndCounted) {
  RawConnection plain;
  ASSERT_TRUE(plain.connect(address()));
  ASSERT_TRUE(plain.send(request_frame(protocol::PingRequest{})));
  EXPECT_TRUE(plain.closed_by_peer(SteadyClock::now() + signal_timeout));
  RawConnection garbage;
  ASSERT_TRUE(garbage.connect(address()));
  // A TLS record header announcing a handshake, then bytes no ClientHello has.
  const std::vector<std::byte> bytes(64, std::byte{0x16});
  ASSERT_TRUE(garbage.send(bytes));
  EXPECT_TRUE(garbage.closed_by_peer(SteadyClock::now() + signal_timeout));
  EXPECT_TRUE(wait_for_stats(
      harkd_, [](const HarkdStats& s) { return s.tls_failures == 2 && s.connections == 1; }));
  EXPECT_TRUE(admin_->ping().ok());
}

// The failure the stats line counts as tls_failures is the tls_failure reason of
// hark_connections_closed_total on /metrics (docs/operations.md §Metrics).
class HarkdTlsMetrics : public HarkdTls {
 protected:
  HarkdTlsMetrics() { extra_args_ = {"--metrics-address", "127.0.0.1:0"}; }
};

TEST_F(HarkdTlsMetrics, AFailedHandshakeMovesTheTlsFailureReasonOfTheClosedConnections) {
  const std::string failures = "hark_connections_closed_total{reason=\"tls_failure\"}";
  const std::optional<Scrape> before = scrape(harkd_.metrics_port());
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ((*before)[failures], 0);
  EXPECT_EQ(
      connect_with({.enabled = true, .ca_file = ca_.ca_file(), .server_name = "elsewhere"}).error(),
      Error::invalid_tls_domain);
  ASSERT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& s) { return s.tls_failures == 1; }));
  const std::optional<Scrape> after = scrape(harkd_.metrics_port());
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ((*after)[failures], 1);
  EXPECT_EQ((*after)["hark_connections_closed_total{reason=\"login_timeout\"}"], 0);
}

class HarkdTlsDeadline : public HarkdTls {
 protected:
  HarkdTlsDeadline() { extra_args_ = {"--login-timeout", "300ms"}; }
};

TEST_F(HarkdTlsDeadline, TheLoginDeadlineFreesAClientStuckInItsHandshake) {
  RawConnection silent;
  ASSERT_TRUE(silent.connect(address()));
  // Half a record header: harkd waits for the rest, until the deadline.
  const std::vector<std::byte> half{std::byte{0x16}, std::byte{0x03}};
  ASSERT_TRUE(silent.send(half));
  EXPECT_TRUE(silent.closed_by_peer(SteadyClock::now() + signal_timeout));
  EXPECT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& s) {
    return s.login_timeouts >= 1 && s.connections <= 1 && s.tls_failures == 0;
  }));
}

// The server's certificate expired an hour ago.
class HarkdTlsExpired : public HarkdTls {
 protected:
  HarkdTlsExpired() { server_ = ca_.issue("expired", {"localhost", "IP:127.0.0.1"}, -48h, -1h); }
  // Nobody can log in over TLS here: the fixture's own client stays away.
  void SetUp() override { ASSERT_TRUE(harkd_.start(harkd_options())) << harkd_.error_text(); }
};

TEST_F(HarkdTlsExpired, AnExpiredCertificateFailsTheHandshakeOnTheClientAndHarkdKeepsServing) {
  EXPECT_EQ(connect_with({.enabled = true, .ca_file = ca_.ca_file()}).error(),
            Error::invalid_tls_certificate);
  EXPECT_EQ(connect_with({.enabled = true, .ca_file = ca_.ca_file()}).error(),
            Error::invalid_tls_certificate);
  EXPECT_TRUE(wait_for_stats(
      harkd_, [](const HarkdStats& s) { return s.tls_failures == 2 && s.connections == 0; }));
}

// Start errors: each stops harkd (exit 2) with a line naming the file, never a crash.
class HarkdTlsStart : public HarkdTls {
 protected:
  void SetUp() override {}
  std::string start_error() {
    EXPECT_FALSE(harkd_.start(harkd_options()));
    return harkd_.stderr_tail();
  }
};

TEST_F(HarkdTlsStart, AMissingCertificateStopsHarkdWithALineNamingIt) {
  server_.cert = directory_ + "/missing.pem";
  EXPECT_NE(start_error().find("cannot read the TLS certificate " + server_.cert),
            std::string::npos);
}

TEST_F(HarkdTlsStart, AKeyOfAnotherCertificateStopsHarkd) {
  server_.key = ca_.issue("other", {"localhost"}).key;
  EXPECT_NE(start_error().find("does not match the certificate"), std::string::npos);
}

}  // namespace
}  // namespace hark::test
