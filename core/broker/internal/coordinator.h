#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/internal/catalog.h"
#include "hark/core/broker/internal/metadata_log.h"
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
};

// Runs metadata commands one at a time on shard 0 (which owns the catalog): persists the
// change in the metadata log (write + fdatasync), then runs two rounds over every shard:
//   apply:  each shard takes the new catalog, opens the partitions it owns among `created`
//           and purges those among `purged`;
//   retire: (when partitions were removed) once no shard can reach them any more, each owner
//           aborts their parked polls as deleted, closes them and deletes their files.
// The command is answered after the last round, so any connection sees its effect next.
// If a shard fails to open a partition, the change is undone the same way (the old catalog
// applied, the new partitions retired, the opposite record journaled) and the command fails
// with that error.
class Coordinator final : private PersistDone {
 public:
  // `log` persists each change before it is applied; it must outlive the coordinator.
  Coordinator(BrokerShard& shard, Ref<const Catalog> catalog, MetadataLog& log);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Queues `command` (on shard 0).
  void enqueue(MetadataCommand& command);

 private:
  enum class Round : uint8_t { apply, retire };

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
  // too_many_partitions (logged) if `next` holds more than BrokerOptions::partitions_max.
  Status check_partitions_max(const Catalog& next) const;
  void persisted(Status status) override;
  void begin_round(Round round);
  void round_done(RoundTask& task);
  void complete();
  void journal_undo();
  void remove_orphan_directories();

  BrokerShard& shard_;
  MetadataLog& log_;
  Ref<const Catalog> catalog_;
  std::deque<MetadataCommand*> queue_;
  std::vector<RoundTask> tasks_;
  MetadataCommand* current_ = nullptr;
  Change change_;
  Round round_ = Round::apply;
  uint32_t returned_ = 0;
  Status failure_;
  bool undoing_ = false;
};

}  // namespace hark::core::internal
