#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/core/partition_key.h"
#include "hark/io/reactor.h"

namespace hark::core {

// One entry of the metadata journal: what one metadata command changed, as one framed entry
// record of the metadata log (docs/storage-format.md §Metadata log) that holds the command's
// records and the entry's number, so it is kept whole or not at all. Entries are numbered 1,
// 2, 3... with no gap; entry n was built against the catalog that entries 1..n-1 made, so applying
// them in order rebuilds it exactly.
struct JournalEntry {
  uint64_t sequence = 0;
  std::span<const std::byte> records;
  // The partitions the entry creates, each with its topic's replication factor, and those it
  // removes (a journal that assigns partitions to nodes asks for them in the same write:
  // docs/cluster.md §Metadata).
  struct Created {
    PartitionKey key;
    uint8_t replication_factor = 1;
  };
  std::vector<Created> created;
  std::vector<PartitionKey> removed;
  // True for an entry the journal delivered (another writer's, through ApplyJournalEntry):
  // it is already in the shared log and only needs keeping locally.
  bool adopted = false;
};

// How a journal call ended. `taken`: another writer holds the entry's sequence (a shared
// journal only); the entry that won arrives through ApplyJournalEntry, and the command is
// checked again against the catalog it makes.
struct JournalResult {
  Status status;
  bool taken = false;
};

// Told once, on shard 0, when a journal call ends.
class JournalDone {
 public:
  virtual void journaled(JournalResult result) = 0;

 protected:
  ~JournalDone() = default;
};

// Where shard 0's metadata Coordinator keeps the journal (docs/architecture.md §The broker).
// Two implementations: the single node's metadata.log (core/broker/internal/metadata_log.h),
// and a cluster's shared log in etcd with metadata.log as its local cache (harkd's
// server/cluster/etcd_journal.h). Called on shard 0, one call at a time; an implementation
// never blocks the shard: it answers `done` later, on shard 0 (`reactor` is shard 0's).
class MetadataJournal {
 public:
  virtual ~MetadataJournal() = default;

  // Makes `entry` durable (an adopted entry: locally). Errors are Iggy codes, logged by the
  // journal: cannot_write_to_file, cannot_sync_file, feature_unavailable (a shared journal
  // that cannot reach its store).
  virtual void append(io::Reactor& reactor, const JournalEntry& entry, JournalDone& done) = 0;
  // After every shard applied entry `sequence`: answers when the command that wrote it
  // (`own`) may be acknowledged. A shared journal waits until every live node applied it
  // (read-your-writes across nodes) and reports this node's progress.
  virtual void applied(io::Reactor& reactor, uint64_t sequence, bool own, JournalDone& done) = 0;
  // Error path only, blocking: records that undo an entry no shard could apply, kept locally.
  virtual Status append_undo(std::span<const std::byte> records) = 0;
  // True when the local log holds more entries past its last snapshot than its bound
  // (BrokerOptions::metadata_snapshot_entries): the Coordinator then hands it a snapshot.
  virtual bool snapshot_due() const = 0;
  // Replaces the local log by `snapshot` (one framed snapshot record of the catalog at the last
  // entry it holds, docs/storage-format.md §Metadata log), so that a crash at any step leaves
  // the old file or the new one. Errors as append(); the old file is kept then.
  virtual void snapshot(io::Reactor& reactor, std::span<const std::byte> snapshot,
                        JournalDone& done) = 0;
  // `done` goes away (the broker stops) with a call in flight, e.g. a compaction, which ends
  // as it would but tells nobody.
  virtual void detach(JournalDone& done) = 0;
};

// Told of every extension record an entry holds (bytes the core journals for an embedder but
// never reads: JournalExtension, BrokerOptions::extensions), in journal order: at
// Broker::start for those metadata.log holds (on the thread calling start, before any shard
// runs), then on shard 0 for each entry this node journals or adopts, once the entry is
// durable and before the command that wrote it is answered. Must not block.
class JournalExtensions {
 public:
  virtual void applied(std::span<const std::byte> record) = 0;
  // On shard 0, between two entries: appends to `records` the extension records that rebuild,
  // applied in order from nothing, the state every record applied so far made (a snapshot of
  // the journal compacts them away). Must not block.
  virtual void snapshot(std::vector<std::vector<std::byte>>& records) const = 0;

 protected:
  ~JournalExtensions() = default;
};

// Makes the journal a broker uses around its local metadata.log (BrokerOptions::journal).
class JournalFactory {
 public:
  // Called once at start, on the thread calling Broker::start, with the local log and the
  // last entry it holds. Must not call the broker.
  virtual std::unique_ptr<MetadataJournal> make(MetadataJournal& local, uint64_t sequence) = 0;

 protected:
  ~JournalFactory() = default;
};

}  // namespace hark::core
