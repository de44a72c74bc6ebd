#include "hark/server/cluster/etcd_journal.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>

#include "hark/core/base/log.h"
#include "hark/storage/record_file.h"

namespace hark::server::cluster {

// ---- JournalLink -------------------------------------------------------------------------

void JournalLink::set_start(uint64_t sequence) {
  std::lock_guard lock(mutex_);
  start_ = sequence;
}

uint64_t JournalLink::start() const {
  std::lock_guard lock(mutex_);
  return start_;
}

void JournalLink::set_waker(Waker* waker) {
  std::lock_guard lock(mutex_);
  waker_ = waker;
}

// Under the lock, so the coordination thread cannot clear the waker (and free what it
// wakes) while it runs; the waker only signals.
void JournalLink::wake() {
  std::lock_guard lock(mutex_);
  if (waker_ != nullptr) waker_->wake();
}

void JournalLink::push(Append append) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      work_.appends.push_back(std::move(append));
      append.done = nullptr;
    }
  }
  if (append.done != nullptr) {  // Closed: nobody would ever take it.
    answer(*append.reactor, *append.done, {.status = Error::feature_unavailable});
    return;
  }
  wake();
}

void JournalLink::push(Wait wait) {
  bool closed = false;
  {
    std::lock_guard lock(mutex_);
    closed = closed_;
    if (!closed) work_.waits.push_back(wait);
  }
  if (closed) {
    answer(*wait.reactor, *wait.done, {});
    return;
  }
  wake();
}

void JournalLink::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
}

void JournalLink::applied(uint64_t sequence) {
  {
    std::lock_guard lock(mutex_);
    work_.applied = std::max(work_.applied, sequence);
  }
  wake();
}

void JournalLink::offer_snapshot(std::span<const std::byte> snapshot) {
  {
    std::lock_guard lock(mutex_);
    work_.snapshot.assign(reinterpret_cast<const char*>(snapshot.data()), snapshot.size());
  }
  wake();
}

JournalLink::Work JournalLink::take() {
  std::lock_guard lock(mutex_);
  Work work;
  std::swap(work.appends, work_.appends);
  std::swap(work.waits, work_.waits);
  std::swap(work.snapshot, work_.snapshot);
  work.applied = work_.applied;
  return work;
}

size_t JournalLink::pending() const {
  std::lock_guard lock(mutex_);
  return work_.appends.size() + work_.waits.size();
}

namespace {

// One answer of the coordination thread, run on shard 0 (control plane: one allocation per
// metadata command).
class Answer final : public io::Task {
 public:
  Answer(core::JournalDone& done, core::JournalResult result) : done_(done), result_(result) {}
  void run() override {
    core::JournalDone& done = done_;
    const core::JournalResult result = result_;
    delete this;
    done.journaled(result);
  }

 private:
  core::JournalDone& done_;
  core::JournalResult result_;
};

}  // namespace

void JournalLink::answer(io::Reactor& reactor, core::JournalDone& done,
                         core::JournalResult result) {
  reactor.post_from_outside(*new Answer(done, result));
}

// ---- EtcdJournal (shard 0) ---------------------------------------------------------------

void EtcdJournal::append(io::Reactor& reactor, const core::JournalEntry& entry,
                         core::JournalDone& done) {
  if (entry.adopted) {
    local_.append(reactor, entry, done);  // etcd holds it already.
    return;
  }
  HARK_ASSERT(caller_ == nullptr);
  reactor_ = &reactor;
  pending_ = entry;  // Its records stay the Coordinator's until it is answered.
  caller_ = &done;
  link_.push(JournalLink::Append{
      .sequence = entry.sequence,
      .records =
          std::string(reinterpret_cast<const char*>(entry.records.data()), entry.records.size()),
      .created = entry.created,
      .removed = entry.removed,
      .done = this,
      .reactor = &reactor});
}

void EtcdJournal::journaled(core::JournalResult result) {
  core::JournalDone& caller = *std::exchange(caller_, nullptr);
  if (!result.status.ok() || result.taken) {
    caller.journaled(result);
    return;
  }
  // etcd holds the entry: keep it in metadata.log, the cache a restart replays first.
  local_.append(*reactor_, pending_, caller);
}

void EtcdJournal::applied(io::Reactor& reactor, uint64_t sequence, bool own,
                          core::JournalDone& done) {
  link_.applied(sequence);
  if (!own) {
    done.journaled({});
    return;
  }
  link_.push(JournalLink::Wait{.sequence = sequence, .done = &done, .reactor = &reactor});
}

Status EtcdJournal::append_undo(std::span<const std::byte> records) {
  HARK_LOG_ERROR(
      "metadata journal: a change etcd holds could not be applied on this node; undone here "
      "only (other nodes keep it)");
  return local_.append_undo(records);
}

// ---- MetadataSync (the coordination thread) ----------------------------------------------

uint64_t snapshot_sequence(std::string_view record) {
  // [length u32][checksum u32][kind u8 = 16][n u64]...
  constexpr size_t at = storage::record_header_bytes + 1;
  if (record.size() < at + 8 || record[storage::record_header_bytes] != 16) return 0;
  uint64_t sequence = 0;
  std::memcpy(&sequence, record.data() + at, 8);
  return sequence;
}

Status catch_up_from_snapshot(Coordinator& etcd, const Keys& keys,
                              const std::string& data_directory) {
  HARK_TRY_ASSIGN(const uint64_t local, core::Broker::journaled_sequence(data_directory));
  HARK_TRY_ASSIGN(const RangeResult next, etcd.range(keys.meta_entry(local + 1), false));
  if (!next.kvs.empty()) return ok_status();  // Entries follow on from this node's file.
  HARK_TRY_ASSIGN(const RangeResult snapshot, etcd.range(keys.meta_snapshot, false));
  if (snapshot.kvs.empty()) return ok_status();  // Nothing trimmed: the journal ends here.
  const std::string& record = snapshot.kvs.front().value;
  const uint64_t sequence = snapshot_sequence(record);
  if (sequence <= local) return ok_status();  // This node is past it: its entries follow.
  HARK_LOG_WARN(
      "cluster: metadata.log holds entry %u, but etcd's journal was trimmed past it; starting "
      "from etcd's snapshot at entry %u",
      local, sequence);
  return core::Broker::adopt_snapshot(
      data_directory, std::span(reinterpret_cast<const std::byte*>(record.data()), record.size()));
}

namespace {

// An entry on its way to shard 0; it frees itself when answered (control plane).
class DeliveredEntry final : public core::ApplyJournalEntry {
 public:
  void done() override {
    if (!status().ok()) {
      HARK_LOG_ERROR("cluster: metadata entry %u not applied: %s", sequence,
                     std::string(error_name(status().error())));
    }
    delete this;
  }
};

}  // namespace

void BrokerEntrySink::deliver(uint64_t sequence, std::string records) {
  auto* entry = new DeliveredEntry();
  entry->sequence = sequence;
  const auto* bytes = reinterpret_cast<const std::byte*>(records.data());
  entry->records.assign(bytes, bytes + records.size());
  broker_.submit(*entry);
}

std::unique_ptr<core::MetadataJournal> EtcdJournalFactory::make(core::MetadataJournal& local,
                                                                uint64_t sequence) {
  link_.set_start(sequence);
  return std::make_unique<EtcdJournal>(local, link_);
}

MetadataSync::MetadataSync(JournalLink& link, EntrySink& sink, MetadataSyncOptions options)
    : link_(link), sink_(sink), options_(options) {}

void MetadataSync::step(Coordinator& etcd, NodeAgent& agent, Instant now, bool synced) {
  if (next_ == 0) next_ = link_.start() + 1;
  JournalLink::Work work = link_.take();
  applied_ = std::max(applied_, work.applied);
  if (!work.snapshot.empty()) snapshot_ = std::move(work.snapshot);
  for (JournalLink::Wait& wait : work.waits) {
    waits_.push_back({.wait = wait, .deadline = now + options_.ack_timeout});
  }
  for (JournalLink::Append& append : work.appends) {
    if (!synced) {
      HARK_LOG_WARN("cluster: metadata command refused (entry %u): etcd cannot be reached",
                    append.sequence);
      JournalLink::answer(*append.reactor, *append.done, {.status = Error::feature_unavailable});
      continue;
    }
    write(etcd, agent, append);
  }
  if (synced) {
    deliver(agent);
    publish(etcd, agent);
    if (agent.is_controller()) trim(agent);
  }
  // A command already in etcd is answered even while etcd is away (at its ack timeout).
  answer_waits(etcd, agent, now, synced);
}

void MetadataSync::stop() {
  link_.close();
  JournalLink::Work work = link_.take();
  for (JournalLink::Append& append : work.appends) {
    JournalLink::answer(*append.reactor, *append.done, {.status = Error::feature_unavailable});
  }
  for (JournalLink::Wait& wait : work.waits) waits_.push_back({.wait = wait, .deadline = {}});
  for (PendingWait& pending : waits_) {
    JournalLink::answer(*pending.wait.reactor, *pending.wait.done, {});
  }
  waits_.clear();
}

namespace {

// Entry `sequence` was refused: neither taken nor after an entry etcd holds.
void log_missing_predecessor(uint64_t sequence) {
  if (sequence == 1) {
    HARK_LOG_ERROR(
        "cluster: etcd's metadata journal was trimmed (it holds a snapshot) and this node's "
        "metadata.log is empty: restart it to start from etcd's snapshot; metadata commands are "
        "refused");
  } else {
    HARK_LOG_ERROR(
        "cluster: etcd's metadata journal lacks entry %u that this node's metadata.log holds "
        "(was etcd reset, is this data directory from another cluster, or was the journal "
        "trimmed past this node: restart it to load etcd's snapshot?); metadata commands are "
        "refused",
        sequence - 1);
  }
}

// The i-th partition request of an entry: the created ones (with their topic's replication
// factor, which the controller places that many replicas for), then the removed ones.
TxnOp partition_op(const Keys& keys, const JournalLink::Append& append, size_t i) {
  if (i < append.created.size()) {
    const core::JournalEntry::Created& created = append.created[i];
    return TxnOp::put(keys.partition(created.key),
                      encode_partition_request(created.replication_factor));
  }
  return TxnOp::erase(keys.partition(append.removed[i - append.created.size()]));
}

}  // namespace

// Entry n goes in only if nobody wrote n yet and n - 1 exists: etcd alone orders the journal.
// The partitions it creates are asked for in the same transaction (the controller assigns
// them), the ones it removes are no longer asked for; their assignments stay (docs/cluster.md
// §Metadata: epochs only grow).
void MetadataSync::write(Coordinator& etcd, NodeAgent& agent, JournalLink::Append& append) {
  const Keys& keys = agent.keys();
  const std::string key = keys.meta_entry(append.sequence);
  Txn txn;
  txn.compare.push_back({.key = key,
                         .target = Compare::Target::create_revision,
                         .op = Compare::Op::equal,
                         .value = {},
                         .number = 0});
  // n - 1 exists; for n = 1, no snapshot does (once the journal was trimmed, meta/1 is gone
  // but the journal did not start again). The controller trims only below its snapshot's n
  // less keep_entries (>= 1), so the end of the journal always has its predecessor.
  txn.compare.push_back(
      {.key = append.sequence > 1 ? keys.meta_entry(append.sequence - 1) : keys.meta_snapshot,
       .target = Compare::Target::create_revision,
       .op = append.sequence > 1 ? Compare::Op::greater : Compare::Op::equal,
       .value = {},
       .number = 0});
  txn.success.push_back(TxnOp::put(key, append.records));
  const size_t keys_count = append.created.size() + append.removed.size();
  const size_t first = std::min(keys_count, options_.txn_keys_max);
  for (size_t i = 0; i < first; i++) txn.success.push_back(partition_op(keys, append, i));
  txn.failure.push_back(TxnOp::range(key));
  const Result<TxnResult> result = etcd.txn(txn);
  if (!result.ok()) {
    HARK_LOG_WARN("cluster: metadata command refused (entry %u): etcd: %s", append.sequence,
                  std::string(error_name(result.error())));
    JournalLink::answer(*append.reactor, *append.done, {.status = Error::feature_unavailable});
    return;
  }
  if (result->succeeded) {
    agent.written(txn.success, result->revision);
    write_rest(etcd, agent, append, first);
    JournalLink::answer(*append.reactor, *append.done, {});
    return;
  }
  if (!result->ranges.empty() && !result->ranges[0].kvs.empty()) {
    JournalLink::answer(*append.reactor, *append.done, {.status = ok_status(), .taken = true});
    return;
  }
  log_missing_predecessor(append.sequence);
  JournalLink::answer(*append.reactor, *append.done, {.status = Error::feature_unavailable});
}

// Partition requests past the first transaction's share (a topic with many partitions).
void MetadataSync::write_rest(Coordinator& etcd, const NodeAgent& agent,
                              const JournalLink::Append& append, size_t from) {
  const Keys& keys = agent.keys();
  const size_t count = append.created.size() + append.removed.size();
  while (from < count) {
    Txn txn;
    const size_t end = std::min(count, from + options_.txn_keys_max);
    for (size_t i = from; i < end; i++) txn.success.push_back(partition_op(keys, append, i));
    if (!etcd.txn(txn).ok()) {
      HARK_LOG_ERROR("cluster: entry %u: could not write its partition requests %u..%u",
                     append.sequence, from, end - 1);
      return;
    }
    from = end;
  }
}

// Every entry the mirror holds from next_ on, in order; a gap waits for the watch.
void MetadataSync::deliver(const NodeAgent& agent) {
  const auto& entries = agent.mirror().entries();
  for (;;) {
    const auto found = entries.find(agent.keys().meta_entry(next_));
    if (found == entries.end()) break;
    sink_.deliver(next_, found->second.value);
    next_++;
  }
  const auto snapshot = entries.find(agent.keys().meta_snapshot);
  if (snapshot == entries.end() || snapshot_sequence(snapshot->second.value) < next_ ||
      behind_logged_) {
    return;
  }
  // The entry after this node's was trimmed while it was away (a pause past its lease).
  behind_logged_ = true;
  HARK_LOG_ERROR(
      "cluster: metadata entry %u was trimmed from etcd (its snapshot is at entry %u) while this "
      "node was away; it applies no more metadata: restart it, and it starts from the snapshot",
      next_, snapshot_sequence(snapshot->second.value));
}

bool MetadataSync::every_live_node_applied(const NodeAgent& agent, uint64_t sequence) const {
  const Ref<const ClusterView> view = agent.view();
  if (!view || applied_ < sequence) return false;
  const auto& entries = agent.mirror().entries();
  for (const NodeInfo& node : view->nodes) {
    const auto found = entries.find(agent.keys().applied_by(node.id));
    uint64_t applied = 0;
    if (found != entries.end()) {
      const std::string& value = found->second.value;
      std::from_chars(value.data(), value.data() + value.size(), applied);
    }
    if (applied < sequence) return false;
  }
  return true;
}

void MetadataSync::trim(NodeAgent& agent) {
  const Keys& keys = agent.keys();
  const auto& entries = agent.mirror().entries();
  const auto current = entries.find(keys.meta_snapshot);
  const uint64_t written = current == entries.end() ? 0 : snapshot_sequence(current->second.value);
  const uint64_t offered = snapshot_sequence(snapshot_);
  if (offered > written && every_live_node_applied(agent, offered)) {
    const Compare unchanged{.key = keys.meta_snapshot,
                            .target = Compare::Target::mod_revision,
                            .op = Compare::Op::equal,
                            .value = {},
                            .number = current == entries.end() ? 0 : current->second.mod_revision};
    const Result<bool> put =
        agent.controller_txn({unchanged}, {TxnOp::put(keys.meta_snapshot, snapshot_)});
    if (!put.ok() && refused_snapshot_ != offered) {
      // E.g. a catalog past etcd's --max-request-bytes (1.5 MiB by default): nothing is trimmed.
      refused_snapshot_ = offered;
      HARK_LOG_WARN(
          "cluster: etcd refused the metadata snapshot at entry %u (%u bytes): %s; the journal "
          "in etcd is not trimmed until a snapshot is written",
          offered, snapshot_.size(), std::string(error_name(put.error())));
    }
    if (!put.ok() || !*put) return;  // Retried at the next step (or by the next controller).
    HARK_LOG_INFO("cluster: metadata snapshot at entry %u written to etcd", offered);
    return;  // The mirror brings it; the entries below go at a later step.
  }
  const uint64_t keep = std::max<uint64_t>(options_.keep_entries, 1);
  if (written > keep) erase_trimmed(agent, written - keep);
}

// meta/<k> for every k <= up_to still in the mirror, oldest first, in transactions of at most
// txn_keys_max deletes.
void MetadataSync::erase_trimmed(NodeAgent& agent, uint64_t up_to) {
  const Keys& keys = agent.keys();
  const auto& entries = agent.mirror().entries();
  const std::string last = keys.meta_entry(up_to);
  std::vector<TxnOp> erase;
  for (auto it = entries.lower_bound(keys.meta_entry(1));
       it != entries.end() && it->first <= last && erase.size() < options_.txn_keys_max; ++it) {
    erase.push_back(TxnOp::erase(it->first));
  }
  if (erase.empty()) return;
  const Result<bool> erased = agent.controller_txn({}, erase);
  if (erased.ok() && *erased) {
    HARK_LOG_INFO("cluster: trimmed %u metadata entries from etcd (up to entry %u)", erase.size(),
                  up_to);
  }
}

// True when this node's view assigns every partition a command asked an owner for: before that,
// a send or poll here for a partition just created would find no owner (11001). A node holds
// its progress back until then, and the node that ran the command waits for its own view too,
// so read-your-writes covers the assignments the controller writes after the entry.
bool MetadataSync::assigned_all(const NodeAgent& agent) const {
  const Ref<const ClusterView> view = agent.view();
  if (!view) return false;
  const std::string& prefix = agent.keys().partitions;
  const auto& entries = agent.mirror().entries();
  for (auto it = entries.lower_bound(prefix); it != entries.end() && it->first.starts_with(prefix);
       ++it) {
    const std::optional<core::PartitionKey> key =
        parse_partition_suffix(std::string_view(it->first).substr(prefix.size()));
    if (key && !view->assignments.contains(*key)) return false;
  }
  return true;
}

void MetadataSync::publish(Coordinator& etcd, NodeAgent& agent) {
  const int64_t lease = agent.lease();
  if (lease == 0 || (applied_ == published_ && lease == published_lease_)) return;
  if (applied_ != published_ && !assigned_all(agent)) return;  // Retried at the next step.
  // On the node's lease: a node that is gone stops counting.
  std::vector<TxnOp> put = {
      TxnOp::put(agent.keys().applied_by(options_.self), std::to_string(applied_), lease)};
  const Result<int64_t> revision = etcd.put(put[0].key, put[0].value, lease);
  if (!revision.ok()) return;  // Retried at the next step.
  agent.written(put, *revision);
  published_ = applied_;
  published_lease_ = lease;
}

std::string MetadataSync::lagging(const NodeAgent& agent, uint64_t sequence,
                                  const std::map<uint32_t, uint64_t>& applied) const {
  std::string names;
  const Ref<const ClusterView> view = agent.view();
  if (!view) return names;
  for (const NodeInfo& node : view->nodes) {
    if (node.id == options_.self) continue;
    const auto found = applied.find(node.id);
    if (found != applied.end() && found->second >= sequence) continue;
    names += (names.empty() ? "" : ", ") + std::to_string(node.id);
  }
  return names;
}

// Read directly rather than from the mirror: a watch that starts behind etcd's revision is
// served by etcd's catch-up loop (every 100 ms), which would add that much to every command.
std::map<uint32_t, uint64_t> MetadataSync::read_applied(Coordinator& etcd,
                                                        const NodeAgent& agent) const {
  std::map<uint32_t, uint64_t> applied;
  const std::string& prefix = agent.keys().applied;
  const Result<RangeResult> read = etcd.range(prefix, true);
  std::vector<const KeyValue*> kvs;
  if (read.ok()) {
    for (const KeyValue& kv : read->kvs) kvs.push_back(&kv);
  } else {
    for (const auto& [key, kv] : agent.mirror().entries()) {
      if (key.starts_with(prefix)) kvs.push_back(&kv);
    }
  }
  for (const KeyValue* kv : kvs) {
    uint32_t node = 0;
    uint64_t sequence = 0;
    const std::string_view id = std::string_view(kv->key).substr(prefix.size());
    std::from_chars(id.data(), id.data() + id.size(), node);
    std::from_chars(kv->value.data(), kv->value.data() + kv->value.size(), sequence);
    applied[node] = sequence;
  }
  return applied;
}

void MetadataSync::answer_waits(Coordinator& etcd, const NodeAgent& agent, Instant now,
                                bool synced) {
  if (waits_.empty()) return;
  std::map<uint32_t, uint64_t> applied;
  if (synced) applied = read_applied(etcd, agent);
  const bool self_assigned = assigned_all(agent);
  for (auto it = waits_.begin(); it != waits_.end();) {
    std::string behind = synced ? lagging(agent, it->wait.sequence, applied) : "?";
    if (!self_assigned) behind += (behind.empty() ? "" : ", ") + std::to_string(options_.self);
    if (!behind.empty() && now < it->deadline) {
      ++it;
      continue;
    }
    if (!behind.empty()) {
      HARK_LOG_WARN(
          "cluster: entry %u answered before node(s) %s applied it and saw its partitions assigned "
          "(no progress within the ack "
          "timeout); a client there may not see it yet",
          it->wait.sequence, behind);
    }
    JournalLink::answer(*it->wait.reactor, *it->wait.done, {});
    it = waits_.erase(it);
  }
}

}  // namespace hark::server::cluster
