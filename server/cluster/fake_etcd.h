#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/server/cluster/coordinator.h"

namespace hark::server::cluster {

// etcd in memory, for deterministic tests of everything above the Coordinator seam: one
// revision counter for the store, create/mod revisions and versions per key, leases that
// expire on the given Clock (a ManualClock in tests; checked at every call), watches over a
// history that compact() trims, and a switch that makes it unreachable. Transactions are
// atomic, as etcd's. Several clients (one per simulated node) share one FakeEtcd through
// client(): each is a Coordinator. A watch never waits (it answers what happened, possibly
// nothing), so a test steps every node itself.
class FakeEtcd {
 public:
  explicit FakeEtcd(const Clock& clock) : clock_(clock) {}

  // A Coordinator over this store. The FakeEtcd must outlive it.
  std::unique_ptr<Coordinator> client();

  // Drops the history up to and including `revision`: a watch from there is compacted.
  void compact(int64_t revision);
  // While false, every call answers cannot_establish_connection.
  void set_reachable(bool reachable);
  int64_t revision() const;

  // Every change ever made, never compacted (for invariants over the whole run).
  struct Change {
    int64_t revision;
    WatchEvent event;
  };
  std::vector<Change> audit() const;

  // The Coordinator calls, under the mutex (what client() forwards to).
  Result<RangeResult> range(std::string_view key, bool prefix);
  Result<int64_t> put(std::string_view key, std::string_view value, int64_t lease);
  Result<int64_t> erase(std::string_view key, bool prefix);
  Result<TxnResult> txn(const Txn& txn);
  Result<Lease> lease_grant(int64_t ttl_seconds);
  Result<int64_t> lease_keep_alive(int64_t id);
  Status lease_revoke(int64_t id);
  Result<int64_t> lease_time_to_live(int64_t id);
  Result<WatchBatch> watch(std::string_view key, bool prefix, int64_t from_revision);

 private:
  struct LeaseState {
    int64_t ttl_seconds = 0;
    Instant expires_at;
    std::set<std::string> keys;
  };

  Status enter();  // Reachable? Then expires the leases that are due.
  void expire_leases();
  void revoke_locked(int64_t id);
  RangeResult range_locked(std::string_view key, bool prefix) const;
  bool compare_holds(const Compare& compare) const;
  Status check_ops(const std::vector<TxnOp>& ops) const;
  void apply_locked(const TxnOp& op, TxnResult& result, bool& wrote);
  void put_locked(std::string_view key, std::string_view value, int64_t lease, int64_t revision);
  bool erase_locked(std::string_view key, bool prefix, int64_t revision);
  void record(int64_t revision, WatchEvent event);

  const Clock& clock_;
  mutable std::mutex mutex_;
  bool reachable_ = true;
  int64_t revision_ = 1;  // etcd starts an empty store at revision 1.
  int64_t compacted_ = 0;
  int64_t next_lease_ = 0x1000;
  std::map<std::string, KeyValue, std::less<>> store_;
  std::map<int64_t, LeaseState> leases_;
  std::vector<Change> history_;  // Since compacted_.
  std::vector<Change> audit_;
};

}  // namespace hark::server::cluster
