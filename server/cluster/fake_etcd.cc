#include "hark/server/cluster/fake_etcd.h"

#include <algorithm>
#include <chrono>
#include <memory>

namespace hark::server::cluster {
namespace {

bool in_range(std::string_view candidate, std::string_view key, bool prefix) {
  return prefix ? candidate.starts_with(key) : candidate == key;
}

template <typename T>
bool holds(Compare::Op op, const T& actual, const T& operand) {
  switch (op) {
    case Compare::Op::equal: return actual == operand;
    case Compare::Op::not_equal: return actual != operand;
    case Compare::Op::greater: return actual > operand;
    case Compare::Op::less: return actual < operand;
  }
  return false;
}

class FakeClient final : public Coordinator {
 public:
  explicit FakeClient(FakeEtcd& etcd) : etcd_(etcd) {}
  Result<RangeResult> range(std::string_view key, bool prefix) override {
    return etcd_.range(key, prefix);
  }
  Result<int64_t> put(std::string_view key, std::string_view value, int64_t lease) override {
    return etcd_.put(key, value, lease);
  }
  Result<int64_t> erase(std::string_view key, bool prefix) override {
    return etcd_.erase(key, prefix);
  }
  Result<TxnResult> txn(const Txn& txn) override { return etcd_.txn(txn); }
  Result<Lease> lease_grant(int64_t ttl) override { return etcd_.lease_grant(ttl); }
  Result<int64_t> lease_keep_alive(int64_t id) override { return etcd_.lease_keep_alive(id); }
  Status lease_revoke(int64_t id) override { return etcd_.lease_revoke(id); }
  Result<int64_t> lease_time_to_live(int64_t id) override { return etcd_.lease_time_to_live(id); }
  Result<WatchBatch> watch(std::string_view key, bool prefix, int64_t from,
                           Duration /*wait*/) override {
    return etcd_.watch(key, prefix, from);
  }

 private:
  FakeEtcd& etcd_;
};

}  // namespace

std::unique_ptr<Coordinator> FakeEtcd::client() { return std::make_unique<FakeClient>(*this); }

void FakeEtcd::compact(int64_t revision) {
  std::lock_guard lock(mutex_);
  compacted_ = std::max(compacted_, std::min(revision, revision_));
  std::erase_if(history_, [&](const Change& change) { return change.revision <= compacted_; });
}

void FakeEtcd::set_reachable(bool reachable) {
  std::lock_guard lock(mutex_);
  reachable_ = reachable;
}

int64_t FakeEtcd::revision() const {
  std::lock_guard lock(mutex_);
  return revision_;
}

std::vector<FakeEtcd::Change> FakeEtcd::audit() const {
  std::lock_guard lock(mutex_);
  return audit_;
}

Status FakeEtcd::enter() {
  if (!reachable_) return Error::cannot_establish_connection;
  expire_leases();
  return ok_status();
}

void FakeEtcd::expire_leases() {
  const Instant now = clock_.monotonic_now();
  std::vector<int64_t> due;
  for (const auto& [id, lease] : leases_) {
    if (lease.expires_at <= now) due.push_back(id);
  }
  for (const int64_t id : due) revoke_locked(id);
}

// Each key of the lease goes in one revision, as etcd deletes them in one transaction.
void FakeEtcd::revoke_locked(int64_t id) {
  const auto found = leases_.find(id);
  if (found == leases_.end()) return;
  const std::set<std::string> keys = std::move(found->second.keys);
  leases_.erase(found);
  bool wrote = false;
  for (const std::string& key : keys) wrote |= erase_locked(key, false, revision_ + 1);
  if (wrote) revision_++;
}

void FakeEtcd::record(int64_t revision, WatchEvent event) {
  history_.push_back({revision, event});
  audit_.push_back({revision, std::move(event)});
}

RangeResult FakeEtcd::range_locked(std::string_view key, bool prefix) const {
  RangeResult result;
  result.revision = revision_;
  for (auto it = store_.lower_bound(key); it != store_.end() && in_range(it->first, key, prefix);
       ++it) {
    result.kvs.push_back(it->second);
  }
  return result;
}

void FakeEtcd::put_locked(std::string_view key, std::string_view value, int64_t lease,
                          int64_t revision) {
  KeyValue& kv = store_[std::string(key)];
  if (kv.create_revision == 0) {
    kv.key = std::string(key);
    kv.create_revision = revision;
  }
  if (kv.lease != 0 && kv.lease != lease) leases_[kv.lease].keys.erase(kv.key);
  kv.value = std::string(value);
  kv.mod_revision = revision;
  kv.version++;
  kv.lease = lease;
  if (lease != 0) leases_[lease].keys.insert(kv.key);
  record(revision, {.type = WatchEvent::Type::put, .kv = kv});
}

bool FakeEtcd::erase_locked(std::string_view key, bool prefix, int64_t revision) {
  bool erased = false;
  for (auto it = store_.lower_bound(key); it != store_.end() && in_range(it->first, key, prefix);) {
    if (it->second.lease != 0) {
      const auto lease = leases_.find(it->second.lease);
      if (lease != leases_.end()) lease->second.keys.erase(it->first);
    }
    record(revision,
           {.type = WatchEvent::Type::erase, .kv = {.key = it->first, .mod_revision = revision}});
    it = store_.erase(it);
    erased = true;
  }
  return erased;
}

Result<RangeResult> FakeEtcd::range(std::string_view key, bool prefix) {
  std::lock_guard lock(mutex_);
  HARK_TRY(enter());
  return range_locked(key, prefix);
}

Result<int64_t> FakeEtcd::put(std::string_view key, std::string_view value, int64_t lease) {
  Txn txn;
  txn.success.push_back(TxnOp::put(std::string(key), std::string(value), lease));
  HARK_TRY_ASSIGN(TxnResult result, this->txn(txn));
  return result.revision;
}

Result<int64_t> FakeEtcd::erase(std::string_view key, bool prefix) {
  Txn txn;
  txn.success.push_back({.kind = TxnOp::Kind::erase, .key = std::string(key), .prefix = prefix});
  HARK_TRY_ASSIGN(TxnResult result, this->txn(txn));
  return result.revision;
}

bool FakeEtcd::compare_holds(const Compare& compare) const {
  const auto found = store_.find(compare.key);
  const KeyValue absent;
  const KeyValue& kv = found == store_.end() ? absent : found->second;
  switch (compare.target) {
    case Compare::Target::value:
      // etcd: a value compare on an absent key fails whatever the operand.
      return found != store_.end() && holds(compare.op, kv.value, compare.value);
    case Compare::Target::create_revision:
      return holds(compare.op, kv.create_revision, compare.number);
    case Compare::Target::mod_revision: return holds(compare.op, kv.mod_revision, compare.number);
    case Compare::Target::version: return holds(compare.op, kv.version, compare.number);
  }
  return false;
}

// etcd refuses a whole transaction that puts with a lease that does not exist.
Status FakeEtcd::check_ops(const std::vector<TxnOp>& ops) const {
  for (const TxnOp& op : ops) {
    if (op.kind == TxnOp::Kind::put && op.lease != 0 && !leases_.contains(op.lease)) {
      return Error::resource_not_found;
    }
  }
  return ok_status();
}

void FakeEtcd::apply_locked(const TxnOp& op, TxnResult& result, bool& wrote) {
  switch (op.kind) {
    case TxnOp::Kind::put:
      put_locked(op.key, op.value, op.lease, revision_ + 1);
      wrote = true;
      break;
    case TxnOp::Kind::erase: wrote |= erase_locked(op.key, op.prefix, revision_ + 1); break;
    case TxnOp::Kind::range: {
      RangeResult range = range_locked(op.key, op.prefix);
      range.revision = revision_ + (wrote ? 1 : 0);
      result.ranges.push_back(std::move(range));
      break;
    }
  }
}

Result<TxnResult> FakeEtcd::txn(const Txn& txn) {
  std::lock_guard lock(mutex_);
  HARK_TRY(enter());
  TxnResult result;
  result.succeeded = std::all_of(txn.compare.begin(), txn.compare.end(),
                                 [this](const Compare& c) { return compare_holds(c); });
  const std::vector<TxnOp>& ops = result.succeeded ? txn.success : txn.failure;
  HARK_TRY(check_ops(ops));
  bool wrote = false;
  for (const TxnOp& op : ops) apply_locked(op, result, wrote);
  if (wrote) revision_++;
  result.revision = revision_;
  return result;
}

Result<Lease> FakeEtcd::lease_grant(int64_t ttl_seconds) {
  std::lock_guard lock(mutex_);
  HARK_TRY(enter());
  const int64_t id = next_lease_++;
  leases_[id] = {.ttl_seconds = ttl_seconds,
                 .expires_at = clock_.monotonic_now() + std::chrono::seconds(ttl_seconds)};
  return Lease{.id = id, .ttl_seconds = ttl_seconds};
}

Result<int64_t> FakeEtcd::lease_keep_alive(int64_t id) {
  std::lock_guard lock(mutex_);
  HARK_TRY(enter());
  const auto found = leases_.find(id);
  if (found == leases_.end()) return Error::resource_not_found;
  found->second.expires_at =
      clock_.monotonic_now() + std::chrono::seconds(found->second.ttl_seconds);
  return found->second.ttl_seconds;
}

Status FakeEtcd::lease_revoke(int64_t id) {
  std::lock_guard lock(mutex_);
  HARK_TRY(enter());
  if (!leases_.contains(id)) return Error::resource_not_found;
  revoke_locked(id);
  return ok_status();
}

Result<int64_t> FakeEtcd::lease_time_to_live(int64_t id) {
  std::lock_guard lock(mutex_);
  HARK_TRY(enter());
  const auto found = leases_.find(id);
  if (found == leases_.end()) return Error::resource_not_found;
  const Duration left = found->second.expires_at - clock_.monotonic_now();
  return std::chrono::duration_cast<std::chrono::seconds>(left).count();
}

Result<WatchBatch> FakeEtcd::watch(std::string_view key, bool prefix, int64_t from_revision) {
  std::lock_guard lock(mutex_);
  HARK_TRY(enter());
  WatchBatch batch;
  batch.revision = revision_;
  if (from_revision <= 0) return batch;  // etcd: 0 watches from now on.
  if (from_revision <= compacted_) {
    batch.compacted = true;
    batch.compact_revision = compacted_;
    return batch;
  }
  for (const Change& change : history_) {
    if (change.revision >= from_revision && in_range(change.event.kv.key, key, prefix)) {
      batch.events.push_back(change.event);
    }
  }
  return batch;
}

}  // namespace hark::server::cluster
