#include "hark/core/broker/internal/broker_shard.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "hark/core/base/log.h"
#include "hark/core/broker/internal/flow.h"

namespace hark::core::internal {

namespace {

thread_local BrokerShard* current_shard = nullptr;

std::string partition_directory(const std::string& data, const PartitionKey& key) {
  return data + "/streams/" + std::to_string(key.stream.value()) + "/topics/" +
         std::to_string(key.topic.value()) + "/partitions/" + std::to_string(key.partition.value());
}

}  // namespace

BrokerShard::BrokerShard(Broker& broker, io::Reactor& reactor, Ref<const Catalog> catalog)
    : broker_(broker),
      reactor_(reactor),
      waits_(reactor, broker.options().waits),
      catalog_(std::move(catalog)) {
  HARK_ASSERT(current_shard == nullptr);  // One broker shard per shard thread.
  HARK_ASSERT(id().value() < broker.shards_count());
  if (id() == ShardId(0)) {
    coordinator_ = std::make_unique<Coordinator>(*this, catalog_, broker.journal());
  }
  current_shard = this;
}

BrokerShard::~BrokerShard() {
  HARK_ASSERT(owned_.empty());
  HARK_ASSERT(parked_group_polls_.empty());
  reactor_.timers().cancel(retention_timer_);
  if (current_shard == this) current_shard = nullptr;
}

BrokerShard* BrokerShard::current() { return current_shard; }

Status BrokerShard::open_partitions() {
  HARK_ASSERT(on_own_thread());
  HARK_ASSERT(owned_.empty());  // At start, once.
  for (const auto& [stream_id, stream] : catalog_->streams) {
    for (const auto& [topic_id, topic] : stream->topics) {
      for (const auto& cell : topic->partitions) {
        if (cell->owner() == id() && hosts(cell->key)) HARK_TRY(open_partition(cell));
      }
    }
  }
  return ok_status();
}

Partition* BrokerShard::owned(const PartitionCell& cell) {
  HARK_ASSERT(on_own_thread());
  if (cell.owner() != id()) return nullptr;
  const auto it = owned_.find(cell.key);
  if (it == owned_.end() || &it->second->cell() != &cell) return nullptr;
  HARK_ASSERT(it->second->cell().key == cell.key);
  return it->second.get();
}

Error BrokerShard::missing(const PartitionCell& cell) const {
  return hosts(cell.key) ? Error::partition_not_found : Error::shard_communication_error;
}

Status BrokerShard::host(std::span<const PartitionKey> keys, std::span<const PartitionKey> moving,
                         std::span<const HostedPlace> places) {
  HARK_ASSERT(on_own_thread());
  hosted_ = absl::flat_hash_set<PartitionKey>(keys.begin(), keys.end());
  places_.clear();
  for (const HostedPlace& hosted : places) places_[hosted.key] = hosted.place;
  Status result;
  for (const auto& [stream_id, stream] : catalog_->streams) {
    for (const auto& [topic_id, topic] : stream->topics) {
      for (const auto& cell : topic->partitions) {
        if (cell->owner() != id()) continue;
        const bool open = owned(*cell) != nullptr;
        if (open && !hosts(cell->key)) unhost(cell->key);
        if (open || !hosts(cell->key)) continue;
        const Status opened = open_partition(cell);
        if (!opened.ok() && result.ok()) result = opened;
      }
    }
  }
  lift_fences(moving);
  for (const HostedPlace& hosted : places) {
    const auto found = owned_.find(hosted.key);
    if (found == owned_.end()) continue;
    const Status placed = take_place(hosted.key, *found->second);
    if (!placed.ok() && result.ok()) result = placed;
  }
  return result;
}

Status BrokerShard::take_place(const PartitionKey& key, Partition& partition) {
  const auto found = places_.find(key);
  if (found == places_.end()) return ok_status();
  const Status placed = partition.replicate(found->second, Offset(0));
  if (!placed.ok()) {
    HARK_LOG_ERROR("partition %u/%u/%u: cannot take its place in epoch %u: %s", key.stream.value(),
                   key.topic.value(), key.partition.value(), found->second.epoch,
                   std::string(error_name(placed.error())));
  }
  return placed;
}

void BrokerShard::lift_fences(std::span<const PartitionKey> moving) {
  for (auto& [key, partition] : owned_) {
    if (!partition->fenced() || std::find(moving.begin(), moving.end(), key) != moving.end()) {
      continue;
    }
    HARK_LOG_INFO("partition %u/%u/%u: its move is gone, sends are admitted again",
                  key.stream.value(), key.topic.value(), key.partition.value());
    for (Append* append : partition->lift_fence()) append->at_owner(*this, *partition);
  }
}

void BrokerShard::unhost(const PartitionKey& key) {
  HARK_LOG_INFO("partition %u/%u/%u is no longer hosted here: closed (its files are kept)",
                key.stream.value(), key.topic.value(), key.partition.value());
  // Sends a move's fence held: retryable, nothing of them written; a retry reaches the new owner.
  close_owned(key, AbortReason::moved, Error::shard_communication_error);
}

void BrokerShard::close_owned(const PartitionKey& key, AbortReason reason, Error held) {
  // Out of owned_ first: answering the held appends and closing the log (which drains its
  // writes by running this shard's ring, and with it requests that just arrived) must not let
  // a request reach the partition. One that does finds it not open (missing()), so nothing is
  // appended, and acknowledged, on a partition that is leaving (docs/cluster.md §Moves).
  const auto found = owned_.find(key);
  HARK_ASSERT(found != owned_.end());
  const std::unique_ptr<Partition> partition = std::move(found->second);
  owned_.erase(found);
  owned_order_.erase(key);
  waits_.release(partition->cell(), reason);
  waits_.release(partition->cell().appended, reason);  // Followers' fetches too.
  waits_.release(partition->cell().offsets, reason);
  refuse_held(*partition, held);
  partition->close();
}

uint32_t BrokerShard::next_balanced(const TopicEntry& topic) {
  HARK_ASSERT(on_own_thread());
  HARK_ASSERT(!topic.partitions.empty());
  // Topics come and go; a counter is only a starting point, so start over when many pile up.
  if (balanced_.size() > 65536) balanced_.clear();
  const PartitionKey& key = topic.partitions.front()->key;
  return balanced_[{key.stream.value(), key.topic.value()}]++;
}

Result<uint32_t> pick_partition(BrokerShard& shard, const TopicEntry& topic,
                                const Partitioning& partitioning) {
  const auto partitions = static_cast<uint32_t>(topic.partitions.size());
  if (partitions == 0) return Error::no_partitions;
  uint32_t partition_id = 0;
  switch (partitioning.kind) {
    case Partitioning::Kind::balanced:
      partition_id = shard.next_balanced(topic) % partitions;
      break;
    case Partitioning::Kind::partition: partition_id = partitioning.value; break;
    case Partitioning::Kind::key_hash: partition_id = partitioning.value % partitions; break;
  }
  if (partition_id >= partitions) return Error::partition_not_found;
  return partition_id;
}

uint32_t BrokerShard::next_group_start(const GroupEntry& group, uint32_t member) {
  HARK_ASSERT(on_own_thread());
  HARK_ASSERT(group.member(member) != nullptr);
  // Members come and go with connections; a cursor is only a starting point, so rather than
  // track leaves, start over when the table gets large.
  if (group_cursors_.size() > 65536) group_cursors_.clear();
  return group_cursors_[{group.id, member}]++;
}

bool BrokerShard::group_unchanged(const GroupWaiter& waiter) const {
  const GroupAddress address = waiter.group_address();
  const auto topic = catalog_->topic(*address.stream, *address.topic);
  if (!topic.ok()) return false;
  const auto group = (*topic)->group(*address.group);
  if (!group.ok()) return false;
  const GroupMemberInfo* const member = (*group)->member(address.member);
  return member != nullptr && member->partitions == *address.assigned;
}

Status BrokerShard::apply(const Change& change) {
  HARK_ASSERT(on_own_thread());
  HARK_ASSERT(change.catalog);
  catalog_ = change.catalog;
  Status result;
  for (const auto& cell : change.created) {
    if (cell->owner() != id() || !hosts(cell->key)) continue;
    const Status opened = open_partition(cell);
    if (!opened.ok() && result.ok()) result = opened;
  }
  for (const auto& cell : change.purged) {
    Partition* const partition = owned(*cell);
    if (partition == nullptr) continue;
    const Status purged = partition->purge(waits_);
    if (!purged.ok()) {
      HARK_LOG_ERROR("purge of partition %u/%u/%u failed: %s", cell->key.stream.value(),
                     cell->key.topic.value(), cell->key.partition.value(),
                     std::string(error_name(purged.error())));
      if (result.ok()) result = purged;
    }
  }
  // Group members whose assignment changed are evaluated again on the new one (after this
  // shard opened its new partitions; another owner's may still be opening: a member skips
  // those until then).
  std::vector<GroupWaiter*> moved;
  parked_group_polls_.for_each([&](GroupWaiter& waiter) {
    if (!group_unchanged(waiter)) moved.push_back(&waiter);
  });
  for (GroupWaiter* waiter : moved) waiter->rebalanced(*this);
  return result;
}

void BrokerShard::retire(const Change& change) {
  HARK_ASSERT(on_own_thread());
  for (const auto& cell : change.removed) {
    // Retired only once no shard's catalog lists it (docs/architecture.md §4).
    HARK_ASSERT(catalog_->find(cell->key) != cell.get());
    if (owned(*cell) == nullptr) continue;
    close_owned(cell->key, AbortReason::deleted, Error::partition_not_found);
    const std::string directory = partition_directory(options().data_directory, cell->key);
    std::error_code error;
    std::filesystem::remove_all(directory, error);
    if (error) HARK_LOG_WARN("cannot remove %s: %s", directory, error.message());
  }
}

Status BrokerShard::open_partition(const Ref<PartitionCell>& cell) {
  HARK_ASSERT(on_own_thread());
  HARK_ASSERT(cell->owner() == id());
  auto log = storage::PartitionLog::open(reactor_, reactor_.clock(), log_options(*cell));
  if (!log.ok()) {
    HARK_LOG_ERROR("cannot open partition %u/%u/%u: %s", cell->key.stream.value(),
                   cell->key.topic.value(), cell->key.partition.value(),
                   std::string(error_name(log.error())));
    return log.error();
  }
  const storage::LogOptions options = log_options(*cell);
  auto offsets = OffsetStore::open(reactor_.ring(), options.directory + "/consumer_offsets",
                                   options.durability == storage::Durability::always);
  if (!offsets.ok()) return offsets.error();
  auto partition =
      std::make_unique<Partition>(waits_, cell, std::move(log).value(), std::move(offsets).value(),
                                  broker_.options().poll_bytes_max);
  // Its place before anything can reach it: a follower never takes a send, a leader never
  // commits alone. A place it cannot take leaves it closed.
  if (const Status placed = take_place(cell->key, *partition); !placed.ok()) {
    partition->close();
    return placed;
  }
  waits_.adopt(*cell, partition.get());
  waits_.adopt(cell->appended, &partition->appended_hook());
  waits_.adopt(cell->offsets);  // No hook: a fetch woken there is evaluated again.
  owned_[cell->key] = std::move(partition);
  owned_order_.insert(cell->key);
  arm_retention();
  return ok_status();
}

storage::LogOptions BrokerShard::log_options(const PartitionCell& cell) const {
  storage::LogOptions log = options().log;
  log.directory = partition_directory(options().data_directory, cell.key);
  const auto stream = catalog_->streams.find(cell.key.stream.value());
  if (stream == catalog_->streams.end()) return log;
  const auto topic = stream->second->topics.find(cell.key.topic.value());
  if (topic == stream->second->topics.end()) return log;
  const TopicSettings& settings = topic->second->settings;
  // 0 keeps the server's default; UINT64_MAX means "never" / "unlimited".
  if (settings.message_expiry_us == UINT64_MAX) {
    log.retention_age = Duration(0);
  } else if (settings.message_expiry_us != 0) {
    log.retention_age = std::chrono::microseconds(settings.message_expiry_us);
  }
  if (settings.max_topic_size == UINT64_MAX) {
    log.retention_bytes = 0;
  } else if (settings.max_topic_size != 0) {
    // The topic's budget split evenly over its partitions.
    log.retention_bytes = std::max<uint64_t>(
        1, settings.max_topic_size / std::max<uint32_t>(1, settings.partitions_count));
  }
  return log;
}

bool BrokerShard::walk_partitions(std::optional<PartitionKey>& after, uint32_t budget,
                                  absl::FunctionRef<uint32_t(const Partition&)> visit) const {
  HARK_ASSERT(on_own_thread());
  HARK_ASSERT(owned_order_.size() == owned_.size());
  auto next = after.has_value() ? owned_order_.upper_bound(*after) : owned_order_.begin();
  uint64_t spent = 0;
  for (; next != owned_order_.end(); ++next) {
    if (spent >= budget && spent > 0) return false;
    const auto found = owned_.find(*next);
    HARK_ASSERT(found != owned_.end());
    spent += visit(*found->second);
    after = *next;
  }
  return true;
}

void BrokerShard::add_partition_figures(const Partition& partition, BrokerStats& stats) {
  const PartitionCell& cell = partition.cell();
  stats.partitions++;
  stats.segments += cell.segments_count.load(std::memory_order_relaxed);
  stats.messages_count += cell.messages_count.load(std::memory_order_relaxed);
  stats.size_bytes += cell.size_bytes.load(std::memory_order_relaxed);
}

std::pair<std::string, std::string> BrokerShard::names_of(const PartitionKey& key) const {
  std::pair<std::string, std::string> names{std::to_string(key.stream.value()),
                                            std::to_string(key.topic.value())};
  const auto stream = catalog_->streams.find(key.stream.value());
  if (stream == catalog_->streams.end()) return names;
  names.first = stream->second->name;
  const auto topic = stream->second->topics.find(key.topic.value());
  if (topic != stream->second->topics.end()) names.second = topic->second->name;
  return names;
}

uint32_t BrokerShard::add_series(const Partition& partition, const SeriesLimits& limits,
                                 SeriesGather& gather, MetricSeries& series) const {
  HARK_ASSERT(on_own_thread());
  const PartitionFacts facts = partition.facts();
  if (limits.partitions > 0) {
    add_partition_series(partition.cell().key, facts, limits.partitions, series);
  }
  if (limits.consumers == 0) return 0;
  return add_lag_series(partition, facts, limits.consumers, gather, series);
}

void BrokerShard::add_partition_series(const PartitionKey& key, const PartitionFacts& facts,
                                       uint32_t limit, MetricSeries& series) const {
  if (series.partitions.size() >= limit) {
    series.partitions_dropped++;
    series.dropped_next_offset_sum += facts.next_offset;
    return;
  }
  auto [stream, topic] = names_of(key);
  series.partitions.push_back({.stream = std::move(stream),
                               .topic = std::move(topic),
                               .partition = key.partition.value(),
                               .next_offset = facts.next_offset});
}

uint32_t BrokerShard::add_lag_series(const Partition& partition, const PartitionFacts& facts,
                                     uint32_t limit, SeriesGather& gather,
                                     MetricSeries& series) const {
  const SeriesGather::TopicKey topic{facts.stream_id, facts.topic_id};
  const uint64_t unread = facts.next_offset - std::min(facts.first_offset, facts.next_offset);
  gather.topic_unread[topic] += unread;
  uint32_t read = 0;
  partition.for_each_consumer([&](const ConsumerRef& consumer) {
    read++;
    const uint64_t lag = consumer_lag(facts, consumer);
    const SeriesGather::LagKey key{facts.stream_id, facts.topic_id, consumer};
    if (const auto found = gather.lag_index.find(key); found != gather.lag_index.end()) {
      gather.shortfall[found->second] += unread - lag;
      return;
    }
    if (series.lags.size() >= limit) {
      if (gather.dropped.insert(key).second) series.lags_dropped++;
      series.dropped_lag_sum += lag;
      return;
    }
    auto [stream, topic_name] = names_of(partition.cell().key);
    LagSeries entry{
        .stream = std::move(stream), .topic = std::move(topic_name), .consumer = consumer};
    if (consumer.kind == ConsumerRef::Kind::group) entry.group = group_name(topic, consumer.id);
    gather.lag_index.emplace(key, series.lags.size());
    gather.shortfall.push_back(unread - lag);
    gather.lag_topic.push_back(topic);
    series.lags.push_back(std::move(entry));
  });
  return read;
}

std::string BrokerShard::group_name(std::pair<uint32_t, uint32_t> topic, uint32_t group) const {
  const auto stream = catalog_->streams.find(topic.first);
  if (stream != catalog_->streams.end()) {
    const auto entry = stream->second->topics.find(topic.second);
    if (entry != stream->second->topics.end()) {
      const auto found = entry->second->groups.find(group);
      if (found != entry->second->groups.end()) return found->second->name;
    }
  }
  return std::to_string(group);
}

void BrokerShard::shut_down_waits() {
  HARK_ASSERT(on_own_thread());
  shutting_down_ = true;
  waits_.abort_all(AbortReason::shutdown);
}

void BrokerShard::release_partitions() {
  HARK_ASSERT(on_own_thread());
  shutting_down_ = true;
  if (coordinator_ != nullptr) coordinator_->stop_waiting();
  for (auto& [key, partition] : owned_) {
    waits_.release(partition->cell(), AbortReason::shutdown);
    waits_.release(partition->cell().appended, AbortReason::shutdown);
    waits_.release(partition->cell().offsets, AbortReason::shutdown);
    refuse_held(*partition, Error::shard_communication_error);
  }
}

uint64_t BrokerShard::held_appends() const {
  uint64_t held = 0;
  for (const auto& [key, partition] : owned_) held += partition->held_count();
  return held;
}

void BrokerShard::refuse_held(Partition& partition, Error error) {
  for (Append* append : partition.lift_fence()) Flow::finish(*append, *this, error);
}

void BrokerShard::close_partitions() {
  HARK_ASSERT(on_own_thread());
  reactor_.timers().cancel(retention_timer_);
  for (auto& [key, partition] : owned_) partition->close();
  owned_.clear();
  owned_order_.clear();
}

void BrokerShard::arm_retention() {
  HARK_ASSERT(on_own_thread());
  if (retention_timer_.armed() || options().retention_interval <= Duration(0)) return;
  reactor_.timers().add(retention_timer_,
                        reactor_.clock().monotonic_now() + options().retention_interval);
}

void BrokerShard::RetentionTimer::expire() {
  HARK_ASSERT(shard_.on_own_thread());
  for (auto& [key, partition] : shard_.owned_) {
    const Status status = partition->apply_retention();
    if (!status.ok()) {
      HARK_LOG_WARN("retention of partition %u/%u/%u failed: %s", key.stream.value(),
                    key.topic.value(), key.partition.value(),
                    std::string(error_name(status.error())));
    }
  }
  if (!shard_.owned_.empty()) shard_.arm_retention();
}

}  // namespace hark::core::internal
