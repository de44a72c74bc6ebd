// Two harkd in cluster mode against a real etcd with auth (tests/cluster/etcd_process.h):
// both register, code 12 on each lists both with the connected node as the one Leader, and a
// node stopped (SIGSTOP) past its lease drops out of the other's answer and comes back when
// resumed; cluster mode without a usable cluster secret, or with link TLS files harkd cannot
// use, does not start. Label cluster (release stage only): one etcd, two harkd, a few seconds.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "hark/server/cluster/etcd_gateway.h"
#include "hark/tests/e2e/tls_certs.h"
#include "hark/tests/support/temp_directory.h"
#include "hark/tests/support/wait_until.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

TEST(HarkdCluster, MembersListEachOtherAndALapsedNodeDropsOut) {
  LocalCluster cluster;
  LocalCluster::Options options;
  options.nodes = 2;
  ASSERT_EQ(cluster.start(options), "");
  HarkdProcess* nodes[2] = {&cluster.node(1), &cluster.node(2)};
  auto one = cluster.connect(1);
  auto two = cluster.connect(2);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  ASSERT_TRUE(wait_until([&] { return members(*one) == 2 && members(*two) == 2; }))
      << nodes[0]->stderr_tail();
  for (int i = 0; i < 2; i++) {
    const auto metadata = (i == 0 ? one : two)->get_cluster_metadata();
    ASSERT_TRUE(metadata.ok());
    EXPECT_EQ(metadata->name, "e2e");
    int leaders = 0;
    for (const protocol::ClusterNode& node : metadata->nodes) {
      const bool self = node.tcp_port == nodes[i]->port();
      EXPECT_EQ(node.role, self ? 0u : 1u) << node.name;  // 0 Leader, 1 Follower.
      EXPECT_EQ(node.ip, "127.0.0.1");
      leaders += node.role == 0 ? 1 : 0;
    }
    EXPECT_EQ(leaders, 1);
  }
  // Node 2 stops past its lease: node 1 reports itself alone; resumed, node 2 is back.
  nodes[1]->signal(SIGSTOP);
  EXPECT_TRUE(wait_until([&] { return members(*one) == 1; }, std::chrono::seconds(15)));
  nodes[1]->signal(SIGCONT);
  EXPECT_TRUE(wait_until([&] { return members(*one) == 2; }, std::chrono::seconds(15)))
      << nodes[1]->stderr_tail();
  // A clean stop leaves the cluster (revokes the lease): node 1 sees node 2 go at once.
  EXPECT_TRUE(nodes[1]->stop().clean());
  EXPECT_TRUE(wait_until([&] { return members(*one) == 1; }, std::chrono::seconds(1)));
  EXPECT_TRUE(nodes[0]->stop().clean());
}

// harkd reaches an etcd that requires TLS client certificates with --etcd-ca-file,
// --etcd-cert-file and --etcd-key-file: it registers (its key appears under nodes/).
TEST(HarkdCluster, RegistersThroughAnEtcdThatRequiresClientCertificates) {
  // A directory of its own: tests run in parallel and TestCa names its CA file ca.pem.
  const TempDirectory temp("hark-tls");
  const std::string& directory = temp.path();
  TestCa ca(directory);
  const CertFiles server = ca.issue("etcd-e2e", {"IP:127.0.0.1"});
  const CertFiles client = ca.issue_without_common_name("harkd-e2e", {"harkd"});
  const EtcdProcess::Tls tls{.ca = ca.ca_file(),
                             .cert = server.cert,
                             .key = server.key,
                             .client_cert = client.cert,
                             .client_key = client.key};
  EtcdProcess etcd;
  ASSERT_EQ(etcd.start(&tls), "");
  const std::string secret = etcd.directory() + "/cluster-secret";
  std::ofstream(secret) << std::string(40, 's') << "\n";
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  HarkdProcess node;
  HarkdProcess::Options options;
  options.harkd_path = HARK_HARKD_PATH;
  options.extra_args = {"--etcd",
                        etcd.url(),
                        "--etcd-user",
                        EtcdProcess::user,
                        "--etcd-password",
                        EtcdProcess::password,
                        "--etcd-ca-file",
                        ca.ca_file(),
                        "--etcd-cert-file",
                        client.cert,
                        "--etcd-key-file",
                        client.key,
                        "--node-id",
                        "1",
                        "--cluster-name",
                        "tls",
                        "--cluster-secret-file",
                        secret};
  ASSERT_TRUE(node.start(options)) << node.error_text() << node.stderr_tail();
  auto reader = *server::cluster::EtcdGateway::create({.endpoints = {etcd.url()},
                                                       .user = EtcdProcess::user,
                                                       .password = EtcdProcess::password,
                                                       .ca_file = ca.ca_file(),
                                                       .cert_file = client.cert,
                                                       .key_file = client.key});
  EXPECT_TRUE(wait_until([&] {
    const auto nodes = reader->range("/hark/tls/nodes/", true);
    return nodes.ok() && nodes->kvs.size() == 1;
  })) << node.stderr_tail();
  EXPECT_TRUE(node.stop().clean());
}

// The secret is checked before anything listens or talks to etcd (no etcd runs here).
TEST(HarkdCluster, AMissingShortOrWorldReadableSecretStopsHarkd) {
  const std::string secret =
      (std::filesystem::temp_directory_path() / ("hark-secret-" + std::to_string(::getpid())))
          .string();
  const auto start_error = [&](const std::vector<std::string>& secret_args) {
    HarkdProcess harkd;
    HarkdProcess::Options options;
    options.harkd_path = HARK_HARKD_PATH;
    options.extra_args = {"--etcd", "http://127.0.0.1:1", "--node-id", "1"};
    options.extra_args.insert(options.extra_args.end(), secret_args.begin(), secret_args.end());
    EXPECT_FALSE(harkd.start(options));
    return harkd.stderr_tail();
  };
  EXPECT_NE(start_error({}).find("needs cluster.secret_file"), std::string::npos);
  std::ofstream(secret) << "too short\n";
  ::chmod(secret.c_str(), 0600);
  EXPECT_NE(start_error({"--cluster-secret-file", secret}).find("at least 32"), std::string::npos);
  std::ofstream(secret) << std::string(40, 'k') << "\n";
  ::chmod(secret.c_str(), 0644);
  EXPECT_NE(start_error({"--cluster-secret-file", secret}).find("world-readable"),
            std::string::npos);
  std::filesystem::remove(secret);
}

// Link TLS files harkd cannot use stop it at start with a line naming them (no etcd runs here:
// they are loaded before anything talks to it).
TEST(HarkdCluster, LinkTlsFilesHarkdCannotUseStopIt) {
  const TempDirectory directory("hark-link-tls");
  ASSERT_FALSE(directory.path().empty());
  const std::string secret = directory.path() + "/secret";
  std::ofstream(secret) << std::string(40, 'k') << "\n";
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  TestCa ca(directory.path());
  const CertFiles node = ca.issue("node", {"IP:127.0.0.1"});
  const CertFiles other = ca.issue("other", {"IP:127.0.0.1"});
  const std::string garbage = directory.path() + "/garbage.pem";
  std::ofstream(garbage) << "not PEM\n";
  const auto start_error = [&](const std::string& cert, const std::string& key,
                               const std::string& ca_file) {
    HarkdProcess harkd;
    HarkdProcess::Options options;
    options.harkd_path = HARK_HARKD_PATH;
    options.extra_args = {"--etcd",
                          "http://127.0.0.1:1",
                          "--node-id",
                          "1",
                          "--cluster-secret-file",
                          secret,
                          "--node-link-tls-cert",
                          cert,
                          "--node-link-tls-key",
                          key,
                          "--node-link-tls-ca",
                          ca_file};
    EXPECT_FALSE(harkd.start(options));
    return harkd.stderr_tail();
  };
  EXPECT_NE(start_error(garbage, node.key, ca.ca_file()).find("cannot use " + garbage),
            std::string::npos);
  EXPECT_NE(start_error(node.cert, other.key, ca.ca_file()).find("does not match the certificate"),
            std::string::npos);
  EXPECT_NE(start_error(node.cert, node.key, garbage).find("as the TLS CA file"),
            std::string::npos);
  EXPECT_NE(start_error(node.cert, node.key, directory.path() + "/none.pem").find("cluster.tls_ca"),
            std::string::npos);
}

}  // namespace
}  // namespace hark::test
