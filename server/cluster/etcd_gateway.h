#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/server/cluster/coordinator.h"

namespace hark::server::cluster {

struct GatewayOptions {
  // Client URLs of the etcd members, e.g. "http://10.0.0.1:2379". A call that cannot reach
  // one tries the next; the one that answered is tried first next time.
  std::vector<std::string> endpoints;
  // With a user, harkd authenticates (/v3/auth/authenticate) and sends the token with every
  // call, authenticating again when etcd says the token expired.
  std::string user;
  std::string password;
  // TLS to etcd (https:// endpoints; docs/cluster.md §TLS to etcd): the CA that signed etcd's
  // certificate (empty: the system's trust store), and the client certificate and key etcd
  // asks for under --client-cert-auth (both or neither).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  Duration request_timeout = std::chrono::seconds(2);
  Duration connect_timeout = std::chrono::seconds(1);
};

// The Coordinator over etcd 3.4's HTTP/JSON gateway (grpc-gateway in front of the v3 API;
// docs/cluster.md §The gateway has the shapes): POST /v3/kv/range|put|deleterange|txn,
// /v3/lease/grant|keepalive|revoke|timetolive, /v3/watch (streamed), keys and values in
// base64, 64-bit integers as JSON strings. libcurl with one kept-alive connection for calls
// and another for watches; nlohmann-json parses without exceptions, and every field read is
// type-checked, so a foreign or malformed answer is invalid_format, never a crash. Blocking:
// the coordination thread's, never a shard's. last_error() has etcd's own message of the last
// failure, for the log.
class EtcdGateway final : public Coordinator {
 public:
  // Errors: invalid_configuration (no endpoint). Does not contact etcd: the first call does.
  static Result<std::unique_ptr<EtcdGateway>> create(GatewayOptions options);
  ~EtcdGateway() override;
  EtcdGateway(const EtcdGateway&) = delete;
  EtcdGateway& operator=(const EtcdGateway&) = delete;

  Result<RangeResult> range(std::string_view key, bool prefix) override;
  Result<int64_t> put(std::string_view key, std::string_view value, int64_t lease) override;
  Result<int64_t> erase(std::string_view key, bool prefix) override;
  Result<TxnResult> txn(const Txn& txn) override;
  Result<Lease> lease_grant(int64_t ttl_seconds) override;
  Result<int64_t> lease_keep_alive(int64_t id) override;
  Status lease_revoke(int64_t id) override;
  Result<int64_t> lease_time_to_live(int64_t id) override;
  Result<WatchBatch> watch(std::string_view key, bool prefix, int64_t from_revision,
                           Duration wait) override;
  // Any thread: curl_multi_wakeup on the watch's multi handle (the watch runs in one).
  void wake() override;

  const std::string& last_error() const;

  struct Impl;

 private:
  explicit EtcdGateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hark::server::cluster
