#include "hark/server/cluster/node_agent.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>

#include "hark/core/base/log.h"
#include "hark/server/cluster/replicas.h"

namespace hark::server::cluster {
namespace {

Compare number_compare(std::string key, Compare::Target target, Compare::Op op, int64_t number) {
  return {.key = std::move(key), .target = target, .op = op, .number = number};
}

}  // namespace

NodeAgent::NodeAgent(Coordinator& coordinator, const Clock& clock, AgentOptions options)
    : coordinator_(coordinator),
      clock_(clock),
      options_(std::move(options)),
      keys_(options_.cluster),
      mirror_(keys_.root) {}

// The lease first (a fresh one after it expired), then this node's key on it.
Status NodeAgent::ensure_lease() {
  const Instant now = clock_.monotonic_now();
  const Duration ttl = std::chrono::seconds(options_.lease_ttl_seconds);
  if (lease_ != 0 && now >= next_keep_alive_) {
    const Result<int64_t> renewed = coordinator_.lease_keep_alive(lease_);
    if (renewed.ok()) {
      next_keep_alive_ = now + ttl / 3;
    } else if (renewed.error() == Error::resource_not_found) {
      HARK_LOG_WARN("cluster: node %u lost its lease %d (expired); registering again",
                    options_.self.id, lease_);
      lease_ = 0;
      campaign_revision_ = 0;
    } else {
      return renewed.error();
    }
  }
  if (lease_ == 0) {
    HARK_TRY_ASSIGN(Lease lease, coordinator_.lease_grant(options_.lease_ttl_seconds));
    lease_ = lease.id;
    registered_ = false;
    next_keep_alive_ = now + ttl / 3;
  }
  if (!registered_) {
    HARK_TRY(coordinator_.put(keys_.node(options_.self.id), encode_node(options_.self), lease_));
    registered_ = true;
    HARK_LOG_INFO("cluster: node %u registered (lease %d, ttl %ds)", options_.self.id, lease_,
                  options_.lease_ttl_seconds);
  }
  return ok_status();
}

Status NodeAgent::campaign() {
  Txn txn;
  txn.compare.push_back(
      number_compare(keys_.controller, Compare::Target::create_revision, Compare::Op::equal, 0));
  txn.success.push_back(TxnOp::put(keys_.controller, std::to_string(options_.self.id), lease_));
  HARK_TRY_ASSIGN(TxnResult result, coordinator_.txn(txn));
  if (result.succeeded) {
    campaign_revision_ = result.revision;
    elections_won_++;
    HARK_LOG_INFO("cluster: node %u elected controller at revision %d", options_.self.id,
                  campaign_revision_);
  }
  return ok_status();
}

// The mirror says who holds the controller key: a node that believed it did and reads
// otherwise (once the mirror has caught up with its campaign) steps down.
void NodeAgent::follow_controller_key() {
  if (!is_controller() || mirror_.revision() < campaign_revision_) return;
  const auto found = mirror_.entries().find(keys_.controller);
  const bool mine = found != mirror_.entries().end() &&
                    found->second.value == std::to_string(options_.self.id) &&
                    found->second.create_revision == campaign_revision_;
  if (!mine) {
    HARK_LOG_WARN("cluster: node %u is no longer the controller", options_.self.id);
    campaign_revision_ = 0;
  }
}

std::vector<Compare> NodeAgent::leadership() const {
  return {{.key = keys_.controller,
           .target = Compare::Target::value,
           .op = Compare::Op::equal,
           .value = std::to_string(options_.self.id)},
          number_compare(keys_.controller, Compare::Target::create_revision, Compare::Op::equal,
                         campaign_revision_)};
}

Result<bool> NodeAgent::controller_txn(std::vector<Compare> extra, std::vector<TxnOp> ops) {
  if (!is_controller()) return false;
  Txn txn;
  txn.compare = leadership();
  for (Compare& compare : extra) txn.compare.push_back(std::move(compare));
  txn.success = std::move(ops);
  txn.failure.push_back(TxnOp::range(keys_.controller));
  HARK_TRY_ASSIGN(TxnResult result, coordinator_.txn(txn));
  if (result.succeeded) return true;
  const std::vector<KeyValue>& holder = result.ranges.at(0).kvs;
  const bool still_mine = !holder.empty() && holder[0].value == std::to_string(options_.self.id) &&
                          holder[0].create_revision == campaign_revision_;
  if (!still_mine) {
    rejected_++;
    campaign_revision_ = 0;
    HARK_LOG_WARN("cluster: node %u's controller write was rejected: another node leads",
                  options_.self.id);
  }
  return false;
}

const KeyValue* NodeAgent::find(const std::string& key) const {
  const auto found = mirror_.entries().find(key);
  return found == mirror_.entries().end() ? nullptr : &found->second;
}

uint32_t NodeAgent::factor_of(const core::PartitionKey& key) const {
  const KeyValue* const request = find(keys_.partition(key));
  if (request == nullptr) return 0;
  return decode_partition_request(request->value).value_or(1);
}

namespace {

std::string partition_name(const core::PartitionKey& key) {
  return std::to_string(key.stream.value()) + "/" + std::to_string(key.topic.value()) + "/" +
         std::to_string(key.partition.value());
}

std::string node_list(const std::vector<uint32_t>& nodes) {
  std::string out;
  for (const uint32_t id : nodes) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

}  // namespace

// Partitions that want an owner get their replicas on the live, not draining nodes with the
// fewest (place_replicas), in a transaction that also requires every one of them live.
Status NodeAgent::assign_unassigned() {
  if (!is_controller() || !view_) return ok_status();
  Loads loads = loads_of(*view_);
  for (const auto& [name, kv] : mirror_.entries()) {
    if (!name.starts_with(keys_.partitions)) continue;
    const auto key = parse_partition_suffix(std::string_view(name).substr(keys_.partitions.size()));
    if (!key || view_->assignments.contains(*key)) continue;
    const uint32_t factor = decode_partition_request(kv.value).value_or(1);
    std::optional<Assignment> placed = place_replicas(factor, loads, options_.self.id);
    if (!placed) return ok_status();  // No live node.
    const std::string assignment_key = keys_.assignment(*key);
    std::vector<Compare> extra = {
        number_compare(assignment_key, Compare::Target::create_revision, Compare::Op::equal, 0)};
    for (const uint32_t id : placed->replicas) {
      extra.push_back(number_compare(keys_.node(id), Compare::Target::create_revision,
                                     Compare::Op::greater, 0));
    }
    if (placed->replicas.size() < factor) {
      HARK_LOG_WARN(
          "cluster: partition %s placed on %u of its %u replicas (%s): not enough live "
          "nodes; the controller adds the others as nodes join",
          partition_name(*key), placed->replicas.size(), factor, node_list(placed->replicas));
    }
    std::vector<TxnOp> ops = {TxnOp::put(assignment_key, encode_assignment(*placed))};
    HARK_TRY_ASSIGN(bool written, controller_txn(std::move(extra), std::move(ops)));
    if (!written) return ok_status();  // The next step re-reads and tries again.
  }
  return ok_status();
}

Result<bool> NodeAgent::move_partition(const core::PartitionKey& key, uint32_t node) {
  const std::string assignment_key = keys_.assignment(key);
  const KeyValue* const found = find(assignment_key);
  if (found == nullptr) return false;
  const std::optional<Assignment> current = decode_assignment(found->value);
  if (!current || current->node == node) return false;
  if (current->replicas.size() > 1 || factor_of(key) > 1) {
    HARK_LOG_WARN(
        "cluster: no move of %s: it is replicated (factor %u); its replicas move by "
        "the replica rules (docs/cluster.md §Replication)",
        partition_name(key), factor_of(key));
    return false;
  }
  const std::string move_key = keys_.move(key);
  std::vector<Compare> extra = {
      number_compare(assignment_key, Compare::Target::mod_revision, Compare::Op::equal,
                     found->mod_revision),
      number_compare(move_key, Compare::Target::create_revision, Compare::Op::equal, 0),
      number_compare(keys_.node(node), Compare::Target::create_revision, Compare::Op::greater, 0)};
  const Move move{
      .from = current->node, .to = node, .epoch = current->epoch, .by = options_.self.id};
  HARK_TRY_ASSIGN(const bool written,
                  controller_txn(std::move(extra), {TxnOp::put(move_key, encode_move(move))}));
  if (written) {
    HARK_LOG_INFO("cluster: move of %u/%u/%u planned: node %u -> %u (epoch %u)", key.stream.value(),
                  key.topic.value(), key.partition.value(), move.from, node, move.epoch);
  }
  return written;
}

Status NodeAgent::request_drain(uint32_t node) {
  HARK_TRY(coordinator_.put(keys_.drain(node), "", 0));
  return ok_status();
}

Result<bool> NodeAgent::report_move_ready(const core::PartitionKey& key) {
  const std::string move_key = keys_.move(key);
  const KeyValue* const found = find(move_key);
  if (found == nullptr) return false;
  std::optional<Move> move = decode_move(found->value);
  if (!move || move->to != options_.self.id || move->ready) return false;
  move->ready = true;
  Txn txn;
  txn.compare = {number_compare(move_key, Compare::Target::mod_revision, Compare::Op::equal,
                                found->mod_revision),
                 number_compare(keys_.node(options_.self.id), Compare::Target::create_revision,
                                Compare::Op::greater, 0)};
  txn.success = {TxnOp::put(move_key, encode_move(*move))};
  HARK_TRY_ASSIGN(const TxnResult result, coordinator_.txn(txn));
  return result.succeeded;
}

Status NodeAgent::commit_move(const core::PartitionKey& key, const Move& move) {
  const std::string assignment_key = keys_.assignment(key);
  const std::string move_key = keys_.move(key);
  const KeyValue* const assignment = find(assignment_key);
  const KeyValue* const planned = find(move_key);
  if (assignment == nullptr || planned == nullptr) return ok_status();
  std::vector<Compare> extra = {
      number_compare(assignment_key, Compare::Target::mod_revision, Compare::Op::equal,
                     assignment->mod_revision),
      number_compare(move_key, Compare::Target::mod_revision, Compare::Op::equal,
                     planned->mod_revision),
      number_compare(keys_.node(move.to), Compare::Target::create_revision, Compare::Op::greater,
                     0)};
  const Assignment next = single_replica(move.to, move.epoch + 1, options_.self.id);
  std::vector<TxnOp> ops = {TxnOp::put(assignment_key, encode_assignment(next)),
                            TxnOp::erase(move_key)};
  HARK_TRY_ASSIGN(const bool written, controller_txn(std::move(extra), std::move(ops)));
  if (written) {
    moves_committed_++;
    HARK_LOG_INFO("cluster: move of %u/%u/%u committed: node %u owns it at epoch %u",
                  key.stream.value(), key.topic.value(), key.partition.value(), next.node,
                  next.epoch);
  }
  return ok_status();
}

Status NodeAgent::abandon_move(const core::PartitionKey& key, const char* why) {
  const std::string move_key = keys_.move(key);
  const KeyValue* const planned = find(move_key);
  if (planned == nullptr) return ok_status();
  std::vector<Compare> extra = {number_compare(move_key, Compare::Target::mod_revision,
                                               Compare::Op::equal, planned->mod_revision)};
  HARK_TRY_ASSIGN(const bool written, controller_txn(std::move(extra), {TxnOp::erase(move_key)}));
  if (written) {
    moves_abandoned_++;
    HARK_LOG_WARN("cluster: move of %u/%u/%u abandoned (%s); its assignment stays as it was",
                  key.stream.value(), key.topic.value(), key.partition.value(), why);
  }
  return ok_status();
}

// What the controller does with each move in the view: see advance_moves in node_agent.h.
Status NodeAgent::advance_moves() {
  if (!is_controller() || !view_) return ok_status();
  const Ref<const ClusterView> view = view_;
  for (const auto& [key, move] : view->moves) {
    const auto current = view->assignments.find(key);
    const bool intact = current != view->assignments.end() && current->second.node == move.from &&
                        current->second.epoch == move.epoch;
    if (!intact) {
      HARK_TRY(abandon_move(key, "its assignment changed"));
    } else if (view->node(move.to) == nullptr) {
      HARK_TRY(abandon_move(key, "its target is not live"));
    } else if (view->node(move.from) == nullptr) {
      HARK_TRY(abandon_move(key, "its owner is not live"));
    } else if (move.ready) {
      HARK_TRY(commit_move(key, move));
    }
    if (!is_controller()) return ok_status();  // Deposed by a rejected write.
  }
  return ok_status();
}

Status NodeAgent::plan_drains() {
  if (!is_controller() || !view_ || view_->draining.empty()) return ok_status();
  const Ref<const ClusterView> view = view_;
  Loads loads = loads_of(*view);
  for (const auto& [key, assignment] : view->assignments) {
    if (!view->is_draining(assignment.node) || view->moves.contains(key)) continue;
    if (view->node(assignment.node) == nullptr) continue;  // Dead: nothing to copy from.
    if (factor_of(key) != 1) continue;  // Deleted (a tombstone), or replicated: not a move.
    if (assignment.replicas.size() > 1) continue;
    const uint32_t target = least_loaded(loads);
    if (target == 0) return ok_status();  // Nowhere to go.
    HARK_TRY_ASSIGN(const bool planned, move_partition(key, target));
    if (!is_controller()) return ok_status();
    if (planned) loads[target].replicas++;
  }
  return ok_status();
}

std::set<uint32_t> NodeAgent::track_gone() {
  const Instant now = clock_.monotonic_now();
  std::set<uint32_t> past_grace;
  std::map<uint32_t, Instant> seen;
  for (const auto& [key, assignment] : view_->assignments) {
    for (const uint32_t id : assignment.replicas) {
      if (view_->node(id) != nullptr || seen.contains(id)) continue;
      const auto before = gone_since_.find(id);
      const Instant since = before == gone_since_.end() ? now : before->second;
      seen[id] = since;
      if (now - since >= options_.replica_replace_after) past_grace.insert(id);
    }
  }
  gone_since_ = std::move(seen);
  return past_grace;
}

Status NodeAgent::reconcile_replicas() {
  if (!is_controller() || !view_) {
    gone_since_.clear();
    return ok_status();
  }
  const Ref<const ClusterView> view = view_;
  ReplicaFacts facts{.factor = 1, .live = {}, .draining = {}, .gone_past_grace = track_gone()};
  for (const NodeInfo& node : view->nodes) facts.live.insert(node.id);
  facts.draining.insert(view->draining.begin(), view->draining.end());
  Loads loads = loads_of(*view);
  for (const auto& [key, assignment] : view->assignments) {
    facts.factor = factor_of(key);
    if (facts.factor == 0 || view->moves.contains(key)) continue;  // A tombstone, or moving.
    const std::optional<Assignment> next = decide_replicas(assignment, facts, loads);
    const bool stuck = !next && view->owner(key).kind == PartitionOwner::Kind::unavailable;
    if (stuck && assignment.replicas.size() > 1 && unavailable_.insert(key).second) {
      HARK_LOG_WARN(
          "cluster: partition %s is unavailable: no in-sync replica (%s) is live; it "
          "waits for one to return (no unclean leader election)",
          partition_name(key), node_list(assignment.isr));
    }
    if (!stuck) unavailable_.erase(key);
    if (next) HARK_TRY(write_replicas(key, assignment, *next));
    if (!is_controller()) return ok_status();  // Deposed by a rejected write.
  }
  return ok_status();
}

// One guarded transaction: the controller's leadership, the assignment as read, and every node
// the new assignment adds (a new leader, new replicas) live.
Status NodeAgent::write_replicas(const core::PartitionKey& key, const Assignment& current,
                                 Assignment next) {
  const std::string assignment_key = keys_.assignment(key);
  const KeyValue* const found = find(assignment_key);
  if (found == nullptr) return ok_status();
  next.by = options_.self.id;
  std::vector<Compare> extra = {number_compare(assignment_key, Compare::Target::mod_revision,
                                               Compare::Op::equal, found->mod_revision)};
  for (const uint32_t id : next.replicas) {
    if (id == next.node ? next.node != current.node : !current.has_replica(id)) {
      extra.push_back(number_compare(keys_.node(id), Compare::Target::create_revision,
                                     Compare::Op::greater, 0));
    }
  }
  HARK_TRY_ASSIGN(
      const bool written,
      controller_txn(std::move(extra), {TxnOp::put(assignment_key, encode_assignment(next))}));
  if (!written) return ok_status();
  if (next.node != current.node) {
    leader_changes_++;
    HARK_LOG_WARN("cluster: partition %s: node %u leads at epoch %u (node %u %s); in sync: %s",
                  partition_name(key), next.node, next.epoch, current.node,
                  view_->node(current.node) == nullptr ? "is gone" : "drains", node_list(next.isr));
  }
  if (next.replicas != current.replicas) {
    replica_set_changes_++;
    HARK_LOG_INFO("cluster: partition %s: replicas %s -> %s (in sync: %s)", partition_name(key),
                  node_list(current.replicas), node_list(next.replicas), node_list(next.isr));
  }
  return ok_status();
}

Result<NodeAgent::IsrChange> NodeAgent::change_isr(const core::PartitionKey& key, uint64_t epoch,
                                                   std::vector<uint32_t> isr) {
  const std::string assignment_key = keys_.assignment(key);
  const KeyValue* const found = find(assignment_key);
  std::optional<Assignment> current =
      found == nullptr ? std::nullopt : decode_assignment(found->value);
  const uint32_t self = options_.self.id;
  if (!current || current->node != self || current->epoch != epoch) return IsrChange::deposed;
  Assignment next = *current;
  next.isr.clear();
  for (const uint32_t id : current->replicas) {
    if (std::find(isr.begin(), isr.end(), id) != isr.end()) next.isr.push_back(id);
  }
  if (next.isr.size() != isr.size() || !next.well_formed()) return Error::invalid_format;
  Txn txn;
  txn.compare = {
      number_compare(assignment_key, Compare::Target::mod_revision, Compare::Op::equal,
                     found->mod_revision),
      number_compare(keys_.node(self), Compare::Target::create_revision, Compare::Op::greater, 0)};
  txn.success = {TxnOp::put(assignment_key, encode_assignment(next))};
  txn.failure = {TxnOp::range(assignment_key)};
  HARK_TRY_ASSIGN(const TxnResult result, coordinator_.txn(txn));
  if (result.succeeded) {
    written(txn.success, result.revision);
    return IsrChange::applied;
  }
  const std::vector<KeyValue>& now = result.ranges.at(0).kvs;
  const std::optional<Assignment> latest =
      now.empty() ? std::nullopt : decode_assignment(now[0].value);
  const bool leads = latest && latest->node == self && latest->epoch == epoch;
  return leads ? IsrChange::stale : IsrChange::deposed;
}

Status NodeAgent::request_partition(const core::PartitionKey& key, uint32_t replication_factor) {
  HARK_TRY(coordinator_.put(keys_.partition(key), encode_partition_request(replication_factor), 0));
  return ok_status();
}

namespace {

// The view the mirror's entries describe (version and self left to the caller).
ClusterView* view_of(const std::map<std::string, KeyValue>& entries, const Keys& keys) {
  auto* view = new ClusterView();
  for (const auto& [name, kv] : entries) {
    if (name == keys.controller) {
      view->controller = static_cast<uint32_t>(std::strtoul(kv.value.c_str(), nullptr, 10));
    } else if (name.starts_with(keys.nodes)) {
      if (std::optional<NodeInfo> node = decode_node(kv.value)) view->nodes.push_back(*node);
    } else if (name.starts_with(keys.assignments)) {
      const auto key =
          parse_partition_suffix(std::string_view(name).substr(keys.assignments.size()));
      const std::optional<Assignment> assignment = decode_assignment(kv.value);
      if (key && assignment) view->assignments[*key] = *assignment;
    } else if (name.starts_with(keys.moves)) {
      const auto key = parse_partition_suffix(std::string_view(name).substr(keys.moves.size()));
      const std::optional<Move> move = decode_move(kv.value);
      if (key && move) view->moves[*key] = *move;
    } else if (name.starts_with(keys.drains)) {
      const std::string id = name.substr(keys.drains.size());
      const auto node = static_cast<uint32_t>(std::strtoul(id.c_str(), nullptr, 10));
      if (node != 0) view->draining.push_back(node);
    }
  }
  std::sort(view->nodes.begin(), view->nodes.end(),
            [](const NodeInfo& a, const NodeInfo& b) { return a.id < b.id; });
  return view;
}

bool same_picture(const ClusterView& a, const ClusterView& b) {
  return a.registered == b.registered && a.controller == b.controller && a.nodes == b.nodes &&
         a.assignments == b.assignments && a.moves == b.moves && a.draining == b.draining;
}

}  // namespace

bool NodeAgent::publish_view() {
  Ref<ClusterView> next(view_of(mirror_.entries(), keys_));
  next->self = options_.self.id;
  next->registered = next->node(options_.self.id) != nullptr;
  next->revision = mirror_.revision();
  if (view_ && same_picture(*view_, *next)) return false;
  next->version = !view_ ? 1 : view_->version + 1;
  view_ = std::move(next);
  return true;
}

Status NodeAgent::step(Duration wait) {
  HARK_TRY(ensure_lease());
  if (!is_controller() && !mirror_.entries().contains(keys_.controller)) HARK_TRY(campaign());
  const Result<bool> synced = mirror_.sync(coordinator_, wait);
  if (!synced.ok()) return synced.error();
  follow_controller_key();
  publish_view();
  HARK_TRY(assign_unassigned());
  HARK_TRY(reconcile_replicas());
  HARK_TRY(advance_moves());
  HARK_TRY(plan_drains());
  return ok_status();
}

Status NodeAgent::leave() {
  if (lease_ == 0) return ok_status();
  const Status revoked = coordinator_.lease_revoke(lease_);
  lease_ = 0;
  registered_ = false;
  campaign_revision_ = 0;
  return revoked;
}

}  // namespace hark::server::cluster
