#include "hark/core/broker/operations.h"

#include "hark/core/broker/internal/broker_shard.h"
#include "hark/core/broker/internal/flow.h"
#include "hark/core/broker/internal/journal.h"

namespace hark::core {

using internal::BrokerShard;
using internal::Flow;
using internal::Stage;

namespace {

constexpr uint32_t topic_partitions_max = 1000;

Status check_name(std::string_view name, Error error) {
  if (name.empty() || name.size() > NameOrId::name_size_max) return error;
  return ok_status();
}

void add_counters(WaitCounters& sum, const WaitCounters& shard) {
  sum.parked_now += shard.parked_now;
  sum.parked += shard.parked;
  sum.ready_at_park += shard.ready_at_park;
  sum.woken += shard.woken;
  sum.timed_out += shard.timed_out;
  sum.cancelled += shard.cancelled;
  sum.aborted += shard.aborted;
  sum.zombies_swept += shard.zombies_swept;
  sum.rejected_full += shard.rejected_full;
  sum.conditions_evaluated += shard.conditions_evaluated;
  sum.condition_reports += shard.condition_reports;
  sum.wake_latency.add(shard.wake_latency);
}

void add_appends(AppendCounters& sum, const AppendCounters& shard) {
  sum.messages += shard.messages;
  sum.bytes += shard.bytes;
  sum.commit_latency.add(shard.commit_latency);
}

// One shard's counters and (shard 0) the catalog's figures, at GetStats' first step there;
// its partitions follow in steps (GetStats::walk_step).
void add_shard_figures(BrokerStats& stats, BrokerShard& shard) {
  add_counters(stats.waits, shard.waits().counters());
  add_appends(stats.appends, shard.append_counters());
  stats.eventfd_writes += shard.reactor().counters().wakes_sent;
  stats.reevaluated += shard.poll_counters().reevaluated;
  stats.reparked += shard.poll_counters().reparked;
  stats.held += shard.held_appends();
  if (shard.id() != ShardId(0)) return;
  for (const auto& [stream_id, stream_entry] : shard.catalog().streams) {
    stats.streams++;
    for (const auto& [topic_id, topic_entry] : stream_entry->topics) {
      stats.topics++;
      stats.consumer_groups += topic_entry->groups.size();
    }
  }
}

// A read of the catalog runs in one step, on its home shard, from that shard's catalog.
void expect_home_step(const Operation& op, const BrokerShard& shard) {
  HARK_ASSERT(Flow::stage(op) == Stage::start);
  shard.expect_on(Flow::home(op));
}

}  // namespace

// Partition operations: resolved at home, run at the owner.
void PartitionOperation::step(BrokerShard& shard) {
  if (Flow::stage(*this) == Stage::at_owner) {
    run_at_owner(shard);
    return;
  }
  HARK_ASSERT(Flow::stage(*this) == Stage::start);
  shard.expect_on(Flow::home(*this));
  HARK_ASSERT(!cell_);
  auto cell = resolve(shard);
  if (!cell.ok()) {
    Flow::finish(*this, shard, cell.error());
    return;
  }
  cell_ = std::move(cell).value();
  if (cell_->owner() != shard.id()) {
    Flow::go_to(*this, shard, cell_->owner(), Stage::at_owner);
    return;
  }
  run_at_owner(shard);
}

void PartitionOperation::run_at_owner(BrokerShard& shard) {
  HARK_ASSERT(cell_);
  shard.expect_on(cell_->owner());
  // Held here, not in the operation: at_owner() may finish it, and done() may reuse it.
  const Ref<internal::PartitionCell> cell = std::move(cell_);
  internal::Partition* const owner = shard.owned(*cell);
  if (owner == nullptr) {
    Flow::finish(*this, shard, shard.missing(*cell));
    return;
  }
  at_owner(shard, *owner);
}

// Metadata commands: to shard 0, queued there, answered at home after every shard applied.
void MetadataCommand::step(BrokerShard& shard) {
  if (Flow::stage(*this) == Stage::start && shard.id() != ShardId(0)) {
    shard.expect_on(Flow::home(*this));
    Flow::go_to(*this, shard, ShardId(0), Stage::at_metadata);
    return;
  }
  HARK_ASSERT(Flow::stage(*this) == Stage::start || Flow::stage(*this) == Stage::at_metadata);
  shard.expect_on(ShardId(0));
  shard.coordinator().enqueue(*this);
}

Status ApplyJournalEntry::apply(internal::CatalogEdit& edit) {
  HARK_TRY(internal::replay_records(records, edit));
  // The entry must end with its own sequence record: anything else is not this entry.
  if (edit.catalog().sequence != sequence) return Error::state_file_corrupted;
  return ok_status();
}

Status JournalExtension::apply(internal::CatalogEdit& edit) {
  HARK_ASSERT(build);
  HARK_TRY_ASSIGN(std::vector<std::byte> record, build());
  internal::journal_extension(edit.journal, record);
  edit.extensions.push_back(std::move(record));
  return ok_status();
}

Status CreateStream::apply(internal::CatalogEdit& edit) {
  HARK_TRY(check_name(name, Error::invalid_stream_name));
  if (edit.catalog().stream(*NameOrId::name(name)).ok()) {
    return Error::stream_name_already_exists;
  }
  stream = edit.add_stream(edit.catalog().next_stream_id, edit.now(), name).info();
  HARK_ASSERT(edit.catalog().next_stream_id > stream.id);
  return ok_status();
}

Status DeleteStream::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(const internal::StreamEntry* const entry, edit.catalog().stream(stream));
  const uint32_t id = entry->id;
  edit.remove_stream(*entry);
  HARK_ASSERT(edit.catalog().streams.count(id) == 0);
  return ok_status();
}

Status PurgeStream::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(const internal::StreamEntry* const entry, edit.catalog().stream(stream));
  for (const auto& [id, topic] : entry->topics) edit.purge_topic(*entry, *topic);
  return ok_status();
}

Status CreateTopic::apply(internal::CatalogEdit& edit) {
  HARK_TRY(check_name(name, Error::invalid_topic_name));
  if (settings.partitions_count > topic_partitions_max) return Error::too_many_partitions;
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  if (entry->topic(*NameOrId::name(name)).ok()) {
    return Error::topic_name_already_exists;
  }
  topic = edit.add_topic(*entry, entry->next_topic_id, edit.now(), name, settings).details();
  HARK_ASSERT(topic.partitions.size() == settings.partitions_count);
  return ok_status();
}

Status DeleteTopic::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  edit.remove_topic(*entry, *found);
  return ok_status();
}

Status PurgeTopic::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(const internal::StreamEntry* const entry, edit.catalog().stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  edit.purge_topic(*entry, *found);
  return ok_status();
}

Status UpdateStream::apply(internal::CatalogEdit& edit) {
  HARK_TRY(check_name(name, Error::invalid_stream_name));
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  const auto same_name = edit.catalog().stream(*NameOrId::name(name));
  if (same_name.ok() && (*same_name)->id != entry->id) return Error::stream_name_already_exists;
  edit.rename_stream(*entry, name);
  return ok_status();
}

Status UpdateTopic::apply(internal::CatalogEdit& edit) {
  HARK_TRY(check_name(name, Error::invalid_topic_name));
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  const auto same_name = entry->topic(*NameOrId::name(name));
  if (same_name.ok() && (*same_name)->id != found->id) return Error::topic_name_already_exists;
  edit.update_topic(*entry, *found, name, settings);
  return ok_status();
}

Status CreatePartitions::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  if (count == 0) return Error::invalid_partitions_count;
  if (found->partitions.size() + count > topic_partitions_max) return Error::too_many_partitions;
  edit.add_partitions(*entry, *found, count, edit.now());
  return ok_status();
}

Status DeletePartitions::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  if (count == 0 || count > found->partitions.size()) return Error::invalid_partitions_count;
  edit.remove_partitions(*entry, *found, count);
  return ok_status();
}

Status CreateConsumerGroup::apply(internal::CatalogEdit& edit) {
  HARK_TRY(check_name(name, Error::invalid_consumer_group_name));
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  if (found->group(*NameOrId::name(name)).ok()) return Error::consumer_group_name_already_exists;
  const auto partitions = static_cast<uint32_t>(found->partitions.size());
  group = edit.add_group(*entry, *found, found->next_group_id, name).details(partitions).group;
  return ok_status();
}

Status DeleteConsumerGroup::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  HARK_TRY_ASSIGN(const internal::GroupEntry* const existing, found->group(group));
  edit.remove_group(*entry, *found, *existing);
  return ok_status();
}

Status JoinConsumerGroup::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  HARK_TRY_ASSIGN(const internal::GroupEntry* const existing, found->group(group));
  edit.join_group(*entry, *found, *existing, member);
  return ok_status();
}

Status LeaveConsumerGroup::apply(internal::CatalogEdit& edit) {
  HARK_TRY_ASSIGN(internal::StreamEntry* const entry, edit.writable_stream(stream));
  HARK_TRY_ASSIGN(const internal::TopicEntry* const found, entry->topic(topic));
  HARK_TRY_ASSIGN(const internal::GroupEntry* const existing, found->group(group));
  if (!edit.leave_group(*entry, *found, *existing, member)) {
    return Error::consumer_group_member_not_found;
  }
  return ok_status();
}

namespace {

// Every member with an id in [first, last] leaves every group it joined.
void leave_members(internal::CatalogEdit& edit, uint32_t first, uint32_t last) {
  // Collect first: leaving copies entries of the catalog being walked.
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>> joined;
  for (const auto& [stream_id, stream_entry] : edit.catalog().streams) {
    for (const auto& [topic_id, topic_entry] : stream_entry->topics) {
      for (const auto& [group_id, group_entry] : topic_entry->groups) {
        for (const GroupMemberInfo& member : group_entry->members) {
          if (member.id >= first && member.id <= last)
            joined.emplace_back(stream_id, topic_id, group_id, member.id);
        }
      }
    }
  }
  for (const auto& [stream_id, topic_id, group_id, member] : joined) {
    internal::StreamEntry* const entry = *edit.writable_stream(NameOrId::id(stream_id));
    const internal::TopicEntry* const found = *entry->topic(NameOrId::id(topic_id));
    edit.leave_group(*entry, *found, **found->group(NameOrId::id(group_id)), member);
  }
}

}  // namespace

Status LeaveConsumerGroups::apply(internal::CatalogEdit& edit) {
  leave_members(edit, member, member);
  return ok_status();
}

Status LeaveMembersInRange::apply(internal::CatalogEdit& edit) {
  if (first > last) return Error::invalid_command;
  leave_members(edit, first, last);
  return ok_status();
}

void GetMemberGroups::step(BrokerShard& shard) {
  expect_home_step(*this, shard);
  memberships.clear();
  for (const auto& [stream_id, stream_entry] : shard.catalog().streams) {
    for (const auto& [topic_id, topic_entry] : stream_entry->topics) {
      for (const auto& [group_id, group_entry] : topic_entry->groups) {
        for (const GroupMemberInfo& joined : group_entry->members) {
          if (member.has_value() && joined.id != *member) continue;
          memberships.push_back({.member = joined.id,
                                 .stream_id = stream_id,
                                 .topic_id = topic_id,
                                 .group_id = group_id});
        }
      }
    }
  }
  Flow::finish(*this, shard, ok_status());
}

void GetConsumerGroup::step(BrokerShard& shard) {
  expect_home_step(*this, shard);
  result.reset();
  const auto entry = shard.catalog().topic(stream, topic);
  if (!entry.ok()) {
    Flow::finish(*this, shard, entry.error());
    return;
  }
  const auto found = (*entry)->group(group);
  if (found.ok()) result = (*found)->details(static_cast<uint32_t>((*entry)->partitions.size()));
  Flow::finish(*this, shard, ok_status());
}

void GetConsumerGroups::step(BrokerShard& shard) {
  expect_home_step(*this, shard);
  groups.clear();
  const auto entry = shard.catalog().topic(stream, topic);
  if (!entry.ok()) {
    Flow::finish(*this, shard, entry.error());
    return;
  }
  const auto partitions = static_cast<uint32_t>((*entry)->partitions.size());
  for (const auto& [id, found] : (*entry)->groups)
    groups.push_back(found->details(partitions).group);
  Flow::finish(*this, shard, ok_status());
}

void GetStream::step(BrokerShard& shard) {
  expect_home_step(*this, shard);
  const auto entry = shard.catalog().stream(stream);
  result.reset();
  if (entry.ok()) {
    const internal::StreamEntry& found = **entry;
    result = StreamDetails{.stream = found.info()};
    for (const auto& [id, topic] : found.topics) result->topics.push_back(topic->info());
  }
  Flow::finish(*this, shard, ok_status());
}

void GetStreams::step(BrokerShard& shard) {
  expect_home_step(*this, shard);
  streams.clear();
  for (const auto& [id, entry] : shard.catalog().streams) streams.push_back(entry->info());
  Flow::finish(*this, shard, ok_status());
}

void GetTopic::step(BrokerShard& shard) {
  expect_home_step(*this, shard);
  result.reset();
  const auto entry = shard.catalog().stream(stream);
  if (!entry.ok()) {
    Flow::finish(*this, shard, entry.error());
    return;
  }
  const auto found = (*entry)->topic(topic);
  if (found.ok()) result = (*found)->details();
  Flow::finish(*this, shard, ok_status());
}

void GetTopics::step(BrokerShard& shard) {
  expect_home_step(*this, shard);
  topics.clear();
  const auto entry = shard.catalog().stream(stream);
  if (!entry.ok()) {
    Flow::finish(*this, shard, entry.error());
    return;
  }
  for (const auto& [id, topic] : (*entry)->topics) topics.push_back(topic->info());
  Flow::finish(*this, shard, ok_status());
}

// Append: the partition is picked at home.
Result<Ref<internal::PartitionCell>> Append::resolve(BrokerShard& shard) {
  owner_shard.reset();
  submitted_at_ = shard.waits().clock().monotonic_now();
  HARK_TRY_ASSIGN(const internal::TopicEntry* const entry, shard.catalog().topic(stream, topic));
  HARK_TRY_ASSIGN(partition_id, internal::pick_partition(shard, *entry, partitioning));
  return entry->partitions[partition_id];
}

void Append::at_owner(BrokerShard& shard, internal::Partition& owner) {
  HARK_ASSERT(owner.cell().owner() == shard.id());
  owner_shard = shard.id();
  if (owner.fenced()) {
    // A move holds it (docs/cluster.md §Moves); past the limit: retryable, nothing written.
    if (!owner.hold(*this)) Flow::finish(*this, shard, Error::shard_communication_error);
    return;
  }
  const auto result = owner.append(messages, count);
  if (!result.ok()) {
    Flow::finish(*this, shard, result.error());
    return;
  }
  appended = *result;
  // Committed once its write (`always`: fdatasync) completed; at once under `memory`. Messages
  // the deduplication window dropped wait for their originals' commit (acknowledge_end).
  owner.log().when_committed(appended.acknowledge_end, *this);
}

void Append::committed(Status status) {
  BrokerShard& shard = *BrokerShard::current();
  HARK_ASSERT(owner_shard.has_value());  // Set at the owner, which hears of the commit.
  shard.expect_on(*owner_shard);
  // Acknowledged once the wake-ups of this commit have left (WaitShard::after_settle).
  if (status.ok()) {
    shard.append_counters().record(count, messages.size(),
                                   shard.waits().clock().monotonic_now() - submitted_at_);
    Flow::finish_after_settle(*this, shard);
    return;
  }
  Flow::finish(*this, shard, std::move(status));
}

Result<Ref<internal::PartitionCell>> AppendStored::resolve(BrokerShard& shard) {
  return shard.catalog().partition(stream, topic, partition);
}

void AppendStored::at_owner(BrokerShard& shard, internal::Partition& owner) {
  const auto result = owner.append_stored(messages, count, source);
  end = owner.log().appended_end().value();
  if (!result.ok()) {
    Flow::finish(*this, shard, result.error());
    return;
  }
  appended = *result;
  owner.log().when_durable(appended.first + appended.count, *this);
}

void AppendStored::committed(Status status) {
  BrokerShard& shard = *BrokerShard::current();
  if (status.ok()) {
    Flow::finish_after_settle(*this, shard);
    return;
  }
  Flow::finish(*this, shard, std::move(status));
}

Result<Ref<internal::PartitionCell>> FencePartition::resolve(BrokerShard& shard) {
  return shard.catalog().partition(stream, topic, partition);
}

void FencePartition::at_owner(BrokerShard& shard, internal::Partition& owner) {
  owner_shard_ = shard.id();
  owner.fence();
  offsets.clear();
  owner.for_each_consumer([&](const ConsumerRef& consumer) {
    if (const auto stored = owner.stored_offset(consumer)) offsets.emplace_back(consumer, *stored);
  });
  // What was appended before the fence is part of the partition: answered once committed.
  end = owner.log().appended_end().value();
  owner.log().when_committed(owner.log().appended_end(), *this);
}

void FencePartition::committed(Status status) {
  BrokerShard& shard = *BrokerShard::current();
  shard.expect_on(owner_shard_);
  Flow::finish(*this, shard, std::move(status));
}

// Offsets: resolved at home, stored or read at the owner.
namespace {

// Resolves the partition of an offset operation, and a group consumer's id.
Result<Ref<internal::PartitionCell>> offset_partition(const BrokerShard& shard,
                                                      ConsumerRef& consumer, const NameOrId& group,
                                                      const NameOrId& stream, const NameOrId& topic,
                                                      std::optional<uint32_t> partition) {
  HARK_TRY_ASSIGN(const internal::TopicEntry* const entry, shard.catalog().topic(stream, topic));
  if (consumer.kind == ConsumerRef::Kind::group) {
    HARK_TRY_ASSIGN(const internal::GroupEntry* const found, entry->group(group));
    consumer.id = found->id;
    // Which member's partition is meant is not known here: a group names its partition.
    if (!partition.has_value()) return Error::consumer_group_member_not_found;
  }
  const uint32_t id = partition.value_or(0);
  if (id >= entry->partitions.size()) return Error::partition_not_found;
  HARK_ASSERT(entry->partitions[id]);
  return entry->partitions[id];
}

}  // namespace

Result<Ref<internal::PartitionCell>> StoreOffset::resolve(BrokerShard& shard) {
  return offset_partition(shard, consumer, group, stream, topic, partition);
}

void StoreOffset::at_owner(BrokerShard& shard, internal::Partition& owner) {
  const Status checked = owner.store_offset(consumer, offset, *this);
  if (!checked.ok()) Flow::finish(*this, shard, checked);
}

void StoreOffset::offset_written(Status status) {
  Flow::finish(*this, *BrokerShard::current(), std::move(status));
}

Result<Ref<internal::PartitionCell>> GetOffset::resolve(BrokerShard& shard) {
  return offset_partition(shard, consumer, group, stream, topic, partition);
}

void GetOffset::at_owner(BrokerShard& shard, internal::Partition& owner) {
  partition_id = owner.cell().key.partition.value();
  current_offset = owner.cell().current_offset();
  stored = owner.stored_offset(consumer);
  Flow::finish(*this, shard, ok_status());
}

Result<Ref<internal::PartitionCell>> DeleteSegments::resolve(BrokerShard& shard) {
  return shard.catalog().partition(stream, topic, partition);
}

void DeleteSegments::at_owner(BrokerShard& shard, internal::Partition& owner) {
  const Result<uint32_t> result = owner.delete_segments(count);
  if (result.ok()) deleted = *result;
  Flow::finish(*this, shard, result.ok() ? ok_status() : Status(result.error()));
}

Result<Ref<internal::PartitionCell>> FlushUnsavedBuffer::resolve(BrokerShard& shard) {
  return shard.catalog().partition(stream, topic, partition);
}

void FlushUnsavedBuffer::at_owner(BrokerShard& /*shard*/, internal::Partition& owner) {
  owner.log().flush(fsync, *this);
}

void FlushUnsavedBuffer::flushed(Status status) {
  Flow::finish(*this, *BrokerShard::current(), std::move(status));
}

Result<Ref<internal::PartitionCell>> DeleteOffset::resolve(BrokerShard& shard) {
  return offset_partition(shard, consumer, group, stream, topic, partition);
}

void DeleteOffset::at_owner(BrokerShard& shard, internal::Partition& owner) {
  const Status checked = owner.delete_offset(consumer, *this);
  if (!checked.ok()) Flow::finish(*this, shard, checked);
}

void DeleteOffset::offset_written(Status status) {
  Flow::finish(*this, *BrokerShard::current(), std::move(status));
}

// Stats: a tour of every shard, 0 to N-1, then home.
GetStats::GetStats() = default;
GetStats::~GetStats() = default;

namespace {

// The lag totals, once every shard added its partitions.
void finish_lags(const internal::SeriesGather& gather, MetricSeries& series) {
  for (size_t i = 0; i < series.lags.size(); ++i) {
    const auto unread = gather.topic_unread.find(gather.lag_topic[i]);
    HARK_ASSERT(unread != gather.topic_unread.end());
    series.lags[i].lag = unread->second - std::min(unread->second, gather.shortfall[i]);
  }
}

}  // namespace

bool GetStats::start(BrokerShard& shard) {
  shard.expect_on(Flow::home(*this));
  stats = BrokerStats{};
  series = MetricSeries{};
  // Control plane, and only when series are asked for (GetStats from a client asks none).
  gather_.reset();
  if (limits.partitions > 0 || limits.consumers > 0) {
    gather_ = std::make_unique<internal::SeriesGather>();
  }
  if (shard.id() == ShardId(0)) return true;
  Flow::go_to(*this, shard, ShardId(0), Stage::stats_visit);
  return false;
}

bool GetStats::walk_step(BrokerShard& shard) {
  return shard.walk_partitions(walked_, shard.options().stats_step_max,
                               [&](const internal::Partition& partition) {
                                 BrokerShard::add_partition_figures(partition, stats);
                                 if (!gather_) return uint32_t{1};
                                 return 1 + shard.add_series(partition, limits, *gather_, series);
                               });
}

void GetStats::step(BrokerShard& shard) {
  const Stage stage = Flow::stage(*this);
  if (stage == Stage::start && !start(shard)) return;
  // The tour is in shard order: the shard visited is the next one (0 first).
  HARK_ASSERT(stage == Stage::start || stage == Stage::stats_visit || stage == Stage::stats_walk);
  HARK_ASSERT(shard.id().value() < shard.broker().shards_count());
  if (stage != Stage::stats_walk) {
    add_shard_figures(stats, shard);
    walked_.reset();
  }
  // Behind what the shard has queued meanwhile (Reactor::post to itself: its next pass).
  if (!walk_step(shard)) {
    Flow::go_to(*this, shard, shard.id(), Stage::stats_walk);
    return;
  }
  const uint32_t next = shard.id().value() + 1;
  if (next < shard.broker().shards_count()) {
    Flow::go_to(*this, shard, ShardId(next), Stage::stats_visit);
    return;
  }
  if (gather_) finish_lags(*gather_, series);
  gather_.reset();
  Flow::finish(*this, shard, ok_status());
}

}  // namespace hark::core
