// EtcdGateway and NodeAgent against a real etcd 3.4 (tests/cluster/etcd_process.h: one member,
// auth on, a `harkd` user limited to /hark/): every Coordinator call through the HTTP/JSON
// gateway with its JSON shapes, leases, a watch from a revision and after a compaction, the
// refusals (wrong password, a key outside /hark/), and a paused controller whose lease lapses
// while another node is elected: its guarded write is rejected by etcd itself. Label cluster
// (release stage only): each test starts its own etcd, about a second.
#include "hark/server/cluster/etcd_gateway.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>

#include "etcd_process.h"
#include "hark/core/base/clock.h"
#include "hark/server/cluster/node_agent.h"
#include "hark/tests/e2e/tls_certs.h"
#include "hark/tests/support/temp_directory.h"
#include "hark/tests/support/wait_until.h"

namespace hark::server::cluster {
namespace {

using std::chrono::milliseconds;

struct GatewayTest : ::testing::Test {
  test::EtcdProcess etcd;
  void SetUp() override { ASSERT_EQ(etcd.start(), ""); }
  std::unique_ptr<EtcdGateway> gateway(std::string password = test::EtcdProcess::password) {
    return *EtcdGateway::create(
        {.endpoints = {etcd.url()}, .user = test::EtcdProcess::user, .password = password});
  }
};

TEST_F(GatewayTest, KeysAndTransactions) {
  auto client = gateway();
  const Result<int64_t> first = client->put("/hark/t/a", std::string("v\0\xff", 3), 0);
  ASSERT_TRUE(first.ok()) << client->last_error();
  (void)*client->put("/hark/t/b", "2", 0);
  RangeResult read = *client->range("/hark/t/", true);
  ASSERT_EQ(read.kvs.size(), 2u);
  EXPECT_EQ(read.kvs[0].value, std::string("v\0\xff", 3));  // Bytes survive base64.
  EXPECT_EQ(read.kvs[0].create_revision, *first);
  EXPECT_EQ(read.kvs[0].version, 1);
  Txn txn;
  txn.compare.push_back({.key = "/hark/t/a",
                         .target = Compare::Target::create_revision,
                         .op = Compare::Op::equal,
                         .number = 0});
  txn.success.push_back(TxnOp::put("/hark/t/a", "never"));
  txn.failure.push_back(TxnOp::range("/hark/t/", true));
  TxnResult result = *client->txn(txn);
  EXPECT_FALSE(result.succeeded);
  ASSERT_EQ(result.ranges.size(), 1u);
  EXPECT_EQ(result.ranges[0].kvs.size(), 2u);
  txn.compare[0] = {.key = "/hark/t/a",
                    .target = Compare::Target::value,
                    .op = Compare::Op::equal,
                    .value = std::string("v\0\xff", 3)};
  result = *client->txn(txn);
  EXPECT_TRUE(result.succeeded);
  EXPECT_EQ(client->range("/hark/t/a", false)->kvs.at(0).value, "never");
  (void)*client->erase("/hark/t/", true);
  EXPECT_TRUE(client->range("/hark/t/", true)->kvs.empty());
}

TEST_F(GatewayTest, LeasesAndWatches) {
  auto client = gateway();
  const Lease lease = *client->lease_grant(30);
  EXPECT_GE(lease.ttl_seconds, 30);
  const int64_t put = *client->put("/hark/w/node", "n", lease.id);
  EXPECT_GT(*client->lease_keep_alive(lease.id), 0);
  EXPECT_GT(*client->lease_time_to_live(lease.id), 0);
  ASSERT_TRUE(client->lease_revoke(lease.id).ok());
  EXPECT_TRUE(client->range("/hark/w/node", false)->kvs.empty());
  EXPECT_EQ(client->lease_keep_alive(lease.id).error(), Error::resource_not_found);
  WatchBatch batch = *client->watch("/hark/w/", true, put, milliseconds(2000));
  ASSERT_EQ(batch.events.size(), 2u) << client->last_error();
  EXPECT_EQ(batch.events[0].type, WatchEvent::Type::put);
  EXPECT_EQ(batch.events[0].kv.value, "n");
  EXPECT_EQ(batch.events[1].type, WatchEvent::Type::erase);
  // Nothing new: the watch answers empty after its wait.
  batch = *client->watch("/hark/w/", true, batch.revision + 1, milliseconds(100));
  EXPECT_TRUE(batch.events.empty());
  (void)*client->put("/hark/w/x", "1", 0);
  ASSERT_EQ(etcd.etcdctl("compaction " + std::to_string(*client->put("/hark/w/x", "2", 0)), true),
            "");
  batch = *client->watch("/hark/w/", true, put, milliseconds(2000));
  EXPECT_TRUE(batch.compacted);
}

TEST_F(GatewayTest, RefusalsAreNamed) {
  EXPECT_EQ(gateway("wrong")->range("/hark/", true).error(), Error::unauthenticated);
  auto client = gateway();
  EXPECT_EQ(client->put("/elsewhere", "x", 0).error(), Error::unauthorized);
  EXPECT_NE(client->last_error().find("permission denied"), std::string::npos)
      << client->last_error();
  auto nobody = *EtcdGateway::create({.endpoints = {"http://127.0.0.1:1"}});
  EXPECT_EQ(nobody->range("/hark/", true).error(), Error::cannot_establish_connection);
}

// etcd drops auth tokens (a restart can, and a password change does for that user's tokens).
// A call is refused and authenticates again; a watch is created and cancelled at once
// ("invalid auth token"), which the gateway reports as unauthenticated and follows with a new
// token, so the watch after it sees events again. (A cancelled watch once read as "no events":
// every node but the writer went blind after an etcd restart; HarkdEtcdOutage in
// tests/cluster/etcd_outage_test.cc is that case with real processes.)
TEST_F(GatewayTest, AWatchWhoseTokenEtcdDroppedAuthenticatesAgain) {
  auto client = gateway();
  const int64_t before = *client->put("/hark/r/a", "1", 0);
  ASSERT_EQ(client->watch("/hark/r/", true, before, milliseconds(2000))->events.size(), 1u);
  // The same password again: etcd invalidates the user's tokens all the same.
  const std::string passwd = std::string("echo ") + test::EtcdProcess::password +
                             " | ETCDCTL_API=3 etcdctl --endpoints=" + etcd.url() +
                             " --user=root:root-secret user passwd " + test::EtcdProcess::user +
                             " --interactive=false >/dev/null 2>&1";
  ASSERT_EQ(std::system(passwd.c_str()), 0);
  const Result<WatchBatch> first = client->watch("/hark/r/", true, before + 1, milliseconds(100));
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error(), Error::unauthenticated);
  EXPECT_NE(client->last_error().find("auth token"), std::string::npos) << client->last_error();
  const int64_t after = *client->put("/hark/r/b", "2", 0);
  const Result<WatchBatch> again = client->watch("/hark/r/", true, before + 1, milliseconds(2000));
  ASSERT_TRUE(again.ok()) << client->last_error();
  ASSERT_EQ(again->events.size(), 1u);
  EXPECT_EQ(again->events[0].kv.value, "2");
  EXPECT_EQ(again->revision, after);
}

// etcd with client TLS and --client-cert-auth, as docs/cluster.md §TLS to etcd in production
// runs it: harkd's gateway with the CA and a client certificate works (auth on top); without
// the CA the handshake fails with curl's reason in last_error(); without a client certificate
// etcd refuses the handshake.
TEST(GatewayTls, AnEtcdWithClientCertAuthIsReachedWithTheCaAndAClientCertificateOnly) {
  // A directory of its own: tests run in parallel and TestCa names its CA file ca.pem.
  const test::TempDirectory temp("hark-tls");
  const std::string& directory = temp.path();
  test::TestCa ca(directory);
  const test::CertFiles server = ca.issue("etcd", {"IP:127.0.0.1", "localhost"});
  // No CommonName: etcd 3.4 refuses gateway calls from a certificate that has one while auth
  // is on ("CommonName of client sending a request against gateway will be ignored").
  const test::CertFiles client = ca.issue_without_common_name("harkd", {"harkd"});
  const test::EtcdProcess::Tls tls{.ca = ca.ca_file(),
                                   .cert = server.cert,
                                   .key = server.key,
                                   .client_cert = client.cert,
                                   .client_key = client.key};
  test::EtcdProcess etcd;
  ASSERT_EQ(etcd.start(&tls), "");
  ASSERT_TRUE(etcd.url().starts_with("https://"));
  GatewayOptions options{.endpoints = {etcd.url()},
                         .user = test::EtcdProcess::user,
                         .password = test::EtcdProcess::password,
                         .ca_file = ca.ca_file(),
                         .cert_file = client.cert,
                         .key_file = client.key};
  auto trusted = *EtcdGateway::create(options);
  ASSERT_TRUE(trusted->put("/hark/tls", "yes", 0).ok()) << trusted->last_error();
  const auto read = trusted->range("/hark/tls", false);
  ASSERT_TRUE(read.ok()) << trusted->last_error();
  ASSERT_EQ(read->kvs.size(), 1u);
  EXPECT_EQ(read->kvs[0].value, "yes");

  GatewayOptions no_ca = options;
  no_ca.ca_file.clear();
  auto untrusting = *EtcdGateway::create(no_ca);
  EXPECT_EQ(untrusting->range("/hark/", true).error(), Error::cannot_establish_connection);
  EXPECT_NE(untrusting->last_error().find("certificate"), std::string::npos)
      << untrusting->last_error();

  GatewayOptions no_cert = options;
  no_cert.cert_file.clear();
  no_cert.key_file.clear();
  auto anonymous = *EtcdGateway::create(no_cert);
  EXPECT_EQ(anonymous->range("/hark/", true).error(), Error::cannot_establish_connection)
      << "etcd answered a client without a certificate";
}

// What one call through the gateway costs (printed for docs/cluster.md; asserted only loosely).
TEST_F(GatewayTest, RoundTripFigures) {
  auto client = gateway();
  constexpr int rounds = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; i++) ASSERT_TRUE(client->put("/hark/rt", "x", 0).ok());
  const auto puts = std::chrono::steady_clock::now();
  Txn txn;
  txn.compare.push_back({.key = "/hark/rt", .target = Compare::Target::value, .value = "x"});
  txn.success.push_back(TxnOp::put("/hark/rt", "x"));
  for (int i = 0; i < rounds; i++) ASSERT_TRUE(client->txn(txn)->succeeded);
  const auto txns = std::chrono::steady_clock::now();
  const auto us = [](auto d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count() / rounds;
  };
  std::printf("gateway round trip: put %lld us, txn %lld us (mean of %d)\n",
              static_cast<long long>(us(puts - start)), static_cast<long long>(us(txns - puts)),
              rounds);
  EXPECT_LT(txns - start, std::chrono::seconds(30));
}

TEST_F(GatewayTest, PausedControllerWriteRejectedByEtcd) {
  auto one = gateway();
  auto two = gateway();
  const AgentOptions base{.cluster = "e", .lease_ttl_seconds = 2};
  AgentOptions first = base, second = base;
  first.self = {.id = 1, .client_address = "127.0.0.1:1", .link_address = "", .shards = 1};
  second.self = {.id = 2, .client_address = "127.0.0.1:2", .link_address = "", .shards = 1};
  NodeAgent a(*one, SystemClock::instance(), first);
  NodeAgent b(*two, SystemClock::instance(), second);
  ASSERT_TRUE(a.step(milliseconds(0)).ok()) << one->last_error();
  ASSERT_TRUE(b.step(milliseconds(0)).ok()) << two->last_error();
  ASSERT_TRUE(a.is_controller());
  // `a` stops stepping (paused); `b` keeps going until etcd expires a's lease and b wins.
  ASSERT_TRUE(test::wait_until([&] { return b.step(milliseconds(200)).ok() && b.is_controller(); },
                               std::chrono::seconds(15)));
  const Result<bool> written = a.controller_txn({}, {TxnOp::put("/hark/e/stale", "x")});
  ASSERT_TRUE(written.ok()) << one->last_error();
  EXPECT_FALSE(*written);
  EXPECT_EQ(a.controller_writes_rejected(), 1u);
  EXPECT_TRUE(two->range("/hark/e/stale", false)->kvs.empty());
}

// A leader's ISR change (NodeAgent::change_isr) is guarded on the assignment's mod_revision, a
// compare no other gateway test makes: etcd refuses it once the assignment changed, and the
// failure branch's read tells a change at the same epoch (stale: ask again) from a new leader
// (deposed); nothing is written either way.
TEST_F(GatewayTest, AnIsrChangeIsGuardedOnTheAssignmentsModRevision) {
  auto one = gateway();
  auto other = gateway();
  NodeAgent a(*one, SystemClock::instance(),
              {.cluster = "e",
               .self = {.id = 1, .client_address = "127.0.0.1:1", .link_address = "", .shards = 1},
               .lease_ttl_seconds = 5});
  NodeAgent b(*other, SystemClock::instance(),
              {.cluster = "e",
               .self = {.id = 2, .client_address = "127.0.0.1:2", .link_address = "", .shards = 1},
               .lease_ttl_seconds = 5});
  const core::PartitionKey key{
      .stream = StreamId(1), .topic = TopicId(1), .partition = PartitionId(1)};
  ASSERT_TRUE(a.step(milliseconds(0)).ok()) << one->last_error();
  ASSERT_TRUE(b.step(milliseconds(0)).ok()) << other->last_error();
  ASSERT_TRUE(a.request_partition(key, 2).ok());
  ASSERT_TRUE(test::wait_until([&] {
    return a.step(milliseconds(50)).ok() && a.view()->assignments.contains(key) &&
           a.view()->assignments.at(key).replicas.size() == 2;
  }));
  ASSERT_EQ(a.view()->assignments.at(key).node, 1u);
  ASSERT_EQ(*a.change_isr(key, 1, {1, 2}), NodeAgent::IsrChange::applied) << one->last_error();
  // Another writer (a controller dropping node 2) changes it at the same epoch: stale.
  const std::string name = "/hark/e/assignments/1/1/1";
  const Assignment shrunk{.node = 1, .epoch = 1, .by = 2, .replicas = {1, 2}, .isr = {1}};
  ASSERT_TRUE(other->put(name, encode_assignment(shrunk), 0).ok());
  EXPECT_EQ(*a.change_isr(key, 1, {1}), NodeAgent::IsrChange::stale);
  // A failover to node 2 at epoch 2: a's change at epoch 1 is refused for good.
  const Assignment failed_over{.node = 2, .epoch = 2, .by = 2, .replicas = {1, 2}, .isr = {2}};
  ASSERT_TRUE(other->put(name, encode_assignment(failed_over), 0).ok());
  EXPECT_EQ(*a.change_isr(key, 1, {1, 2}), NodeAgent::IsrChange::deposed);
  EXPECT_EQ(decode_assignment(other->range(name, false)->kvs.at(0).value), failed_over);
}

}  // namespace
}  // namespace hark::server::cluster
