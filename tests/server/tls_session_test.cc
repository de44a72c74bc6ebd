// Covers server/tls.h's mutual TLS (the node links' mode, docs/cluster.md §Trust) in memory:
// a client and a server TlsSession with certificates of one TestCa (tests/e2e/tls_certs.h)
// finish their handshake and carry data; a peer of another CA, an expired certificate and a
// client without a certificate each fail the handshake with a reason that names the cause.
// Bytes are moved between the two sessions by hand: no sockets, no threads, a few ms.
#include <array>
#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include "hark/server/tls.h"
#include "hark/tests/e2e/tls_certs.h"
#include "hark/tests/support/temp_directory.h"

namespace hark::server {
namespace {

using test::CertFiles;
using test::TestCa;

std::unique_ptr<TlsContext> mutual(const CertFiles& files, const std::string& ca) {
  std::string error;
  auto context = TlsContext::load({.cert = files.cert, .key = files.key, .peer_ca = ca}, error);
  EXPECT_NE(context, nullptr) << error;
  return context;
}

// Moves what `from` wrote into `to` and lets `to` read; its state.
TlsSession::ReadState pass(TlsSession& from, TlsSession& to, std::string* plaintext = nullptr) {
  protocol::Bytes bytes;
  from.take_output(bytes);
  to.feed(bytes);
  std::array<std::byte, 4096> buffer{};
  for (;;) {
    const TlsSession::ReadResult read = to.read(buffer);
    if (read.state != TlsSession::ReadState::data) return read.state;
    if (plaintext != nullptr)
      plaintext->append(reinterpret_cast<const char*>(buffer.data()), read.bytes);
  }
}

// Runs the handshake to its end; false when either side failed.
bool handshake(TlsSession& client, TlsSession& server) {
  std::array<std::byte, 16> none{};
  if (client.read(none).state == TlsSession::ReadState::failed) return false;  // Its hello.
  for (int round = 0; round < 4; round++) {
    if (pass(client, server) == TlsSession::ReadState::failed) return false;
    if (pass(server, client) == TlsSession::ReadState::failed) return false;
  }
  return client.established() && server.established();
}

class MutualTls : public ::testing::Test {
 protected:
  MutualTls() : ca_(directory_.path()) { node_ = ca_.issue("node", {"IP:127.0.0.1"}); }
  test::TempDirectory directory_{"hark-tls-session"};
  TestCa ca_;
  CertFiles node_;
};

TEST_F(MutualTls, CertificatesOfOneCaHandshakeAndCarryData) {
  const auto context = mutual(node_, ca_.ca_file());
  const auto client = TlsSession::connect(*context);
  const auto server = TlsSession::accept(*context);
  ASSERT_TRUE(handshake(*client, *server)) << client->failure() << " / " << server->failure();
  const std::string text = "hello over mutual TLS";
  const std::array<std::span<const std::byte>, 1> parts{std::as_bytes(std::span(text))};
  protocol::Bytes records;
  ASSERT_TRUE(client->encrypt(parts, records));
  server->feed(records);
  std::string received;
  std::array<std::byte, 4096> buffer{};
  const TlsSession::ReadResult read = server->read(buffer);
  ASSERT_EQ(read.state, TlsSession::ReadState::data);
  received.assign(reinterpret_cast<const char*>(buffer.data()), read.bytes);
  EXPECT_EQ(received, text);
}

TEST_F(MutualTls, APeerOfAnotherCaFailsNamingTheVerification) {
  const std::string other_directory = directory_.path() + "/other";
  ASSERT_EQ(::mkdir(other_directory.c_str(), 0700), 0);
  TestCa other(other_directory);
  const auto ours = mutual(node_, ca_.ca_file());
  const auto theirs = mutual(other.issue("rogue", {"IP:127.0.0.1"}), other.ca_file());
  const auto client = TlsSession::connect(*theirs);
  const auto server = TlsSession::accept(*ours);
  EXPECT_FALSE(handshake(*client, *server));
  EXPECT_FALSE(server->established());
  EXPECT_NE(client->failure().find("certificate verify failed"), std::string::npos)
      << client->failure();
}

TEST_F(MutualTls, AnExpiredCertificateFailsNamingItsExpiry) {
  const CertFiles expired =
      ca_.issue("expired", {"IP:127.0.0.1"}, std::chrono::hours(-48), std::chrono::hours(-24));
  const auto server_context = mutual(expired, ca_.ca_file());
  const auto client_context = mutual(node_, ca_.ca_file());
  const auto client = TlsSession::connect(*client_context);
  const auto server = TlsSession::accept(*server_context);
  EXPECT_FALSE(handshake(*client, *server));
  EXPECT_NE(client->failure().find("certificate has expired"), std::string::npos)
      << client->failure();
}

// A client with no certificate at all: plain OpenSSL, as any TLS client would be.
TEST_F(MutualTls, AClientWithoutACertificateIsRefused) {
  const auto context = mutual(node_, ca_.ca_file());
  const auto server = TlsSession::accept(*context);
  SSL_CTX* client_context = SSL_CTX_new(TLS_client_method());
  ASSERT_EQ(SSL_CTX_load_verify_locations(client_context, ca_.ca_file().c_str(), nullptr), 1);
  SSL* client = SSL_new(client_context);
  BIO* to_server = BIO_new(BIO_s_mem());
  BIO* from_server = BIO_new(BIO_s_mem());
  SSL_set_bio(client, from_server, to_server);
  SSL_set_connect_state(client);
  std::array<std::byte, 4096> buffer{};
  bool refused = false;
  for (int round = 0; round < 4 && !refused; round++) {
    SSL_do_handshake(client);
    while (const size_t pending = BIO_ctrl_pending(to_server)) {
      protocol::Bytes bytes(pending);
      BIO_read(to_server, bytes.data(), static_cast<int>(pending));
      server->feed(bytes);
    }
    refused = server->read(buffer).state == TlsSession::ReadState::failed;
    protocol::Bytes answer;
    server->take_output(answer);
    BIO_write(from_server, answer.data(), static_cast<int>(answer.size()));
  }
  EXPECT_TRUE(refused);
  EXPECT_NE(server->failure().find("peer did not return a certificate"), std::string::npos)
      << server->failure();
  SSL_free(client);
  SSL_CTX_free(client_context);
}

}  // namespace
}  // namespace hark::server
