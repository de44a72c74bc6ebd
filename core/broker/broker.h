#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/core/broker/metadata_journal.h"
#include "hark/core/broker/operations.h"
#include "hark/core/ownership_map.h"
#include "hark/core/wait/wait_shard.h"
#include "hark/io/reactor.h"
#include "hark/io/shard_group.h"
#include "hark/storage/log_options.h"

namespace hark::core {

namespace internal {
class BrokerShard;
class ConditionRegistry;
class MetadataLog;
struct Catalog;
}  // namespace internal

// What an embedder (harkd's server is one) runs on every shard next to the broker: listeners,
// connections. Called on the shard's own thread, after the broker's own setup (on_start) and
// before its teardown (on_stop, on_abort, on_drained), as io::ShardSetup describes.
class ShardHooks {
 public:
  // `broker` is usable from here on (operations may be submitted before Broker::start returns).
  virtual Status on_start(Broker& broker, io::Reactor& reactor) = 0;
  virtual void on_stop(io::Reactor& reactor) = 0;
  // Cancel what is still open (Broker::cancel still completes: every shard runs its tasks
  // until no shard is busy, the broker counting the operations it holds for each shard as
  // busy, for at most io::ShardGroup::drain_timeout).
  virtual void on_abort(io::Reactor& reactor) { (void)reactor; }
  // The embedder still waits for something of its own on this shard (the kernel's last
  // completions).
  virtual bool busy(io::Reactor& reactor) {
    (void)reactor;
    return false;
  }
  // No task runs any more. Operations still in flight here (operations_in_flight(), after
  // drain_timeout) must be left, not freed.
  virtual void on_drained(io::Reactor& reactor) { (void)reactor; }

 protected:
  ~ShardHooks() = default;
};

// File descriptors one open partition holds at most: its directory lock, its consumer offsets,
// the active segment's .log and .index, the segment sealed last until it is settled (its two
// files; closed at the next roll or retention pass) and one sealed .log kept for disk reads
// (storage/partition_log.h). For an embedder's open-file budget (BrokerOptions::partitions_max).
inline constexpr uint32_t files_per_partition = 7;

// The default of BrokerOptions::stats_step_max. A shard reads its ring (its clients' requests)
// between at most io::Reactor::passes_max (4) steps, and a partition costs a scrape about 1 µs,
// so steps of 64 keep a request's wait behind a scrape under about half a millisecond however
// many partitions the shard owns (256: about 1 ms; docs/bench.md §Metrics), while a step
// still does enough to make its re-post (one Inbox push) negligible.
inline constexpr uint32_t stats_step_default = 64;

struct BrokerOptions {
  // Partitions live in <data_directory>/streams/<s>/topics/<t>/partitions/<p>.
  std::string data_directory = "data";
  uint32_t shards_count = 1;
  // A poll's wait is clamped to this (docs/long-polling.md §Limits: a clamp, not an error).
  Duration max_wait = std::chrono::seconds(30);
  // Parked polls: per shard (and registrations per shard) ...
  WaitShardOptions waits;
  // ... and across all shards. Full: the poll fails with feature_unavailable (5).
  uint64_t parked_total_max = 100'000;
  // Most bytes one poll returns (at least one message is returned whatever its size).
  uint64_t poll_bytes_max = 16 << 20;
  // Partitions in all: a create that would pass it fails with
  // too_many_partitions (2015) and a log line, so the partitions always fit the open-file
  // budget it was derived from. Partitions already in the data directory always open.
  uint32_t partitions_max = UINT32_MAX;
  // Settings of every partition log; `directory` is filled in per partition.
  storage::LogOptions log;
  // How often owners apply retention to their partitions.
  Duration retention_interval = std::chrono::seconds(10);
  // GetStats (the stats line, get_stats, /metrics) walks the partitions a shard owns in steps
  // of at most this many partitions and stored offsets, each step a task queued behind the
  // shard's other work, so a scrape never holds a shard for more than one step (0 counts as 1).
  uint32_t stats_step_max = stats_step_default;
  io::ReactorOptions reactor;
  ShardHooks* hooks = nullptr;  // Optional; must outlive the broker.
  // Where metadata is journaled (core/broker/metadata_journal.h). Null: <data>/metadata.log
  // alone (one node). Set (harkd's cluster mode): makes, from that log (the local copy) and
  // the last entry it holds, the journal shard 0 uses. Must outlive Broker::start.
  JournalFactory* journal = nullptr;
  // Which partitions of the catalog the broker opens. false (one node): every one. true (a
  // cluster node): only those the embedder names with Broker::host; the others are metadata
  // only, and a request that reaches one here fails with shard_communication_error (11001).
  bool hosted_only = false;
  // metadata.log is rewritten as one snapshot of the catalog once it holds more than this many
  // entries past its last snapshot (docs/storage-format.md §Metadata log); 0: never.
  uint64_t metadata_snapshot_entries = 10'000;
  // Told of the extension records of the metadata journal (metadata_journal.h); optional,
  // must outlive the broker.
  JournalExtensions* extensions = nullptr;
  // Conditions registered before the shards start (Broker::register_condition); each must
  // outlive the broker.
  std::vector<std::pair<std::string, const Condition*>> conditions;
};

// hark's broker core: N shards (thread-per-core), each owning the partitions the ownership
// map gives it; streams, topics and partitions as a catalog owned by shard 0 and copied to
// every shard; appends, polls with wait, stored offsets. docs/embedding.md shows how to use it.
//
// Every method may be called from any thread; none blocks a shard. Work is submitted as
// Operations (operations.h), answered on their home shard.
class Broker {
 public:
  // Starts the shards and their hooks. Errors: invalid_configuration (no shards), a hook's
  // error, ring or directory errors.
  static Result<std::unique_ptr<Broker>> start(const BrokerOptions& options);
  // Before start, blocking (a cluster node that was away while the shared journal was trimmed,
  // docs/cluster.md §Metadata): the last journal entry <data_directory>/metadata.log holds (0
  // without one), and replacing that file by `snapshot` (one framed snapshot record,
  // docs/storage-format.md §Metadata log; state_file_corrupted if it is not one). start then
  // replays the snapshot and removes the partition directories it no longer lists.
  static Result<uint64_t> journaled_sequence(const std::string& data_directory);
  static Status adopt_snapshot(const std::string& data_directory,
                               std::span<const std::byte> snapshot);
  // Stops if needed.
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Any thread. Runs `op`; its done() is called once on its home shard (operations.h).
  void submit(Operation& op);
  // On the poll's home shard only: the poll's client went away. A parked poll is cancelled in
  // O(1); either way done() follows with Error::disconnected unless the poll already ended.
  void cancel(Poll& poll);
  // The same for a Notify (notify_operations.h).
  void cancel(Notify& notify);

  // Any thread, before or after start: makes `condition` available to Notify requests under
  // `name` (docs/notifications.md). invalid_configuration (2) for an empty name, one over 255
  // bytes, or one already registered (the built-ins hark.messages and hark.lag are). The
  // condition must outlive the broker.
  Status register_condition(std::string_view name, const Condition& condition);
  // Any thread: the condition registered under `name`, or null.
  const Condition* find_condition(std::string_view name) const;

  // The ids a stream (and a topic of it) have in the calling shard's catalog now, or Iggy's
  // not-found error (1009/1010, 2010/2011). On a shard of this broker only. For an embedding
  // application's access checks (harkd's permissions): an operation submitted from the same
  // shard right after runs its first step against this same catalog (submit() runs it
  // inline), so what was checked is what it acts on; a MetadataCommand is applied by shard
  // 0, so name it by the ids returned here.
  struct ResolvedIds {
    uint32_t stream = 0;
    std::optional<uint32_t> topic;
  };
  Result<ResolvedIds> resolve(const NameOrId& stream, const NameOrId* topic) const;
  // The settings of a topic in the calling shard's catalog now (harkd in cluster mode keeps a
  // topic's replication factor on UpdateTopic). Errors as resolve's. On a shard of this broker
  // only.
  Result<TopicSettings> topic_settings(const NameOrId& stream, const NameOrId& topic) const;
  // The partition an append with `partitioning` would go to if submitted from the calling
  // shard now (balanced takes this shard's next turn), by the rule Append uses: for a cluster
  // entry node, which resolves a send before forwarding it. On a shard of this broker only.
  // Errors: not found (1009/1010, 2010/2011), no_partitions (3008), partition_not_found (3007).
  Result<uint32_t> pick_partition(const NameOrId& stream, const NameOrId& topic,
                                  const Partitioning& partitioning) const;
  // The partitions the calling shard's catalog deals to group member `member` now, into
  // `partitions` (cleared first; its capacity is reused): for a cluster entry node, which spreads
  // a member's poll over the partitions' owners. Errors: not found (1009/1010, 2010/2011,
  // 5000/5003), consumer_group_member_not_found (5006). On a shard of this broker only.
  Status member_partitions(const NameOrId& stream, const NameOrId& topic, const NameOrId& group,
                           uint32_t member, std::vector<uint32_t>& partitions) const;
  // Every partition id of the topic in the calling shard's catalog now, into `partitions`
  // (cleared first): what a consumer's notification without a partition watches, for a cluster
  // entry node which spreads it over the partitions' owners. Errors: not found (1009/1010,
  // 2010/2011). On a shard of this broker only.
  Status topic_partitions(const NameOrId& stream, const NameOrId& topic,
                          std::vector<uint32_t>& partitions) const;

  // The figures of every partition of the calling shard's catalog now, of one stream when
  // `stream` is set, of one topic of it when `topic` is too, in key order, into `out` (cleared
  // first): for a cluster node, which sums what the owners of a stream's partitions report
  // (docs/cluster.md §Figures). On a shard of this broker only. Control plane: walks the
  // catalog.
  void partition_figures(std::optional<uint32_t> stream, std::optional<uint32_t> topic,
                         std::vector<PartitionFigures>& out) const;

  // With BrokerOptions::hosted_only, on a shard of this broker only: this shard hosts exactly
  // the partitions `keys` names from now on (a cluster node: those assigned to it). It opens
  // the ones of its catalog it owns and has not opened, closes the ones it has that `keys` no
  // longer names (their parked polls end with AbortReason::moved; their files stay), and
  // opens partitions that later catalog changes create only if `keys` names them. Errors: the
  // first open that failed (each is logged); the others are still done.
  // `moving`: the hosted partitions a move is taking to another node (docs/cluster.md §Moves):
  // a move's fence (FencePartition) stays only on those; any other fenced partition has its
  // fence lifted and the appends it held run (the move was abandoned).
  // `places`: the replicated partitions among `keys` take their place (Partition::replicate,
  // Replicate) as they open or at once if open: a leader never commits, a follower never takes
  // a send, outside the place the view gives it. Those not named keep theirs (a factor-1
  // partition leads a set of one).
  Status host(std::span<const PartitionKey> keys, std::span<const PartitionKey> moving = {},
              std::span<const HostedPlace> places = {});

  // Answers every parked poll empty, refuses new waits (polls answer at once), stops the hooks
  // and the shards, writes out every partition and closes it. Idempotent; not from a shard.
  void stop();

  // On a shard of this broker: the operations submitted on it (and, on shard 0, from outside)
  // whose done() has not run yet. Shutdown waits for them (ShardHooks::on_abort).
  size_t operations_in_flight() const;

  uint32_t shards_count() const { return options_.shards_count; }
  const BrokerOptions& options() const { return options_; }
  // Where shard 0 journals metadata: the shared journal if options().journal made one.
  MetadataJournal& journal();
  // The broker shard the calling thread runs, or nullopt outside the broker's threads.
  static std::optional<ShardId> current_shard();

 private:
  friend class internal::BrokerShard;
  class Setup;
  class ShutdownTask;

  explicit Broker(const BrokerOptions& options);

  BrokerOptions options_;
  OwnershipMap ownership_;
  Ref<const internal::Catalog> initial_catalog_;
  std::unique_ptr<internal::MetadataLog> metadata_log_;
  std::unique_ptr<MetadataJournal> shared_journal_;  // Cluster mode: wraps metadata_log_.
  std::unique_ptr<internal::ConditionRegistry> conditions_;
  std::unique_ptr<Setup> setup_;
  std::vector<internal::BrokerShard*> shards_;  // Set on each shard thread at start.
  std::unique_ptr<io::ShardGroup> group_;
  std::atomic<uint64_t> parked_total_{0};
  std::atomic<bool> stopped_{false};  // Read by submit() on any thread.
};

}  // namespace hark::core
