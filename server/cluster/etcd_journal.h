#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/broker/broker.h"
#include "hark/core/broker/metadata_journal.h"
#include "hark/server/cluster/coordinator.h"
#include "hark/server/cluster/node_agent.h"

namespace hark::server::cluster {

// Cluster metadata in etcd (docs/cluster.md §Metadata). Three parts:
//  - JournalLink: what shard 0 asks the coordination thread (append an entry, wait until every
//    live node applied one, this node's progress); thread-safe, a mutex held for a push or a
//    take, never across a call to etcd.
//  - EtcdJournal: the core::MetadataJournal shard 0's Coordinator uses in cluster mode. It
//    hands etcd work to the link and keeps each entry in the local metadata.log (its cache)
//    once etcd holds it; never blocks shard 0.
//  - MetadataSync: the coordination thread's side, stepped after NodeAgent::step: writes
//    entries with one guarded transaction each, hands every entry etcd holds to the broker in
//    order (ApplyJournalEntry), publishes applied/<self> once its view also assigns every
//    partition asked for, and answers a waiting command once every live node's applied/<id>
//    reached its entry (and this node's view assigns them too).
class JournalLink {
 public:
  // What a push wakes (the coordination thread). Called under the link's lock: it only
  // signals.
  class Waker {
   public:
    virtual void wake() = 0;

   protected:
    ~Waker() = default;
  };

  struct Append {
    uint64_t sequence = 0;
    std::string records;
    std::vector<core::JournalEntry::Created> created;
    std::vector<core::PartitionKey> removed;
    core::JournalDone* done = nullptr;
    io::Reactor* reactor = nullptr;
  };
  struct Wait {
    uint64_t sequence = 0;
    core::JournalDone* done = nullptr;
    io::Reactor* reactor = nullptr;
  };
  struct Work {
    std::vector<Append> appends;
    std::vector<Wait> waits;
    uint64_t applied = 0;  // The last entry this node applied.
    std::string snapshot;  // The latest snapshot record of metadata.log's compaction, if any.
  };

  // The entry the local metadata.log reached at start (delivery resumes after it).
  void set_start(uint64_t sequence);
  uint64_t start() const;
  // Called (outside the lock) after each push, to end the coordination thread's wait.
  void set_waker(Waker* waker);

  // Shard 0.
  void push(Append append);
  void push(Wait wait);
  void applied(uint64_t sequence);
  // metadata.log was compacted to `snapshot` (one framed snapshot record): the controller may
  // trim etcd's journal up to it (MetadataSync).
  void offer_snapshot(std::span<const std::byte> snapshot);
  // The coordination thread.
  Work take();
  // The coordination thread, leaving: later pushes are answered at once (appends refused
  // with feature_unavailable, waits as they are), so nothing waits on a thread that is gone
  // (a user command's AuthPool thread at shutdown).
  void close();
  // Appends and waits not taken yet (tests: a command has reached the link).
  size_t pending() const;
  // Posts `result` to `done` on `reactor`'s shard (its Inbox).
  static void answer(io::Reactor& reactor, core::JournalDone& done, core::JournalResult result);

 private:
  void wake();

  mutable std::mutex mutex_;
  Work work_;
  uint64_t start_ = 0;
  Waker* waker_ = nullptr;
  bool closed_ = false;
};

class EtcdJournal final : public core::MetadataJournal, private core::JournalDone {
 public:
  // `local` (metadata.log) and `link` must outlive the journal.
  EtcdJournal(core::MetadataJournal& local, JournalLink& link) : local_(local), link_(link) {}

  void append(io::Reactor& reactor, const core::JournalEntry& entry,
              core::JournalDone& done) override;
  void applied(io::Reactor& reactor, uint64_t sequence, bool own, core::JournalDone& done) override;
  Status append_undo(std::span<const std::byte> records) override;
  // metadata.log's compaction, local to this node: etcd's entries stay as they are.
  bool snapshot_due() const override { return local_.snapshot_due(); }
  // Also offered to the link, so that etcd's journal can be trimmed to it.
  void snapshot(io::Reactor& reactor, std::span<const std::byte> snapshot,
                core::JournalDone& done) override {
    link_.offer_snapshot(snapshot);
    local_.snapshot(reactor, snapshot, done);
  }
  void detach(core::JournalDone& done) override { local_.detach(done); }

 private:
  // etcd's answer to an append, on shard 0: on success the entry goes to metadata.log.
  void journaled(core::JournalResult result) override;

  core::MetadataJournal& local_;
  JournalLink& link_;
  io::Reactor* reactor_ = nullptr;
  core::JournalEntry pending_;
  core::JournalDone* caller_ = nullptr;
};

// Where MetadataSync hands each entry etcd holds, in order (harkd: Broker::submit of an
// ApplyJournalEntry).
class EntrySink {
 public:
  virtual void deliver(uint64_t sequence, std::string records) = 0;

 protected:
  ~EntrySink() = default;
};

// Submits each entry to the broker as an ApplyJournalEntry (failures logged).
class BrokerEntrySink final : public EntrySink {
 public:
  explicit BrokerEntrySink(core::Broker& broker) : broker_(broker) {}
  void deliver(uint64_t sequence, std::string records) override;

 private:
  core::Broker& broker_;
};

// The entry a framed snapshot record (docs/storage-format.md §Metadata log, kind 16) is at; 0
// if `record` is not one.
uint64_t snapshot_sequence(std::string_view record);

// Before Broker::start, blocking (harkd's main, tests): when etcd's journal was trimmed past
// what <data_directory>/metadata.log holds (its next entry is gone), replaces that file by
// etcd's meta/snapshot, so the broker starts from the snapshot (its start removes partition
// directories the catalog no longer lists) and catches up from the entries after it. Errors:
// etcd's (the node then starts from its own file, logged), Broker::adopt_snapshot's.
Status catch_up_from_snapshot(Coordinator& etcd, const Keys& keys,
                              const std::string& data_directory);

// harkd's JournalFactory: an EtcdJournal over `link`, which learns where the local log stands.
class EtcdJournalFactory final : public core::JournalFactory {
 public:
  explicit EtcdJournalFactory(JournalLink& link) : link_(link) {}
  std::unique_ptr<core::MetadataJournal> make(core::MetadataJournal& local,
                                              uint64_t sequence) override;

 private:
  JournalLink& link_;
};

struct MetadataSyncOptions {
  uint32_t self = 0;
  // Entries kept in etcd below its snapshot's n, so a node that lags briefly catches up from
  // entries rather than from the snapshot (docs/cluster.md §Metadata). At least 1.
  uint64_t keep_entries = 1000;
  // How long a command waits for the other live nodes to apply its entry before it is
  // answered anyway (logged): a node that hangs without losing its lease.
  Duration ack_timeout = std::chrono::seconds(5);
  // Partition keys per etcd transaction (etcd's --max-txn-ops is 128 by default).
  size_t txn_keys_max = 100;
};

class MetadataSync {
 public:
  // `link` and `sink` must outlive it.
  MetadataSync(JournalLink& link, EntrySink& sink, MetadataSyncOptions options);

  // After each NodeAgent step (`synced`: it reached etcd). Appends are written (or refused
  // with feature_unavailable when etcd cannot be reached), new entries delivered, this node's
  // progress published, waits answered.
  void step(Coordinator& etcd, NodeAgent& agent, Instant now, bool synced);
  // Leaving: answers what is queued (appends refused, waits answered as they are).
  void stop();
  // True while a command waits for other nodes: the caller steps again soon (a short watch),
  // since their progress is read directly.
  bool waiting() const { return !waits_.empty(); }

 private:
  struct PendingWait {
    JournalLink::Wait wait;
    Instant deadline;
  };

  void write(Coordinator& etcd, NodeAgent& agent, JournalLink::Append& append);
  void write_rest(Coordinator& etcd, const NodeAgent& agent, const JournalLink::Append& append,
                  size_t from);
  void deliver(const NodeAgent& agent);
  // The controller: writes meta/snapshot once every live node applied its n, then deletes
  // meta/<k> for k <= n - keep_entries, each in a transaction guarded on its leadership.
  void trim(NodeAgent& agent);
  bool every_live_node_applied(const NodeAgent& agent, uint64_t sequence) const;
  void erase_trimmed(NodeAgent& agent, uint64_t up_to);
  void publish(Coordinator& etcd, NodeAgent& agent);
  bool assigned_all(const NodeAgent& agent) const;
  void answer_waits(Coordinator& etcd, const NodeAgent& agent, Instant now, bool synced);
  // applied/<id> of every node, read from etcd (the mirror's copy if etcd does not answer).
  std::map<uint32_t, uint64_t> read_applied(Coordinator& etcd, const NodeAgent& agent) const;
  // The live nodes (but this one) whose progress is below `sequence`, as "2, 3".
  std::string lagging(const NodeAgent& agent, uint64_t sequence,
                      const std::map<uint32_t, uint64_t>& applied) const;

  JournalLink& link_;
  EntrySink& sink_;
  MetadataSyncOptions options_;
  uint64_t next_ = 0;       // The next entry to deliver; 0 until the first step.
  uint64_t applied_ = 0;    // This node's progress, as shard 0 reported it.
  uint64_t published_ = 0;  // As applied/<self> holds it.
  int64_t published_lease_ = 0;
  std::deque<PendingWait> waits_;
  std::string snapshot_;           // The latest snapshot this node's metadata.log compacted to.
  bool behind_logged_ = false;     // Entries this node needs were trimmed: logged once.
  uint64_t refused_snapshot_ = 0;  // The snapshot etcd last refused: logged once.
};

}  // namespace hark::server::cluster
