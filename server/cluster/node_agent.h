#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/partition_key.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/coordinator.h"
#include "hark/server/cluster/prefix_mirror.h"

namespace hark::server::cluster {

struct AgentOptions {
  std::string cluster = "hark";
  NodeInfo self;
  int64_t lease_ttl_seconds = 5;  // Kept alive every TTL/3.
  // How long a replica's node may be gone before the controller replaces it
  // (cluster.replica_replace_after; counted from when this controller first saw it gone).
  Duration replica_replace_after = std::chrono::minutes(5);
};

// What a node does in the cluster, as a state machine over a Coordinator, one step() at a
// time (docs/cluster.md §How it works):
//  - membership: holds a lease and, attached to it, its key nodes/<id> (NodeInfo as JSON),
//    renewed every TTL/3; a lease found expired is replaced and the key put again;
//  - election: when the controller key is absent it campaigns with a transaction
//    `create_revision(controller) == 0 → put(controller, id, lease)`; the controller is the
//    holder of that key, which goes with its lease;
//  - as controller: places every partition under partitions/ that has no assignment on as
//    many live, not draining nodes as its replication factor, by load (replicas.h), epoch 1;
//    for a factor-1 partition plans moves (on request, and for every partition of a draining
//    node) and commits each at epoch + 1 once its target reports it ready, or abandons it when
//    its source or target dies (docs/cluster.md §Moves); for a replicated one, moves its
//    leadership to a live in-sync replica when its leader dies or drains (epoch + 1), drops
//    dead nodes from its ISR and replaces replicas gone past the grace or draining
//    (decide_replicas, docs/cluster.md §Replication). Every
//    controller write is a transaction guarded on `value(controller) == my id` and
//    `create_revision(controller) == my campaign's revision`, and on the target node's key
//    existing, so a deposed controller or a dead target makes it fail, never half-apply;
//  - the view: everything under /hark/<cluster>/, mirrored by a watch (PrefixMirror), turned
//    into an immutable ClusterView whenever it changes.
// Used by one thread (the coordination thread, or a test). Errors are the Coordinator's: a
// step that fails leaves the state as it was and the next step retries.
class NodeAgent {
 public:
  NodeAgent(Coordinator& coordinator, const Clock& clock, AgentOptions options);

  // One round: lease, registration, mirror, election, controller duties. `wait` bounds the
  // watch for changes (0 with the fake).
  Status step(Duration wait);
  // Gives the lease back (its keys go with it), so the others see this node leave at once.
  Status leave();

  // Asks for a partition to be placed with `replication_factor` replicas (any node; the
  // controller places it). harkd asks through the metadata journal (etcd_journal.h).
  Status request_partition(const core::PartitionKey& key, uint32_t replication_factor = 1);
  // Controller only: plans moving `key` to `node` (docs/cluster.md §Moves): writes moves/<key>
  // {from its owner, at its epoch, not ready}. The assignment changes only once `node` reports
  // the move ready (report_move_ready) and a controller step commits it. false: refused (not
  // the controller any more, the partition changed meanwhile or already moves, `node` is not
  // live or already owns it).
  Result<bool> move_partition(const core::PartitionKey& key, uint32_t node);
  // Any node (and tools/cluster.sh drain): asks the controller to move every partition off
  // `node` and to assign it no new one (puts drain/<node>; deleting the key ends the drain).
  Status request_drain(uint32_t node);
  // The target of a planned move, once it holds the partition durably up to where the old owner
  // stopped admitting sends: marks the move ready. false: no such move for this node, or it
  // changed meanwhile (abandoned, or this node is not registered).
  Result<bool> report_move_ready(const core::PartitionKey& key);
  // The leader of `key` at `epoch` (this node) sets its in-sync replicas (docs/cluster.md
  // §Replication): shrinks them when a follower falls behind, expands them when one caught up.
  // `isr` must hold this node and only replicas. One transaction guarded on the assignment's
  // mod_revision as this node read it, leading at `epoch`: applied; deposed (the assignment
  // names another leader or epoch, in the mirror or in etcd: the change is rejected for good);
  // stale (the assignment changed at the same epoch, e.g. the controller dropped a dead node
  // from the ISR: step, then ask again). invalid_format for an `isr` that breaks the rules.
  enum class IsrChange : uint8_t { applied, deposed, stale };
  Result<IsrChange> change_isr(const core::PartitionKey& key, uint64_t epoch,
                               std::vector<uint32_t> isr);
  uint64_t moves_committed() const { return moves_committed_; }
  uint64_t leader_changes() const { return leader_changes_; }
  uint64_t replica_set_changes() const { return replica_set_changes_; }
  uint64_t moves_abandoned() const { return moves_abandoned_; }
  // Controller only: `ops` guarded on this node's leadership (and `extra`). false: refused,
  // and this node knows it is no longer the controller.
  Result<bool> controller_txn(std::vector<Compare> extra, std::vector<TxnOp> ops);

  bool is_controller() const { return campaign_revision_ != 0; }
  int64_t campaign_revision() const { return campaign_revision_; }
  int64_t lease() const { return lease_; }
  // The latest view (never null after the first successful step).
  Ref<const ClusterView> view() const { return view_; }
  uint64_t controller_writes_rejected() const { return rejected_; }
  uint64_t elections_won() const { return elections_won_; }
  // Every key under /hark/<cluster>/ as of the last step (the metadata journal reads it).
  const PrefixMirror& mirror() const { return mirror_; }
  // This node's own write (PrefixMirror::apply_own): keeps the next watch current.
  void written(const std::vector<TxnOp>& ops, int64_t revision) {
    (void)mirror_.apply_own(ops, revision);
  }
  const Keys& keys() const { return keys_; }

 private:
  Status ensure_lease();
  Status campaign();
  Status assign_unassigned();
  // Controller duties for moves: commit the ready ones (assignment to epoch + 1 and the move
  // deleted, in one transaction guarded on both keys and the target's liveness), abandon those
  // whose source or target is gone or whose assignment changed (the old assignment stays).
  Status advance_moves();
  Status commit_move(const core::PartitionKey& key, const Move& move);
  Status abandon_move(const core::PartitionKey& key, const char* why);
  // A move for every partition of a draining node that has none, to the least loaded live node
  // that is not draining.
  Status plan_drains();
  // Controller duties for replicated partitions: decide_replicas on every assignment whose
  // partition is asked for, each change written by write_replicas.
  Status reconcile_replicas();
  Status write_replicas(const core::PartitionKey& key, const Assignment& current, Assignment next);
  // When each replica's node was first seen gone by this controller; the nodes gone longer
  // than the grace.
  std::set<uint32_t> track_gone();
  // The replication factor partitions/<key> asks for (1 if unreadable); 0 if it is not asked
  // for (deleted: its assignment is a tombstone).
  uint32_t factor_of(const core::PartitionKey& key) const;
  const KeyValue* find(const std::string& key) const;
  void follow_controller_key();
  bool publish_view();
  std::vector<Compare> leadership() const;

  Coordinator& coordinator_;
  const Clock& clock_;
  AgentOptions options_;
  Keys keys_;
  PrefixMirror mirror_;
  int64_t lease_ = 0;
  Instant next_keep_alive_{};
  bool registered_ = false;
  int64_t campaign_revision_ = 0;  // Nonzero while this node believes it is the controller.
  Ref<const ClusterView> view_;
  uint64_t rejected_ = 0;
  uint64_t elections_won_ = 0;
  uint64_t moves_committed_ = 0;
  uint64_t moves_abandoned_ = 0;
  uint64_t leader_changes_ = 0;
  uint64_t replica_set_changes_ = 0;
  std::map<uint32_t, Instant> gone_since_;    // Controller only.
  std::set<core::PartitionKey> unavailable_;  // Logged as having no live in-sync replica.
};

}  // namespace hark::server::cluster
