#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/internal/catalog.h"
#include "hark/core/broker/metadata_journal.h"
#include "hark/core/broker/operations.h"
#include "hark/io/reactor.h"

namespace hark::core::internal {

class BrokerShard;

// A new catalog version and what shards must do to their partitions to get there.
struct Change {
  Ref<const Catalog> catalog;
  std::vector<Ref<PartitionCell>> created;
  std::vector<Ref<PartitionCell>> removed;
  std::vector<Ref<PartitionCell>> purged;
  std::vector<std::vector<std::byte>> extensions;  // For BrokerOptions::extensions.
};

// Runs metadata commands one at a time on shard 0 (which owns the catalog): journals the
// change as entry n (the catalog's sequence + 1; MetadataJournal: metadata.log on one node,
// etcd in a cluster), then runs two rounds over every shard:
//   apply:  each shard takes the new catalog, opens the partitions it owns among `created`
//           and purges those among `purged`;
//   retire: (when partitions were removed) once no shard can reach them any more, each owner
//           aborts their parked polls as deleted, closes them and deletes their files;
// then tells the journal it applied n, and answers the command when the journal says so (a
// cluster: once every live node applied n), so any connection sees its effect next.
// Entries other nodes wrote (ApplyJournalEntry) run the same way, in sequence order, ahead of
// local commands. When another node took n first (JournalResult::taken), the command waits
// for that entry, then is checked again against the newer catalog and journaled as n + 1.
// Between commands, when the journal's local log holds more entries past its last snapshot
// than its bound (MetadataJournal::snapshot_due), the log is compacted to a snapshot of the
// catalog and of the embedder's extensions (JournalExtensions::snapshot); commands wait
// meanwhile (metadata only: the data path never waits for it).
// If a shard fails to open a partition, the change is undone the same way (the old catalog
// applied, the new partitions retired, the opposite record journaled locally) and the command
// fails with that error.
class Coordinator final : private JournalDone {
 public:
  // `journal` keeps each change before it is applied; it must outlive the coordinator.
  Coordinator(BrokerShard& shard, Ref<const Catalog> catalog, MetadataJournal& journal);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Queues `command` (on shard 0).
  void enqueue(MetadataCommand& command);
  // The broker stops (shard 0's on_stop): the embedder has stopped delivering other nodes'
  // entries (harkd's main stops its coordination thread first), so from now on what waits for
  // one (a command whose entry another node took, an entry after a gap, anything behind a
  // stalled entry) fails with feature_unavailable instead of holding the broker's shutdown.
  void stop_waiting();

 private:
  enum class Round : uint8_t { apply, retire };
  enum class Phase : uint8_t { idle, journaling, rounds, settling, compacting };

  // Visits one shard for a round and comes back to shard 0.
  class RoundTask final : public io::Task {
   public:
    void run() override;
    Coordinator* coordinator = nullptr;
    ShardId target{};
    bool returning = false;
    Status result;
  };

  void start_next();
  // Fails every queued command and entry (stopping_, nothing can run).
  void refuse_queued();
  // The next thing to run: an adopted entry in order, else a local command unless one waits
  // for an entry another node took; null if neither.
  MetadataCommand* take_next();
  void run(MetadataCommand& command);
  // too_many_partitions (logged) if `next` holds more than BrokerOptions::partitions_max.
  Status check_partitions_max(const Catalog& next) const;
  void journaled(JournalResult result) override;
  void begin_round(Round round);
  void round_done(RoundTask& task);
  void complete();
  void finish_current(Status status);
  void journal_undo();
  void remove_orphan_directories();
  // Starts a compaction if one is due (and did not just fail); true if it started.
  bool compact();

  BrokerShard& shard_;
  MetadataJournal& journal_;
  Ref<const Catalog> catalog_;
  std::deque<MetadataCommand*> queue_;    // Local commands, in arrival order.
  std::deque<MetadataCommand*> entries_;  // Adopted entries, in arrival (= sequence) order.
  std::vector<RoundTask> tasks_;
  MetadataCommand* current_ = nullptr;
  Phase phase_ = Phase::idle;
  Change change_;
  std::vector<std::byte> records_;  // The current entry's, while the journal holds a view.
  uint64_t sequence_ = 0;           // The last entry journaled here.
  uint64_t waiting_for_ = 0;        // A local command waits until sequence_ reaches it.
  bool stalled_ = false;            // An adopted entry could not be applied: logged, stopped.
  bool stopping_ = false;           // stop_waiting() was called.
  Round round_ = Round::apply;
  uint32_t returned_ = 0;
  Status failure_;
  bool undoing_ = false;
  uint64_t compaction_failed_at_ = 0;  // The sequence a compaction last failed at.
};

}  // namespace hark::core::internal
