#include "hark/core/broker/internal/catalog.h"

#include <algorithm>

#include "hark/core/broker/internal/journal.h"

namespace hark::core::internal {

uint64_t PartitionCell::current_offset() const {
  const uint64_t next = snapshot().next_offset;
  return next == 0 ? 0 : next - 1;
}

PartitionInfo PartitionCell::info() const {
  return PartitionInfo{.id = key.partition.value(),
                       .created_at = created_at,
                       .segments_count = segments_count.load(std::memory_order_relaxed),
                       .current_offset = current_offset(),
                       .size_bytes = size_bytes.load(std::memory_order_relaxed),
                       .messages_count = messages_count.load(std::memory_order_relaxed)};
}

TopicInfo TopicEntry::info() const {
  TopicInfo info{.id = id, .created_at = created_at, .name = name, .settings = settings};
  for (const auto& cell : partitions) {
    info.size_bytes += cell->size_bytes.load(std::memory_order_relaxed);
    info.messages_count += cell->messages_count.load(std::memory_order_relaxed);
  }
  return info;
}

TopicDetails TopicEntry::details() const {
  TopicDetails details{.topic = info()};
  details.partitions.reserve(partitions.size());
  for (const auto& cell : partitions) details.partitions.push_back(cell->info());
  return details;
}

const GroupMemberInfo* GroupEntry::member(uint32_t client) const {
  for (const GroupMemberInfo& candidate : members) {
    if (candidate.id == client) return &candidate;
  }
  return nullptr;
}

void GroupEntry::assign(uint32_t partitions_count) {
  for (GroupMemberInfo& candidate : members) candidate.partitions.clear();
  if (members.empty()) return;
  for (uint32_t p = 0; p < partitions_count; p++) {
    members[p % members.size()].partitions.push_back(p);
  }
  // Every partition to exactly one member: the first member has the most.
  HARK_ASSERT(members.front().partitions.size() ==
              (partitions_count + members.size() - 1) / members.size());
}

GroupDetails GroupEntry::details(uint32_t partitions_count) const {
  return GroupDetails{.group = GroupInfo{.id = id,
                                         .name = name,
                                         .partitions_count = partitions_count,
                                         .members_count = static_cast<uint32_t>(members.size())},
                      .members = members};
}

Result<const GroupEntry*> TopicEntry::group(const NameOrId& ref) const {
  if (ref.is_id()) {
    const auto it = groups.find(ref.number());
    if (it == groups.end()) return Error::consumer_group_id_not_found;
    return it->second.get();
  }
  for (const auto& [group_id, entry] : groups) {
    if (entry->name == ref.text()) return entry.get();
  }
  return Error::consumer_group_name_not_found;
}

StreamInfo StreamEntry::info() const {
  StreamInfo info{.id = id,
                  .created_at = created_at,
                  .name = name,
                  .topics_count = static_cast<uint32_t>(topics.size())};
  for (const auto& [topic_id, topic] : topics) {
    const TopicInfo topic_info = topic->info();
    info.size_bytes += topic_info.size_bytes;
    info.messages_count += topic_info.messages_count;
  }
  return info;
}

Result<const TopicEntry*> StreamEntry::topic(const NameOrId& ref) const {
  if (ref.is_id()) {
    const auto it = topics.find(ref.number());
    if (it == topics.end()) return Error::topic_id_not_found;
    return it->second.get();
  }
  for (const auto& [topic_id, entry] : topics) {
    if (entry->name == ref.text()) return entry.get();
  }
  return Error::topic_name_not_found;
}

Result<const StreamEntry*> Catalog::stream(const NameOrId& ref) const {
  if (ref.is_id()) {
    const auto it = streams.find(ref.number());
    if (it == streams.end()) return Error::stream_id_not_found;
    return it->second.get();
  }
  // Streams are few (operators create them); a name index is not worth its upkeep yet.
  for (const auto& [stream_id, entry] : streams) {
    if (entry->name == ref.text()) return entry.get();
  }
  return Error::stream_name_not_found;
}

Result<const TopicEntry*> Catalog::topic(const NameOrId& stream_ref,
                                         const NameOrId& topic_ref) const {
  HARK_TRY_ASSIGN(const StreamEntry* const stream_entry, stream(stream_ref));
  return stream_entry->topic(topic_ref);
}

Result<Ref<PartitionCell>> Catalog::partition(const NameOrId& stream_ref, const NameOrId& topic_ref,
                                              uint32_t partition_id) const {
  HARK_TRY_ASSIGN(const TopicEntry* const topic_entry, topic(stream_ref, topic_ref));
  if (partition_id >= topic_entry->partitions.size()) return Error::partition_not_found;
  const Ref<PartitionCell>& cell = topic_entry->partitions[partition_id];
  HARK_ASSERT(cell);
  HARK_ASSERT(cell->key.partition.value() == partition_id);
  return cell;
}

uint64_t Catalog::partitions_count() const {
  uint64_t count = 0;
  for (const auto& [stream_id, stream] : streams) {
    for (const auto& [topic_id, topic] : stream->topics) count += topic->partitions.size();
  }
  return count;
}

PartitionCell* Catalog::find(const PartitionKey& key) const {
  const auto stream_it = streams.find(key.stream.value());
  if (stream_it == streams.end()) return nullptr;
  const auto& topics = stream_it->second->topics;
  const auto topic_it = topics.find(key.topic.value());
  if (topic_it == topics.end()) return nullptr;
  const auto& partitions = topic_it->second->partitions;
  if (key.partition.value() >= partitions.size()) return nullptr;
  return partitions[key.partition.value()].get();
}

CatalogEdit::CatalogEdit(const Catalog& base, const OwnershipMap& ownership, Clock& clock)
    : next_(make_ref<Catalog>(base)), ownership_(ownership), clock_(clock) {
  next_->version++;
}

Result<StreamEntry*> CatalogEdit::writable_stream(const NameOrId& ref) {
  HARK_TRY_ASSIGN(const StreamEntry* const current, next_->stream(ref));
  auto copy = make_ref<StreamEntry>(*current);
  StreamEntry* const copied = copy.get();
  next_->streams[current->id] = std::move(copy);
  HARK_ASSERT(writable(*copied));
  return copied;
}

bool CatalogEdit::writable(const StreamEntry& stream) const {
  const auto it = next_->streams.find(stream.id);
  return it != next_->streams.end() && it->second.get() == &stream;
}

void CatalogEdit::set_sequence(uint64_t sequence) {
  HARK_ASSERT(sequence > next_->sequence);
  next_->sequence = sequence;
}

void CatalogEdit::raise_next_stream_id(uint32_t next) {
  journal_next_ids(journal, IdLevel::stream, 0, 0, next);
  next_->next_stream_id = std::max(next_->next_stream_id, next);
}

void CatalogEdit::raise_next_topic_id(StreamEntry& stream, uint32_t next) {
  HARK_ASSERT(writable(stream));
  journal_next_ids(journal, IdLevel::topic, stream.id, 0, next);
  stream.next_topic_id = std::max(stream.next_topic_id, next);
}

void CatalogEdit::raise_next_group_id(StreamEntry& stream, const TopicEntry& topic, uint32_t next) {
  HARK_ASSERT(writable(stream));
  journal_next_ids(journal, IdLevel::group, stream.id, topic.id, next);
  TopicEntry& entry = writable_topic(stream, topic);
  entry.next_group_id = std::max(entry.next_group_id, next);
}

StreamEntry& CatalogEdit::add_stream(uint32_t id, UnixMicros created_at, std::string name) {
  HARK_ASSERT(next_->streams.count(id) == 0);  // Callers check the id is free.
  journal_stream_created(journal, id, created_at, name);
  auto entry = make_ref<StreamEntry>();
  entry->id = id;
  entry->name = std::move(name);
  entry->created_at = created_at;
  next_->next_stream_id = std::max(next_->next_stream_id, id + 1);
  StreamEntry& added = *entry;
  next_->streams[id] = std::move(entry);
  HARK_ASSERT(next_->next_stream_id > id);
  return added;
}

void CatalogEdit::rename_stream(StreamEntry& stream, std::string name) {
  HARK_ASSERT(writable(stream));
  journal_stream_updated(journal, stream.id, name);
  stream.name = std::move(name);
}

void CatalogEdit::remove_stream(const StreamEntry& stream) {
  HARK_ASSERT(next_->streams.count(stream.id) == 1);
  journal_stream_deleted(journal, stream.id);
  for (const auto& [topic_id, topic] : stream.topics) {
    removed.insert(removed.end(), topic->partitions.begin(), topic->partitions.end());
  }
  next_->streams.erase(stream.id);
}

TopicEntry& CatalogEdit::add_topic(StreamEntry& stream, uint32_t id, UnixMicros created_at,
                                   std::string name, const TopicSettings& settings) {
  HARK_ASSERT(writable(stream));
  HARK_ASSERT(stream.topics.count(id) == 0);  // Callers check the id is free.
  journal_topic_created(journal, stream.id, id, created_at, name, settings);
  auto entry = make_ref<TopicEntry>();
  entry->id = id;
  entry->name = std::move(name);
  entry->created_at = created_at;
  entry->settings = settings;
  stream.next_topic_id = std::max(stream.next_topic_id, id + 1);
  for (uint32_t p = 0; p < settings.partitions_count; p++) {
    entry->partitions.push_back(make_cell(stream, *entry, p, created_at));
  }
  created.insert(created.end(), entry->partitions.begin(), entry->partitions.end());
  TopicEntry& added = *entry;
  stream.topics[id] = std::move(entry);
  return added;
}

void CatalogEdit::update_topic(StreamEntry& stream, const TopicEntry& topic, std::string name,
                               const TopicSettings& settings) {
  HARK_ASSERT(writable(stream));
  HARK_ASSERT(stream.topics.count(topic.id) == 1);
  journal_topic_updated(journal, stream.id, topic.id, name, settings);
  TopicEntry& entry = writable_topic(stream, topic);
  entry.name = std::move(name);
  const uint32_t partitions = entry.settings.partitions_count;
  entry.settings = settings;
  entry.settings.partitions_count = partitions;
}

void CatalogEdit::remove_topic(StreamEntry& stream, const TopicEntry& topic) {
  HARK_ASSERT(writable(stream));
  HARK_ASSERT(stream.topics.count(topic.id) == 1);
  journal_topic_deleted(journal, stream.id, topic.id);
  removed.insert(removed.end(), topic.partitions.begin(), topic.partitions.end());
  stream.topics.erase(topic.id);
}

void CatalogEdit::add_partitions(StreamEntry& stream, const TopicEntry& topic, uint32_t count,
                                 UnixMicros created_at) {
  HARK_ASSERT(writable(stream));
  journal_partitions_created(journal, stream.id, topic.id, count, created_at);
  // `topic` may be this edit's earlier copy, which writable_topic() replaces: read it first.
  const size_t before = topic.partitions.size();
  TopicEntry& entry = writable_topic(stream, topic);
  for (uint32_t i = 0; i < count; i++) {
    const auto id = static_cast<uint32_t>(entry.partitions.size());
    entry.partitions.push_back(make_cell(stream, entry, id, created_at));
    created.push_back(entry.partitions.back());
  }
  entry.settings.partitions_count = static_cast<uint32_t>(entry.partitions.size());
  HARK_ASSERT(entry.partitions.size() == before + count);
  reassign_groups(entry);
}

void CatalogEdit::remove_partitions(StreamEntry& stream, const TopicEntry& topic, uint32_t count) {
  HARK_ASSERT(writable(stream));
  journal_partitions_deleted(journal, stream.id, topic.id, count);
  TopicEntry& entry = writable_topic(stream, topic);
  HARK_ASSERT(count <= entry.partitions.size());
  for (uint32_t i = 0; i < count; i++) {
    removed.push_back(std::move(entry.partitions.back()));
    entry.partitions.pop_back();
  }
  entry.settings.partitions_count = static_cast<uint32_t>(entry.partitions.size());
  reassign_groups(entry);
}

GroupEntry& CatalogEdit::add_group(StreamEntry& stream, const TopicEntry& topic, uint32_t id,
                                   std::string name) {
  HARK_ASSERT(writable(stream));
  HARK_ASSERT(topic.groups.count(id) == 0);  // Callers check the id is free.
  journal_group_created(journal, stream.id, topic.id, id, name);
  TopicEntry& entry = writable_topic(stream, topic);
  auto group = make_ref<GroupEntry>();
  group->id = id;
  group->name = std::move(name);
  entry.next_group_id = std::max(entry.next_group_id, id + 1);
  GroupEntry& added = *group;
  entry.groups[id] = std::move(group);
  return added;
}

void CatalogEdit::remove_group(StreamEntry& stream, const TopicEntry& topic,
                               const GroupEntry& group) {
  HARK_ASSERT(writable(stream));
  HARK_ASSERT(topic.groups.count(group.id) == 1);
  journal_group_deleted(journal, stream.id, topic.id, group.id);
  writable_topic(stream, topic).groups.erase(group.id);
}

void CatalogEdit::join_group(StreamEntry& stream, const TopicEntry& topic, const GroupEntry& group,
                             uint32_t client) {
  HARK_ASSERT(writable(stream));
  if (group.member(client) != nullptr) return;
  TopicEntry& entry = writable_topic(stream, topic);
  GroupEntry& changed = writable_group(entry, group);
  changed.members.push_back(GroupMemberInfo{.id = client});
  changed.assign(static_cast<uint32_t>(entry.partitions.size()));
  // The copies' ids: `topic` and `group` were just replaced, and freed if only this edit held them.
  if (next_->members_journaled) {
    journal_member(journal, RecordKind::member_joined, stream.id, entry.id, changed.id, client);
  }
  HARK_ASSERT(changed.member(client) != nullptr);
}

bool CatalogEdit::leave_group(StreamEntry& stream, const TopicEntry& topic, const GroupEntry& group,
                              uint32_t client) {
  HARK_ASSERT(writable(stream));
  if (group.member(client) == nullptr) return false;
  TopicEntry& entry = writable_topic(stream, topic);
  GroupEntry& changed = writable_group(entry, group);
  std::erase_if(changed.members, [&](const GroupMemberInfo& m) { return m.id == client; });
  changed.assign(static_cast<uint32_t>(entry.partitions.size()));
  // The copies' ids: `topic` and `group` were just replaced, and freed if only this edit held them.
  if (next_->members_journaled) {
    journal_member(journal, RecordKind::member_left, stream.id, entry.id, changed.id, client);
  }
  HARK_ASSERT(changed.member(client) == nullptr);
  return true;
}

GroupEntry& CatalogEdit::writable_group(TopicEntry& topic, const GroupEntry& group) {
  HARK_ASSERT(topic.groups.count(group.id) == 1);
  auto copy = make_ref<GroupEntry>(group);
  GroupEntry& writable = *copy;
  topic.groups[group.id] = std::move(copy);
  return writable;
}

void CatalogEdit::reassign_groups(TopicEntry& topic) {
  for (auto& [id, group] : topic.groups) {
    auto copy = make_ref<GroupEntry>(*group);
    copy->assign(static_cast<uint32_t>(topic.partitions.size()));
    group = std::move(copy);
  }
}

void CatalogEdit::purge_topic(const StreamEntry& stream, const TopicEntry& topic) {
  purged.insert(purged.end(), topic.partitions.begin(), topic.partitions.end());
  journal_topic_purged(journal, stream.id, topic.id);
}

TopicEntry& CatalogEdit::writable_topic(StreamEntry& stream, const TopicEntry& topic) {
  HARK_ASSERT(writable(stream));
  HARK_ASSERT(stream.topics.count(topic.id) == 1);
  auto copy = make_ref<TopicEntry>(topic);
  TopicEntry& writable = *copy;
  stream.topics[topic.id] = std::move(copy);
  return writable;
}

Ref<PartitionCell> CatalogEdit::make_cell(const StreamEntry& stream, const TopicEntry& topic,
                                          uint32_t partition, UnixMicros created_at) {
  const PartitionKey key{StreamId(stream.id), TopicId(topic.id), PartitionId(partition)};
  return make_ref<PartitionCell>(key, ownership_.lookup(key).shard, created_at);
}

}  // namespace hark::core::internal
