#include "hark/server/cluster/cluster_view.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

namespace hark::server::cluster {
namespace {

// nlohmann without exceptions: parse with allow_exceptions = false and read every field
// through this check, so a hostile or foreign value is a nullopt, never an abort.
template <typename T>
bool read_unsigned(const nlohmann::json& object, const char* name, T& out) {
  const auto found = object.find(name);
  if (found == object.end() || !found->is_number_unsigned()) return false;
  const uint64_t value = found->get<uint64_t>();
  if (value > std::numeric_limits<T>::max()) return false;
  out = static_cast<T>(value);
  return true;
}

bool read_string(const nlohmann::json& object, const char* name, std::string& out) {
  const auto found = object.find(name);
  if (found == object.end() || !found->is_string()) return false;
  out = found->get<std::string>();
  return true;
}

bool parse_u32(std::string_view text, uint32_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string encode_node(const NodeInfo& node) {
  return nlohmann::json{{"id", node.id},
                        {"client_address", node.client_address},
                        {"link_address", node.link_address},
                        {"shards", node.shards}}
      .dump();
}

std::optional<NodeInfo> decode_node(std::string_view json) {
  const nlohmann::json object = nlohmann::json::parse(json, nullptr, false);
  NodeInfo node;
  if (!object.is_object() || !read_unsigned(object, "id", node.id) ||
      !read_string(object, "client_address", node.client_address) ||
      !read_string(object, "link_address", node.link_address) ||
      !read_unsigned(object, "shards", node.shards)) {
    return std::nullopt;
  }
  return node;
}

bool Assignment::has_replica(uint32_t id) const {
  return std::find(replicas.begin(), replicas.end(), id) != replicas.end();
}

bool Assignment::in_sync(uint32_t id) const {
  return std::find(isr.begin(), isr.end(), id) != isr.end();
}

bool Assignment::well_formed() const {
  if (node == 0 || replicas.empty() || replicas.size() > node_id_max || !in_sync(node)) {
    return false;
  }
  for (size_t i = 0; i < replicas.size(); i++) {
    if (replicas[i] == 0 || std::find(replicas.begin(), replicas.begin() + static_cast<long>(i),
                                      replicas[i]) != replicas.begin() + static_cast<long>(i)) {
      return false;
    }
  }
  for (size_t i = 0; i < isr.size(); i++) {
    if (!has_replica(isr[i]) || std::find(isr.begin(), isr.begin() + static_cast<long>(i),
                                          isr[i]) != isr.begin() + static_cast<long>(i)) {
      return false;
    }
  }
  return true;
}

Assignment single_replica(uint32_t node, uint64_t epoch, uint32_t by) {
  return {.node = node, .epoch = epoch, .by = by, .replicas = {node}, .isr = {node}};
}

std::string encode_assignment(const Assignment& assignment) {
  return nlohmann::json{{"node", assignment.node},
                        {"epoch", assignment.epoch},
                        {"by", assignment.by},
                        {"replicas", assignment.replicas},
                        {"isr", assignment.isr}}
      .dump();
}

namespace {

// A list of node ids; absent reads as `fallback`.
bool read_nodes(const nlohmann::json& object, const char* name, std::vector<uint32_t> fallback,
                std::vector<uint32_t>& out) {
  const auto found = object.find(name);
  if (found == object.end()) {
    out = std::move(fallback);
    return true;
  }
  if (!found->is_array() || found->size() > node_id_max) return false;
  out.clear();
  for (const nlohmann::json& item : *found) {
    if (!item.is_number_unsigned() || item.get<uint64_t>() > node_id_max) return false;
    out.push_back(item.get<uint32_t>());
  }
  return true;
}

}  // namespace

std::optional<Assignment> decode_assignment(std::string_view json) {
  const nlohmann::json object = nlohmann::json::parse(json, nullptr, false);
  Assignment assignment;
  if (!object.is_object() || !read_unsigned(object, "node", assignment.node) ||
      !read_unsigned(object, "epoch", assignment.epoch) ||
      !read_unsigned(object, "by", assignment.by) ||
      !read_nodes(object, "replicas", {assignment.node}, assignment.replicas) ||
      !read_nodes(object, "isr", {assignment.node}, assignment.isr) || !assignment.well_formed()) {
    return std::nullopt;
  }
  return assignment;
}

std::string encode_partition_request(uint32_t replication_factor) {
  return nlohmann::json{{"replication_factor", replication_factor}}.dump();
}

std::optional<uint32_t> decode_partition_request(std::string_view value) {
  if (value.empty()) return 1;
  const nlohmann::json object = nlohmann::json::parse(value, nullptr, false);
  uint32_t factor = 0;
  if (!object.is_object() || !read_unsigned(object, "replication_factor", factor) || factor == 0 ||
      factor > node_id_max) {
    return std::nullopt;
  }
  return factor;
}

Result<EffectiveFactor> effective_replication_factor(uint8_t requested, uint8_t minimum,
                                                     size_t live) {
  if (requested > live) return Error::invalid_replication_factor;
  const size_t raised = std::max<size_t>({requested, minimum, 1});
  const auto factor = static_cast<uint8_t>(std::min(raised, std::max<size_t>(live, 1)));
  return EffectiveFactor{.factor = factor, .capped = factor < raised};
}

std::string encode_move(const Move& move) {
  return nlohmann::json{{"from", move.from},
                        {"to", move.to},
                        {"epoch", move.epoch},
                        {"ready", move.ready},
                        {"by", move.by}}
      .dump();
}

std::optional<Move> decode_move(std::string_view json) {
  const nlohmann::json object = nlohmann::json::parse(json, nullptr, false);
  Move move;
  if (!object.is_object() || !read_unsigned(object, "from", move.from) ||
      !read_unsigned(object, "to", move.to) || !read_unsigned(object, "epoch", move.epoch) ||
      !read_unsigned(object, "by", move.by)) {
    return std::nullopt;
  }
  const auto ready = object.find("ready");
  if (ready == object.end() || !ready->is_boolean()) return std::nullopt;
  move.ready = ready->get<bool>();
  return move;
}

Keys::Keys(std::string_view cluster)
    : root("/hark/" + std::string(cluster) + "/"),
      nodes(root + "nodes/"),
      controller(root + "controller"),
      partitions(root + "partitions/"),
      assignments(root + "assignments/"),
      meta(root + "meta/"),
      meta_snapshot(root + "meta/snapshot"),
      applied(root + "applied/"),
      moves(root + "moves/"),
      drains(root + "drain/") {}

std::string Keys::node(uint32_t id) const { return nodes + std::to_string(id); }

std::string Keys::meta_entry(uint64_t sequence) const {
  std::string digits = std::to_string(sequence);
  return meta + std::string(20 - digits.size(), '0') + digits;
}

std::string Keys::applied_by(uint32_t node) const { return applied + std::to_string(node); }

namespace {
std::string partition_suffix(const core::PartitionKey& key) {
  return std::to_string(key.stream.value()) + "/" + std::to_string(key.topic.value()) + "/" +
         std::to_string(key.partition.value());
}
}  // namespace

std::string Keys::partition(const core::PartitionKey& key) const {
  return partitions + partition_suffix(key);
}

std::string Keys::assignment(const core::PartitionKey& key) const {
  return assignments + partition_suffix(key);
}

std::string Keys::move(const core::PartitionKey& key) const {
  return moves + partition_suffix(key);
}

std::string Keys::drain(uint32_t node) const { return drains + std::to_string(node); }

std::optional<core::PartitionKey> parse_partition_suffix(std::string_view suffix) {
  uint32_t ids[3] = {};
  for (int i = 0; i < 3; i++) {
    const size_t slash = suffix.find('/');
    const bool last = i == 2;
    if (last != (slash == std::string_view::npos)) return std::nullopt;
    if (!parse_u32(last ? suffix : suffix.substr(0, slash), ids[i])) return std::nullopt;
    if (!last) suffix.remove_prefix(slash + 1);
  }
  return core::PartitionKey{
      .stream = StreamId(ids[0]), .topic = TopicId(ids[1]), .partition = PartitionId(ids[2])};
}

const NodeInfo* ClusterView::node(uint32_t id) const {
  for (const NodeInfo& node : nodes) {
    if (node.id == id) return &node;
  }
  return nullptr;
}

bool ClusterView::is_draining(uint32_t id) const {
  return std::find(draining.begin(), draining.end(), id) != draining.end();
}

std::optional<uint32_t> Assignment::member_of(uint32_t id) const {
  if (id == node) return 0;
  uint32_t member = 1;
  for (const uint32_t replica : replicas) {
    if (replica == node) continue;
    if (replica == id) return member;
    member++;
  }
  return std::nullopt;
}

std::optional<core::ReplicaPlace> Assignment::place_of(uint32_t id) const {
  if (replicas.size() < 2 || !has_replica(id)) return std::nullopt;
  core::ReplicaPlace place{
      .role = id == node ? core::ReplicaRole::leader : core::ReplicaRole::follower,
      .epoch = epoch,
      .replicas = static_cast<uint32_t>(replicas.size()),
      .set = 0,
      .in_sync = 0};
  // FNV-1a over the members in member order.
  uint64_t hash = 0xcbf29ce484222325ULL;
  const auto mix = [&](uint32_t value) {
    for (int i = 0; i < 4; i++) {
      hash ^= (value >> (8 * i)) & 0xFF;
      hash *= 0x100000001b3ULL;
    }
  };
  mix(node);
  for (const uint32_t replica : replicas) {
    if (replica != node) mix(replica);
  }
  place.set = hash == 0 ? 1 : hash;
  for (const uint32_t member : isr) {
    if (const auto index = member_of(member)) place.in_sync |= 1u << *index;
  }
  place.in_sync |= 1;
  return place;
}

PartitionOwner ClusterView::owner(const core::PartitionKey& key) const {
  const auto found = assignments.find(key);
  if (found == assignments.end()) return {};
  const bool live = node(found->second.node) != nullptr;
  return {.kind = live ? PartitionOwner::Kind::node : PartitionOwner::Kind::unavailable,
          .assignment = found->second};
}

Reroute reroute(const ClusterView& view, const core::PartitionKey& key, uint32_t refused_by,
                bool waits, uint32_t reroutes) {
  const PartitionOwner owner = view.owner(key);
  const bool elsewhere =
      owner.kind == PartitionOwner::Kind::node && owner.assignment.node != refused_by;
  if (waits) return elsewhere ? Reroute::now : Reroute::wait;
  return elsewhere && reroutes < reroutes_max ? Reroute::now : Reroute::give_up;
}

std::optional<Move> ClusterView::move_of(const core::PartitionKey& key) const {
  const auto found = moves.find(key);
  if (found == moves.end()) return std::nullopt;
  return found->second;
}

}  // namespace hark::server::cluster
