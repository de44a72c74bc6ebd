#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"

namespace hark::server::cluster {

// The one way harkd talks to its coordination engine, etcd (docs/cluster.md). The calls
// mirror etcd's v3 API one for one, so the semantics are etcd's: every write makes a new
// revision of the whole store; a key remembers the revision that created it
// (create_revision, 0 when absent), that last changed it (mod_revision) and how many times it
// was written since it was created (version); a lease expires unless kept alive and deletes
// the keys attached to it; a watch replays every change after a revision, unless that
// revision was compacted away.
//
// Blocking, and not thread-safe: one coordination thread owns a Coordinator and is the only
// caller (a shard never calls it). Two implementations: EtcdGateway (etcd_gateway.h, etcd's
// HTTP/JSON gateway) and FakeEtcd (fake_etcd.h, in memory, for deterministic tests).
//
// Errors: cannot_establish_connection (etcd unreachable or timed out), unauthenticated
// (credentials refused), invalid_format (an answer that is not etcd's), resource_not_found (a
// lease that does not exist, or expired), invalid_configuration (a request etcd refused as
// malformed). A transaction whose compares fail is no error: TxnResult::succeeded is false.

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
  bool operator==(const KeyValue&) const = default;
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // In key order.
  int64_t revision = 0;       // The store's revision the read saw.
};

// One compare of a transaction: `target` of `key` `op` the operand (`value` for
// Target::value, `number` for the others). An absent key has value "", create_revision,
// mod_revision and version 0, as in etcd.
struct Compare {
  enum class Target : uint8_t { value, create_revision, mod_revision, version };
  enum class Op : uint8_t { equal, not_equal, greater, less };
  std::string key;
  Target target = Target::value;
  Op op = Op::equal;
  std::string value;
  int64_t number = 0;
};

// One operation of a transaction branch. A range or delete with `prefix` covers every key
// that starts with `key`.
struct TxnOp {
  enum class Kind : uint8_t { put, erase, range };
  Kind kind = Kind::put;
  std::string key;
  std::string value;
  int64_t lease = 0;
  bool prefix = false;

  static TxnOp put(std::string key, std::string value, int64_t lease = 0) {
    return {.kind = Kind::put,
            .key = std::move(key),
            .value = std::move(value),
            .lease = lease,
            .prefix = false};
  }
  static TxnOp erase(std::string key) {
    return {.kind = Kind::erase, .key = std::move(key), .value = {}, .lease = 0, .prefix = false};
  }
  static TxnOp range(std::string key, bool prefix = false) {
    return {.kind = Kind::range, .key = std::move(key), .value = {}, .lease = 0, .prefix = prefix};
  }
};

struct Txn {
  std::vector<Compare> compare;  // All must hold for `success` to run; else `failure` runs.
  std::vector<TxnOp> success;
  std::vector<TxnOp> failure;
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;             // After the transaction (its own, if it wrote).
  std::vector<RangeResult> ranges;  // One per range op of the branch that ran, in order.
};

struct Lease {
  int64_t id = 0;
  int64_t ttl_seconds = 0;  // As granted (etcd may raise a TTL below its minimum).
};

struct WatchEvent {
  enum class Type : uint8_t { put, erase };
  Type type = Type::put;
  KeyValue kv;  // For erase: the key and the erasing revision as mod_revision.
};

// What a watch delivered: the changes in revision order, and the revision up to which the
// watcher is now current (resume from `revision + 1`). `compacted` says the requested start
// revision is gone (etcd compacted it): re-read and resume from the read's revision + 1
// (PrefixMirror, prefix_mirror.h, does that).
struct WatchBatch {
  std::vector<WatchEvent> events;
  int64_t revision = 0;
  bool compacted = false;
  int64_t compact_revision = 0;
};

class Coordinator {
 public:
  virtual ~Coordinator() = default;

  // The key, or every key under `key` as a prefix.
  virtual Result<RangeResult> range(std::string_view key, bool prefix) = 0;
  // Puts `value` (attached to `lease` unless 0); the new revision.
  virtual Result<int64_t> put(std::string_view key, std::string_view value, int64_t lease) = 0;
  // Deletes the key (or the prefix); the store's revision after it.
  virtual Result<int64_t> erase(std::string_view key, bool prefix) = 0;
  virtual Result<TxnResult> txn(const Txn& txn) = 0;

  virtual Result<Lease> lease_grant(int64_t ttl_seconds) = 0;
  // Renews the lease to its full TTL; the TTL left. resource_not_found if it expired.
  virtual Result<int64_t> lease_keep_alive(int64_t id) = 0;
  virtual Status lease_revoke(int64_t id) = 0;
  // Seconds left on the lease; resource_not_found if it expired or never was.
  virtual Result<int64_t> lease_time_to_live(int64_t id) = 0;

  // The changes under `prefix` (or to the key) after `from_revision` - 1, waiting at most
  // `wait` for the first one. An empty batch when nothing changed in time.
  virtual Result<WatchBatch> watch(std::string_view key, bool prefix, int64_t from_revision,
                                   Duration wait) = 0;

  // The one call any thread may make: ends the watch() waiting now (or the next one) early,
  // with an empty batch, so the coordination thread turns to new work (a metadata command).
  virtual void wake() {}
};

// The end of the range that covers every key starting with `prefix`, as etcd wants it
// (range_end): the prefix with its last byte below 0xff incremented and the rest dropped;
// "\0" (every key) when there is no such byte.
std::string prefix_end(std::string_view prefix);

}  // namespace hark::server::cluster
