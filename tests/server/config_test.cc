// Covers harkd's configuration loader: precedence (flags > environment > file > defaults), the
// IGGY_* names, unknown keys named in the error, bad values, the three durability policies,
// --print-config's TOML read back to the same options, the cluster layout reported by
// get_cluster_metadata (Iggy's defaults and names), the scope of the classic polls' default
// wait (never silently everyone), the node links' TLS files (all three, readable, cluster mode
// only), and the duration and size syntax.
#include "hark/server/config.h"

#include <stdio.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hark::server {
namespace {

using namespace std::chrono_literals;

// A TOML file in $TMPDIR, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    const char* tmp = getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hark-config-XXXXXX";
    const int fd = mkstemp(path_.data());
    EXPECT_GE(fd, 0);
    close(fd);
    std::ofstream(path_) << text;
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ParsedFlags load(std::vector<const char*> args, std::vector<const char*> environment = {}) {
  return load_config(args, environment, 4);
}

TEST(LoadConfig, FlagsBeatEnvironmentWhichBeatsTheFileWhichBeatsDefaults) {
  const TempFile file(
      "[server]\nshards = 3\naddress = \"127.0.0.1:7000\"\ndata_dir = \"/from/file\"\n"
      "[polling]\nmax_wait = \"2m\"\n");
  const ParsedFlags parsed = load({"--config", file.path().c_str(), "--shards", "5"},
                                  {"HARK_SHARDS=6", "HARK_ADDRESS=127.0.0.1:7001", "OTHER=1"});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::run) << parsed.error;
  EXPECT_EQ(parsed.options.shards_count, 5u);              // Flag over env and file.
  EXPECT_EQ(parsed.options.address, "127.0.0.1:7001");     // Env over file.
  EXPECT_EQ(parsed.options.data_directory, "/from/file");  // File over default.
  EXPECT_EQ(parsed.options.max_wait, 2min);
  EXPECT_EQ(parsed.options.connections_max, 10'000u);  // Default.
}

TEST(LoadConfig, IggyNamesApplyAndHarkNamesWinOverThem) {
  const ParsedFlags iggy = load({}, {"IGGY_TCP_ADDRESS=127.0.0.1:8091", "IGGY_SYSTEM_PATH=/x"});
  ASSERT_EQ(iggy.outcome, ParsedFlags::Outcome::run) << iggy.error;
  EXPECT_EQ(iggy.options.address, "127.0.0.1:8091");
  EXPECT_EQ(iggy.options.data_directory, "/x");
  const ParsedFlags both =
      load({}, {"IGGY_TCP_ADDRESS=127.0.0.1:8091", "HARK_ADDRESS=127.0.0.1:8092"});
  EXPECT_EQ(both.options.address, "127.0.0.1:8092");
}

TEST(LoadConfig, TheConfigFileMayBeNamedByTheEnvironment) {
  const TempFile file("[limits]\nconnections_max = 12\n");
  const std::string variable = "HARK_CONFIG=" + file.path();
  const ParsedFlags parsed = load({}, {variable.c_str()});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::run) << parsed.error;
  EXPECT_EQ(parsed.options.connections_max, 12u);
}

TEST(LoadConfig, UnknownKeysAreErrorsNamingTheKey) {
  const TempFile file("[server]\nshards = 2\nshard_count = 3\n");
  const ParsedFlags parsed = load({"--config", file.path().c_str()});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(parsed.error.find("unknown key 'server.shard_count'"), std::string::npos)
      << parsed.error;
  const TempFile top("shards = 2\n");
  EXPECT_EQ(load({"--config", top.path().c_str()}).outcome, ParsedFlags::Outcome::error);
  const TempFile section("[nope]\nx = 1\n");
  const ParsedFlags unknown_section = load({"--config", section.path().c_str()});
  EXPECT_NE(unknown_section.error.find("'nope.x'"), std::string::npos) << unknown_section.error;
}

TEST(LoadConfig, MalformedFilesAndBadValuesAreErrors) {
  const TempFile broken("[server\nshards = 2\n");
  EXPECT_EQ(load({"--config", broken.path().c_str()}).outcome, ParsedFlags::Outcome::error);
  EXPECT_EQ(load({"--config", "/nonexistent/harkd.toml"}).outcome, ParsedFlags::Outcome::error);
  const TempFile wrong_type("[server]\nshards = [1, 2]\n");
  EXPECT_EQ(load({"--config", wrong_type.path().c_str()}).outcome, ParsedFlags::Outcome::error);
  const ParsedFlags bad_env = load({}, {"HARK_MAX_WAIT=30"});
  ASSERT_EQ(bad_env.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(bad_env.error.find("HARK_MAX_WAIT"), std::string::npos) << bad_env.error;
  EXPECT_EQ(load({"--max-wait", "5 s"}).outcome, ParsedFlags::Outcome::error);
  EXPECT_EQ(load({"--segment-size", "1TiB"}).outcome, ParsedFlags::Outcome::error);
  EXPECT_EQ(load({"--durability", "sometimes"}).outcome, ParsedFlags::Outcome::error);
  EXPECT_EQ(load({"--metadata-snapshot-entries", "-1"}).outcome, ParsedFlags::Outcome::error);
}

TEST(LoadConfig, UnknownHarkVariablesAreWarnings) {
  const ParsedFlags parsed = load({}, {"HARK_SHRADS=2"});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::run) << parsed.error;
  ASSERT_EQ(parsed.warnings.size(), 1u);
  EXPECT_NE(parsed.warnings[0].find("HARK_SHRADS"), std::string::npos);
}

TEST(LoadConfig, EveryDurabilityPolicyIsAcceptedFromFlagsAndEnvironment) {
  const ParsedFlags parsed = load({"--durability", "always"});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::run) << parsed.error;
  EXPECT_EQ(parsed.options.durability, storage::Durability::always);
  const ParsedFlags environment = load({}, {"HARK_DURABILITY=always"});
  ASSERT_EQ(environment.outcome, ParsedFlags::Outcome::run) << environment.error;
  EXPECT_EQ(environment.options.durability, storage::Durability::always);
  EXPECT_EQ(load({"--durability", "sometimes"}).outcome, ParsedFlags::Outcome::error);
  const ParsedFlags interval = load({"--durability=interval", "--sync-interval", "250ms"});
  ASSERT_EQ(interval.outcome, ParsedFlags::Outcome::run) << interval.error;
  EXPECT_EQ(interval.options.durability, storage::Durability::interval);
  EXPECT_EQ(interval.options.sync_interval, 250ms);
  // `write` is the default; `never` is its old name; `memory` must be asked for.
  EXPECT_EQ(load({}).options.durability, storage::Durability::write);
  EXPECT_EQ(load({"--durability", "never"}).options.durability, storage::Durability::write);
  EXPECT_EQ(load({"--durability", "memory"}).options.durability, storage::Durability::memory);
}

TEST(LoadConfig, PrintedConfigReadsBackToTheSameOptions) {
  const ParsedFlags parsed =
      load({"--print-config", "--max-wait", "1500ms", "--segment-size", "64MiB", "--node-name",
            "n\"1", "--retention-age", "2h", "--stats-interval", "500us", "--cluster-enabled",
            "true", "--cluster-others", "b@10.0.0.2:1/2/3/4,c@[::1]:5/6/7/8",
            "--metadata-snapshot-entries", "250"});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::print) << parsed.error;
  const TempFile printed(print_config(parsed.options));
  const ParsedFlags again = load({"--config", printed.path().c_str()});
  ASSERT_EQ(again.outcome, ParsedFlags::Outcome::run) << again.error;
  EXPECT_EQ(print_config(again.options), print_config(parsed.options));
  EXPECT_EQ(again.options.max_wait, 1500ms);
  EXPECT_EQ(again.options.segment_bytes, 64u << 20);
  EXPECT_EQ(again.options.node_name, "n\"1");
  EXPECT_EQ(again.options.retention_age, 2h);
  EXPECT_EQ(again.options.metadata_snapshot_entries, 250u);
  EXPECT_EQ(broker_options(again.options).metadata_snapshot_entries, 250u);
  EXPECT_TRUE(again.options.cluster_enabled);
  EXPECT_EQ(again.options.cluster_others, parsed.options.cluster_others);
}

TEST(LoadConfig, ClusterLayoutDefaultsToIggysConfigAndIsSetByIggysNamesFlagsAndTheFile) {
  const ParsedFlags defaults = load({});
  ASSERT_EQ(defaults.outcome, ParsedFlags::Outcome::run) << defaults.error;
  EXPECT_FALSE(defaults.options.cluster_enabled);
  EXPECT_EQ(defaults.options.cluster_name, "iggy-cluster");
  EXPECT_EQ(defaults.options.cluster_node_name, "iggy-node-1");
  EXPECT_EQ(defaults.options.cluster_node_ip, "127.0.0.1");
  EXPECT_EQ(defaults.options.cluster_node_ports,
            (TransportPorts{.quic = 8080, .http = 3000, .websocket = 8092}));
  EXPECT_EQ(format_cluster_peers(defaults.options.cluster_others),
            "iggy-node-2@127.0.0.1:8091/8081/3001/8093");

  const ParsedFlags iggy =
      load({}, {"IGGY_CLUSTER_ENABLED=true", "IGGY_CLUSTER_NAME=c",
                "IGGY_CLUSTER_NODE_CURRENT_NAME=n", "IGGY_CLUSTER_NODE_CURRENT_IP=10.0.0.1"});
  ASSERT_EQ(iggy.outcome, ParsedFlags::Outcome::run) << iggy.error;
  EXPECT_TRUE(iggy.options.cluster_enabled);
  EXPECT_EQ(iggy.options.cluster_name, "c");
  EXPECT_EQ(iggy.options.cluster_node_name, "n");
  EXPECT_EQ(iggy.options.cluster_node_ip, "10.0.0.1");

  const TempFile file(
      "[cluster]\nenabled = true\nnode_ports = \"1/2/3\"\n"
      "others = \"b@10.0.0.2:4/5/6/7, c@[::1]:8/9/10/11\"\n");
  const ParsedFlags from_file = load({"--config", file.path().c_str()});
  ASSERT_EQ(from_file.outcome, ParsedFlags::Outcome::run) << from_file.error;
  EXPECT_TRUE(from_file.options.cluster_enabled);
  EXPECT_EQ(from_file.options.cluster_node_ports,
            (TransportPorts{.quic = 1, .http = 2, .websocket = 3}));
  ASSERT_EQ(from_file.options.cluster_others.size(), 2u);
  EXPECT_EQ(
      from_file.options.cluster_others[1],
      (ClusterPeer{
          .name = "c", .ip = "::1", .tcp = 8, .ports = {.quic = 9, .http = 10, .websocket = 11}}));

  const ParsedFlags none = load({"--cluster-others", ""});
  ASSERT_EQ(none.outcome, ParsedFlags::Outcome::run) << none.error;
  EXPECT_TRUE(none.options.cluster_others.empty());
}

TEST(LoadConfig, MalformedClusterSettingsAreErrorsNamingTheKey) {
  for (const std::vector<const char*>& args : std::vector<std::vector<const char*>>{
           {"--cluster-enabled", "yes"},
           {"--cluster-name", ""},
           {"--cluster-node-ports", "8080/3000"},
           {"--cluster-node-ports", "8080/3000/70000"},
           {"--cluster-others", "b@10.0.0.2:1/2/3"},      // Three ports.
           {"--cluster-others", "@10.0.0.2:1/2/3/4"},     // No name.
           {"--cluster-others", "b@:1/2/3/4"},            // No ip.
           {"--cluster-others", "b10.0.0.2:1/2/3/4"},     // No '@'.
           {"--cluster-others", "b@10.0.0.2:1/2/3/4,,"},  // An empty entry.
       }) {
    const ParsedFlags parsed = load(args);
    ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::error) << args[0] << " " << args[1];
    EXPECT_NE(parsed.error.find("cluster."), std::string::npos) << parsed.error;
  }
}

TEST(LoadConfig, EtcdTlsFilesMustBeReadablePairedAndForHttpsEndpoints) {
  const TempFile ca("ca"), cert("cert"), key("key");
  const char* https = "https://127.0.0.1:2379";
  const ParsedFlags ok =
      load({"--etcd", https, "--etcd-ca-file", ca.path().c_str(), "--etcd-cert-file",
            cert.path().c_str(), "--etcd-key-file", key.path().c_str()});
  ASSERT_EQ(ok.outcome, ParsedFlags::Outcome::run) << ok.error;
  EXPECT_EQ(ok.options.etcd_ca_file, ca.path());
  EXPECT_EQ(ok.options.etcd_cert_file, cert.path());
  EXPECT_EQ(ok.options.etcd_key_file, key.path());
  const struct {
    std::vector<const char*> args;
    const char* names;
  } bad[] = {
      {{"--etcd", https, "--etcd-ca-file", "/no/such/ca.pem"}, "cluster.etcd_ca_file"},
      {{"--etcd", https, "--etcd-cert-file", cert.path().c_str()}, "cluster.etcd_key_file"},
      {{"--etcd", "http://127.0.0.1:2379", "--etcd-ca-file", ca.path().c_str()}, "https://"},
  };
  for (const auto& [args, names] : bad) {
    const ParsedFlags parsed = load(args);
    ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::error) << args[2];
    EXPECT_NE(parsed.error.find(names), std::string::npos) << parsed.error;
  }
}

TEST(LoadConfig, LinkTlsTakesAllThreeReadableFilesInClusterModeOnly) {
  const TempFile ca("ca"), cert("cert"), key("key");
  const char* etcd = "http://127.0.0.1:2379";
  const ParsedFlags ok =
      load({"--etcd", etcd, "--node-link-tls-cert", cert.path().c_str(), "--node-link-tls-key",
            key.path().c_str(), "--node-link-tls-ca", ca.path().c_str()});
  ASSERT_EQ(ok.outcome, ParsedFlags::Outcome::run) << ok.error;
  EXPECT_EQ(ok.options.link_tls_cert_file, cert.path());
  EXPECT_EQ(ok.options.link_tls_key_file, key.path());
  EXPECT_EQ(ok.options.link_tls_ca_file, ca.path());
  // The file's keys, [cluster] tls_cert...; printed, they read back.
  const TempFile file("[cluster]\netcd = \"" + std::string(etcd) + "\"\ntls_cert = \"" +
                      cert.path() + "\"\ntls_key = \"" + key.path() + "\"\ntls_ca = \"" +
                      ca.path() + "\"\n");
  const ParsedFlags from_file = load({"--config", file.path().c_str()});
  ASSERT_EQ(from_file.outcome, ParsedFlags::Outcome::run) << from_file.error;
  EXPECT_EQ(from_file.options.link_tls_ca_file, ca.path());
  const TempFile printed(print_config(from_file.options));
  EXPECT_EQ(load({"--config", printed.path().c_str()}).options.link_tls_key_file, key.path());
  const struct {
    std::vector<const char*> args;
    const char* names;
  } bad[] = {
      {{"--etcd", etcd, "--node-link-tls-cert", cert.path().c_str(), "--node-link-tls-key",
        key.path().c_str()},
       "go together"},
      {{"--etcd", etcd, "--node-link-tls-ca", ca.path().c_str()}, "go together"},
      {{"--etcd", etcd, "--node-link-tls-cert", "/no/such/cert.pem"}, "cluster.tls_cert"},
      {{"--node-link-tls-cert", cert.path().c_str(), "--node-link-tls-key", key.path().c_str(),
        "--node-link-tls-ca", ca.path().c_str()},
       "cluster mode only"},
  };
  for (const auto& [args, names] : bad) {
    const ParsedFlags parsed = load(args);
    ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::error) << args[2];
    EXPECT_NE(parsed.error.find(names), std::string::npos) << parsed.error;
  }
}

TEST(LoadConfig, MinReplicationFactorIsThreeInClusterModeOneAloneAndAboveOneNeedsACluster) {
  const char* etcd = "http://127.0.0.1:2379";
  EXPECT_EQ(load({}).options.min_replication_factor_or_default(), 1);
  const ParsedFlags cluster = load({"--etcd", etcd});
  ASSERT_EQ(cluster.outcome, ParsedFlags::Outcome::run) << cluster.error;
  EXPECT_EQ(cluster.options.min_replication_factor_or_default(), 3);
  EXPECT_EQ(cluster.options.replica_replace_after, std::chrono::minutes(5));
  const ParsedFlags set =
      load({"--etcd", etcd, "--min-replication-factor", "2", "--replica-replace-after", "90s"});
  ASSERT_EQ(set.outcome, ParsedFlags::Outcome::run) << set.error;
  EXPECT_EQ(set.options.min_replication_factor_or_default(), 2);
  EXPECT_EQ(set.options.replica_replace_after, std::chrono::seconds(90));
  const TempFile printed(print_config(set.options));
  const ParsedFlags again = load({"--config", printed.path().c_str()});
  EXPECT_EQ(again.options.min_replication_factor, 2);
  EXPECT_EQ(again.options.replica_replace_after, std::chrono::seconds(90));
  EXPECT_EQ(load({"--min-replication-factor", "1"}).outcome, ParsedFlags::Outcome::run);
  const ParsedFlags alone = load({"--min-replication-factor", "3"});
  ASSERT_EQ(alone.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(alone.error.find("needs cluster mode"), std::string::npos) << alone.error;
  const ParsedFlags too_many = load({"--etcd", etcd, "--min-replication-factor", "256"});
  ASSERT_EQ(too_many.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(too_many.error.find("cluster.min_replication_factor"), std::string::npos);
  EXPECT_EQ(load({"--etcd", etcd, "--replica-replace-after", "0"}).outcome,
            ParsedFlags::Outcome::error);
}

TEST(LoadConfig, AClassicDefaultWaitNeedsAScopeAndListsReadBack) {
  const ParsedFlags unscoped = load({"--classic-default-wait", "2s"});
  ASSERT_EQ(unscoped.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(unscoped.error.find("polling.classic_default_wait_users"), std::string::npos)
      << unscoped.error;
  EXPECT_EQ(load({}).options.classic_default_wait, Duration(0));  // Off by default.

  const TempFile file(
      "[polling]\nclassic_default_wait = \"2s\"\n"
      "classic_default_wait_users = \"alice, bob\"\nclassic_default_wait_streams = \"orders,7\"\n");
  const ParsedFlags parsed = load({"--config", file.path().c_str(), "--print-config"});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::print) << parsed.error;
  EXPECT_EQ(parsed.options.classic_default_wait, 2s);
  EXPECT_EQ(parsed.options.classic_default_wait_users, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_EQ(parsed.options.classic_default_wait_streams, (std::vector<std::string>{"orders", "7"}));
  const TempFile printed(print_config(parsed.options));
  const ParsedFlags again = load({"--config", printed.path().c_str()});
  ASSERT_EQ(again.outcome, ParsedFlags::Outcome::run) << again.error;
  EXPECT_EQ(print_config(again.options), print_config(parsed.options));

  const ParsedFlags everyone =
      load({}, {"HARK_CLASSIC_DEFAULT_WAIT=1s", "HARK_CLASSIC_DEFAULT_WAIT_USERS=*"});
  ASSERT_EQ(everyone.outcome, ParsedFlags::Outcome::run) << everyone.error;
  EXPECT_EQ(everyone.options.classic_default_wait_users, (std::vector<std::string>{"*"}));
  const ParsedFlags empty_entry = load({"--classic-default-wait-streams", "a,,b"});
  ASSERT_EQ(empty_entry.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(empty_entry.error.find("polling.classic_default_wait_streams"), std::string::npos);
}

TEST(LoadConfig, RootCredentialsComeFromHarkOrIggyVariablesAndAreNeverPrinted) {
  const ParsedFlags iggy = load({}, {"IGGY_ROOT_USERNAME=admin", "IGGY_ROOT_PASSWORD=from-iggy"});
  ASSERT_EQ(iggy.outcome, ParsedFlags::Outcome::run) << iggy.error;
  EXPECT_EQ(iggy.options.root_username, "admin");
  EXPECT_EQ(iggy.options.root_password, "from-iggy");
  const ParsedFlags hark = load({}, {"IGGY_ROOT_PASSWORD=from-iggy", "HARK_ROOT_PASSWORD=mine"});
  EXPECT_EQ(hark.options.root_password, "mine");
  EXPECT_EQ(print_config(hark.options).find("mine"), std::string::npos);
  EXPECT_EQ(load({}).options.root_password, "iggy");
  EXPECT_EQ(load({"--root-password", "pw"}).outcome, ParsedFlags::Outcome::error) << "3..100";
  EXPECT_EQ(load({"--root-username", std::string(51, 'u').c_str()}).outcome,
            ParsedFlags::Outcome::error);
}

TEST(LoadConfig, AuthSettingsParse) {
  const ParsedFlags parsed =
      load({"--allow-default-root-password", "true", "--login-failures-max", "0", "--login-lockout",
            "2m", "--auth-threads", "3", "--tokens-per-user-max", "7"});
  ASSERT_EQ(parsed.outcome, ParsedFlags::Outcome::run) << parsed.error;
  EXPECT_TRUE(parsed.options.allow_default_root_password);
  EXPECT_EQ(parsed.options.login_failures_max, 0u);
  EXPECT_EQ(parsed.options.login_lockout, 2min);
  EXPECT_EQ(parsed.options.auth_threads, 3u);
  EXPECT_EQ(parsed.options.tokens_per_user_max, 7u);
  EXPECT_EQ(load({"--allow-default-root-password", "yes"}).outcome, ParsedFlags::Outcome::error);
  EXPECT_EQ(load({"--auth-threads", "0"}).outcome, ParsedFlags::Outcome::error);
  EXPECT_EQ(load({"--login-lockout", "0"}).outcome, ParsedFlags::Outcome::error);
  const TempFile file("[auth]\nallow_default_root_password = true\nlogin_failures_max = 4\n");
  const ParsedFlags from_file = load({"--config", file.path().c_str()});
  ASSERT_EQ(from_file.outcome, ParsedFlags::Outcome::run) << from_file.error;
  EXPECT_TRUE(from_file.options.allow_default_root_password);
  EXPECT_EQ(from_file.options.login_failures_max, 4u);
}

TEST(LoadConfig, HeartbeatIsOffByDefaultAndSetAsIggyNamesIt) {
  const ParsedFlags defaults = load({});
  ASSERT_EQ(defaults.outcome, ParsedFlags::Outcome::run) << defaults.error;
  EXPECT_FALSE(defaults.options.heartbeat_enabled);
  EXPECT_EQ(defaults.options.heartbeat_interval, 5s);
  const ParsedFlags flags = load({"--heartbeat-enabled", "true", "--heartbeat-interval", "300ms"});
  ASSERT_EQ(flags.outcome, ParsedFlags::Outcome::run) << flags.error;
  EXPECT_TRUE(flags.options.heartbeat_enabled);
  EXPECT_EQ(flags.options.heartbeat_interval, 300ms);
  const TempFile printed(print_config(flags.options));
  const ParsedFlags again = load({"--config", printed.path().c_str()});
  ASSERT_EQ(again.outcome, ParsedFlags::Outcome::run) << again.error;
  EXPECT_TRUE(again.options.heartbeat_enabled);
  EXPECT_EQ(again.options.heartbeat_interval, 300ms);
  const ParsedFlags iggy = load({}, {"IGGY_HEARTBEAT_ENABLED=true", "IGGY_HEARTBEAT_INTERVAL=7s"});
  ASSERT_EQ(iggy.outcome, ParsedFlags::Outcome::run) << iggy.error;
  EXPECT_TRUE(iggy.options.heartbeat_enabled);
  EXPECT_EQ(iggy.options.heartbeat_interval, 7s);
  const TempFile file("[heartbeat]\nenabled = true\ninterval = \"2s\"\n");
  const ParsedFlags from_file = load({"--config", file.path().c_str()});
  ASSERT_EQ(from_file.outcome, ParsedFlags::Outcome::run) << from_file.error;
  EXPECT_TRUE(from_file.options.heartbeat_enabled);
  EXPECT_EQ(from_file.options.heartbeat_interval, 2s);
  for (const char* bad : {"0", "25h", "5"}) {
    const ParsedFlags refused = load({"--heartbeat-interval", bad});
    ASSERT_EQ(refused.outcome, ParsedFlags::Outcome::error) << bad;
    EXPECT_NE(refused.error.find("heartbeat.interval"), std::string::npos) << refused.error;
  }
}

TEST(LoadConfig, TlsIsOffByDefaultAndSetAsIggysTcpTlsSectionNamesIt) {
  EXPECT_FALSE(load({}).options.tls_enabled);
  // The flags name the files and turn TLS on.
  const ParsedFlags flags = load({"--tls-cert", "/c.pem", "--tls-key", "/k.pem"});
  ASSERT_EQ(flags.outcome, ParsedFlags::Outcome::run) << flags.error;
  EXPECT_TRUE(flags.options.tls_enabled);
  EXPECT_EQ(flags.options.tls_cert_file, "/c.pem");
  EXPECT_EQ(flags.options.tls_key_file, "/k.pem");
  // [tcp.tls] as Iggy 0.8.0's server.toml writes it, nested or dotted; printed, it reads back.
  const TempFile file(
      "[tcp.tls]\nenabled = true\nself_signed = false\ncert_file = \"a.pem\"\n"
      "key_file = \"b.pem\"\n");
  const ParsedFlags from_file = load({"--config", file.path().c_str()});
  ASSERT_EQ(from_file.outcome, ParsedFlags::Outcome::run) << from_file.error;
  EXPECT_TRUE(from_file.options.tls_enabled);
  EXPECT_EQ(from_file.options.tls_cert_file, "a.pem");
  const TempFile printed(print_config(from_file.options));
  const ParsedFlags again = load({"--config", printed.path().c_str()});
  ASSERT_EQ(again.outcome, ParsedFlags::Outcome::run) << again.error;
  EXPECT_EQ(print_config(again.options), print_config(from_file.options));
  // Iggy's variables; the files in a config with TLS off are only kept.
  const ParsedFlags iggy = load(
      {}, {"IGGY_TCP_TLS_ENABLED=true", "IGGY_TCP_TLS_CERT_FILE=c", "IGGY_TCP_TLS_KEY_FILE=k"});
  ASSERT_EQ(iggy.outcome, ParsedFlags::Outcome::run) << iggy.error;
  EXPECT_TRUE(iggy.options.tls_enabled);
  EXPECT_FALSE(load({}, {"IGGY_TCP_TLS_CERT_FILE=c"}).options.tls_enabled);
  // On without both files, or asking harkd to make a certificate: refused, naming the keys.
  const ParsedFlags no_key = load({"--tls-cert", "/c.pem"});
  ASSERT_EQ(no_key.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(no_key.error.find("tcp.tls.key_file"), std::string::npos) << no_key.error;
  const ParsedFlags self_signed =
      load({"--tls-cert", "c", "--tls-key", "k", "--tls-self-signed", "true"});
  ASSERT_EQ(self_signed.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(self_signed.error.find("self_signed"), std::string::npos) << self_signed.error;
  const TempFile unknown("[tcp.tls]\ncertificate = \"x.pfx\"\n");
  const ParsedFlags refused = load({"--config", unknown.path().c_str()});
  ASSERT_EQ(refused.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(refused.error.find("tcp.tls.certificate"), std::string::npos) << refused.error;
}

TEST(LoadConfig, LogFormatIsTextByDefaultOrJson) {
  EXPECT_EQ(load({}).options.log_format, log::Format::text);
  const ParsedFlags json = load({"--log-format", "json"});
  EXPECT_EQ(json.options.log_format, log::Format::json);
  const TempFile printed(print_config(json.options));
  EXPECT_EQ(load({"--config", printed.path().c_str()}).options.log_format, log::Format::json);
  EXPECT_EQ(load({}, {"HARK_LOG_FORMAT=json"}).options.log_format, log::Format::json);
  const TempFile file("[log]\nformat = \"json\"\n");
  EXPECT_EQ(load({"--config", file.path().c_str()}).options.log_format, log::Format::json);
  const ParsedFlags bad = load({"--log-format", "xml"});
  ASSERT_EQ(bad.outcome, ParsedFlags::Outcome::error);
  EXPECT_NE(bad.error.find("log.format"), std::string::npos) << bad.error;
}

TEST(ParseDuration, TakesUnitsAndZeroOnly) {
  EXPECT_EQ(parse_duration("500us"), std::optional<Duration>(500us));
  EXPECT_EQ(parse_duration("250ms"), std::optional<Duration>(250ms));
  EXPECT_EQ(parse_duration("5s"), std::optional<Duration>(5s));
  EXPECT_EQ(parse_duration("2m"), std::optional<Duration>(2min));
  EXPECT_EQ(parse_duration("0"), std::optional<Duration>(Duration(0)));
  EXPECT_EQ(parse_duration("2562047h"), std::optional<Duration>(std::chrono::hours(2562047)));
  // Beyond int64 nanoseconds: refused, not wrapped.
  for (const char* bad : {"", "5", "s", "5 s", "-1s", "1.5s", "5sec", "10d", "2562048h",
                          "999999999999h", "999999999999m"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(120s), "2m");
  EXPECT_EQ(format_duration(Duration(0)), "0");
}

TEST(ParseSize, TakesBytesAndBinaryOrDecimalUnits) {
  EXPECT_EQ(parse_size("1048576"), std::optional<uint64_t>(1048576));
  EXPECT_EQ(parse_size("64KiB"), std::optional<uint64_t>(65536));
  EXPECT_EQ(parse_size("1 GiB"), std::optional<uint64_t>(1ull << 30));
  EXPECT_EQ(parse_size("10MB"), std::optional<uint64_t>(10'000'000));
  for (const char* bad : {"", "MiB", "1.5GiB", "1 TiB", "99999999999999999999"}) {
    EXPECT_FALSE(parse_size(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace hark::server
