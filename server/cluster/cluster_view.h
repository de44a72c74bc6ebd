#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/operation.h"
#include "hark/core/partition_key.h"

namespace hark::server::cluster {

// What a node registers under /hark/<cluster>/nodes/<id> (docs/cluster.md §Keys), as JSON:
// {"id":1,"client_address":"10.0.0.1:8090","link_address":"10.0.0.1:8091","shards":4}.
struct NodeInfo {
  uint32_t id = 0;
  std::string client_address;  // Advertised to clients (code 12).
  std::string link_address;    // Where its node links listen (node.link_address).
  uint32_t shards = 0;
  bool operator==(const NodeInfo&) const = default;
};

// An assignment, /hark/<cluster>/assignments/<stream>/<topic>/<partition> (docs/cluster.md
// §Keys): {"node":2,"epoch":1,"by":1,"replicas":[2,3,1],"isr":[2]}. `node` is the leader (the
// partition's owner, which every request is routed to), `epoch` grows with every change of who
// leads, `by` is the controller that wrote it (for operators and audits). `replicas` are the
// nodes that hold a copy, distinct, the first the preferred leader; `isr` the in-sync replicas,
// in replica order: a subset of `replicas` that holds the leader, the only nodes a new leader
// may come from. A value written before replicas existed (no "replicas", no "isr") reads as
// one replica, the leader, in sync.
struct Assignment {
  uint32_t node = 0;
  uint64_t epoch = 0;
  uint32_t by = 0;
  std::vector<uint32_t> replicas;
  std::vector<uint32_t> isr;
  bool operator==(const Assignment&) const = default;

  uint32_t leader() const { return node; }
  bool has_replica(uint32_t id) const;
  bool in_sync(uint32_t id) const;
  // The invariants above: replicas distinct and nonzero, node in isr, isr within replicas.
  bool well_formed() const;
  // Replication's member numbering (docs/cluster.md §Replication, The data path): the leader
  // is member 0, the other replicas follow in replica order. nullopt: not a replica.
  std::optional<uint32_t> member_of(uint32_t id) const;
  // `id`'s place in the replica set (core::ReplicaPlace): nullopt for a factor-1 partition or a
  // node outside its replicas. `set` hashes the members in that order (never 0).
  std::optional<core::ReplicaPlace> place_of(uint32_t id) const;
};

// Factor 1, placed on `node`: what an assignment was before replicas existed.
Assignment single_replica(uint32_t node, uint64_t epoch, uint32_t by);

// A planned move, /hark/<cluster>/moves/<stream>/<topic>/<partition> (docs/cluster.md §Moves):
// {"from":1,"to":2,"epoch":3,"ready":false,"by":1}. Written by the controller (planned, not
// ready), then by the new owner `to` (ready: it holds the partition durably up to where `from`
// stopped admitting sends at `epoch`); the controller then switches the assignment to
// (`to`, epoch + 1) and deletes the move in one guarded transaction.
struct Move {
  uint32_t from = 0;
  uint32_t to = 0;
  uint64_t epoch = 0;  // The assignment's epoch the move starts from.
  bool ready = false;
  uint32_t by = 0;
  bool operator==(const Move&) const = default;
};

std::string encode_node(const NodeInfo& node);
std::string encode_move(const Move& move);
std::optional<Move> decode_move(std::string_view json);
std::optional<NodeInfo> decode_node(std::string_view json);
std::string encode_assignment(const Assignment& assignment);
// nullopt for a value that is not an assignment or breaks Assignment::well_formed.
std::optional<Assignment> decode_assignment(std::string_view json);

// The value of partitions/<stream>/<topic>/<partition>, the request for a partition to be
// placed: {"replication_factor":3}. An empty value (written before replication factors were
// kept) asks for one replica. nullopt: not a request (hostile or foreign), read as factor 1 by
// the controller.
std::string encode_partition_request(uint32_t replication_factor);
std::optional<uint32_t> decode_partition_request(std::string_view value);

// The replication factor a topic created in cluster mode gets (docs/cluster.md §Replication
// factor): `requested` (0: the client named none) raised to `minimum`, the raise capped at the
// `live` nodes; a request above `live` is refused with invalid_replication_factor (2018), as
// Kafka refuses a factor above its broker count. `capped` says the minimum was not reached.
struct EffectiveFactor {
  uint8_t factor = 1;
  bool capped = false;
};
Result<EffectiveFactor> effective_replication_factor(uint8_t requested, uint8_t minimum,
                                                     size_t live);

// The key layout, all under /hark/<cluster>/.
struct Keys {
  explicit Keys(std::string_view cluster);
  std::string root;           // "/hark/<cluster>/"
  std::string nodes;          // root + "nodes/"
  std::string controller;     // root + "controller"
  std::string partitions;     // root + "partitions/": partitions that want an owner
  std::string assignments;    // root + "assignments/"
  std::string meta;           // root + "meta/": the metadata journal, meta/<n, 20 digits>
  std::string meta_snapshot;  // root + "meta/snapshot": the catalog at entry n (trimming)
  std::string applied;        // root + "applied/": applied/<node> = the last entry it applied
  std::string moves;          // root + "moves/": moves/<s>/<t>/<p> = a Move in progress
  std::string drains;         // root + "drain/": drain/<node> asks to move every partition off it
  std::string node(uint32_t id) const;
  std::string meta_entry(uint64_t sequence) const;
  std::string applied_by(uint32_t node) const;
  std::string partition(const core::PartitionKey& key) const;
  std::string assignment(const core::PartitionKey& key) const;
  std::string move(const core::PartitionKey& key) const;
  std::string drain(uint32_t node) const;
};
// "<stream>/<topic>/<partition>" after a partitions/ or assignments/ prefix; nullopt if not.
std::optional<core::PartitionKey> parse_partition_suffix(std::string_view suffix);

// Client ids in cluster mode carry their node's id in the top 8 bits (node ids 1..255), so the
// members of consumer groups, journaled for every node, are unique in the cluster and a node's
// members can be removed when it is gone (docs/cluster.md §Consumer groups). Node 0 (one node)
// keeps the plain counter. The counter wraps after 2^24 clients of one process.
inline constexpr uint32_t node_id_max = 255;
inline constexpr uint32_t client_id_of(uint32_t node, uint32_t counter) {
  return node == 0 ? counter : (node << 24) | (counter & 0xFFFFFFu);
}
inline constexpr uint32_t first_client_id(uint32_t node) { return node << 24; }
inline constexpr uint32_t last_client_id(uint32_t node) { return (node << 24) | 0xFFFFFFu; }

// Where a partition lives, as a node sees the cluster.
struct PartitionOwner {
  enum class Kind : uint8_t { node, unavailable, unassigned };
  Kind kind = Kind::unassigned;
  Assignment assignment;  // For node and unavailable (its node is not live).
};

// One immutable, versioned picture of the cluster as this node last read it from etcd: the
// live nodes (those whose lease holds their key), the controller and the assignments. The
// coordination thread builds a new one on every change and hands it to every shard through
// its Inbox (Server::publish_cluster_view); a shard reads its own copy without any lock.
struct ClusterView final : RefCounted {
  uint64_t version = 0;         // Grows with every view this node publishes.
  int64_t revision = 0;         // The etcd revision it reflects.
  uint32_t self = 0;            // This node's id.
  bool registered = false;      // This node's key is in `nodes`.
  uint32_t controller = 0;      // 0: none elected.
  std::vector<NodeInfo> nodes;  // Live, by id.
  std::map<core::PartitionKey, Assignment> assignments;
  std::map<core::PartitionKey, Move> moves;  // In progress.
  std::vector<uint32_t> draining;            // Nodes asked to give up their partitions, by id.

  const NodeInfo* node(uint32_t id) const;
  bool is_draining(uint32_t id) const;
  PartitionOwner owner(const core::PartitionKey& key) const;
  std::optional<Move> move_of(const core::PartitionKey& key) const;
};

// What an entry node does with a request that no node ran (docs/cluster.md §Moves): the node it
// was sent to (`refused_by`; this node itself for a local request) answered that it does not
// host the partition (its assignment moved, or it has not opened it yet), or no node was asked
// because `view` names no live owner (`refused_by` 0). One decision for every routed request,
// local or forwarded, one-partition or a group member's leg:
//   now:     `view` names a live owner other than `refused_by`: route it there. A request that
//            does not wait (a send, an offset) is routed again at most `reroutes_max` times:
//            it never ran, so sending it on cannot apply it twice (§Exactly once).
//   wait:    a poll or notification (`waits`) whose view names nobody new yet: it waits for a
//            newer view (or a retry, bounded by its deadline), never answers an error.
//   give_up: a request that does not wait: the retryable 11001.
enum class Reroute : uint8_t { now, wait, give_up };
inline constexpr uint32_t reroutes_max = 1;
Reroute reroute(const ClusterView& view, const core::PartitionKey& key, uint32_t refused_by,
                bool waits, uint32_t reroutes);
// Whether this node reaches etcd, as the coordination thread last found it (its steps), for
// /metrics (docs/operations.md §Metrics). Written by that thread, read at a scrape; relaxed.
struct EtcdHealth {
  std::atomic<bool> ok{false};               // The last step succeeded.
  std::atomic<uint64_t> failures_in_row{0};  // Steps failed since the last that succeeded.
  std::atomic<uint64_t> failures{0};         // Steps failed since the start.
  void stepped(bool succeeded) {
    ok.store(succeeded, std::memory_order_relaxed);
    if (succeeded) {
      failures_in_row.store(0, std::memory_order_relaxed);
    } else {
      failures_in_row.fetch_add(1, std::memory_order_relaxed);
      failures.fetch_add(1, std::memory_order_relaxed);
    }
  }
};

// Where the coordination thread hands each new view (harkd: the Server, which posts it to every
// shard's Inbox). Called on the coordination thread.
class ViewSink {
 public:
  virtual void publish_cluster_view(Ref<const ClusterView> view) = 0;

 protected:
  ~ViewSink() = default;
};

}  // namespace hark::server::cluster
