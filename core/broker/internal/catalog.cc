#include "core/broker/internal/catalog.h"

#include <algorithm>

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

Result<std::shared_ptr<PartitionCell>> Catalog::partition(const NameOrId& stream_ref,
                                                          const NameOrId& topic_ref,
                                                          uint32_t partition_id) const {
  HARK_TRY_ASSIGN(const TopicEntry* const topic_entry, topic(stream_ref, topic_ref));
  if (partition_id >= topic_entry->partitions.size()) return Error::partition_not_found;
  return topic_entry->partitions[partition_id];
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
    : next_(std::make_shared<Catalog>(base)), ownership_(ownership), clock_(clock) {
  next_->version++;
}

Result<StreamEntry*> CatalogEdit::writable_stream(const NameOrId& ref) {
  HARK_TRY_ASSIGN(const StreamEntry* const current, next_->stream(ref));
  auto copy = std::make_shared<StreamEntry>(*current);
  StreamEntry* const writable = copy.get();
  next_->streams[current->id] = std::move(copy);
  return writable;
}

StreamEntry& CatalogEdit::add_stream(std::string name) {
  auto entry = std::make_shared<StreamEntry>();
  entry->id = next_->next_stream_id++;
  entry->name = std::move(name);
  entry->created_at = now();
  StreamEntry& added = *entry;
  next_->streams[added.id] = std::move(entry);
  return added;
}

void CatalogEdit::remove_stream(const StreamEntry& stream) {
  for (const auto& [topic_id, topic] : stream.topics) {
    removed.insert(removed.end(), topic->partitions.begin(), topic->partitions.end());
  }
  next_->streams.erase(stream.id);
}

TopicEntry& CatalogEdit::add_topic(StreamEntry& stream, std::string name,
                                   const TopicSettings& settings) {
  auto entry = std::make_shared<TopicEntry>();
  entry->id = stream.next_topic_id++;
  entry->name = std::move(name);
  entry->created_at = now();
  entry->settings = settings;
  for (uint32_t p = 0; p < settings.partitions_count; p++) {
    const PartitionKey key{StreamId(stream.id), TopicId(entry->id), PartitionId(p)};
    const Owner owner = ownership_.lookup(key);
    entry->partitions.push_back(
        std::make_shared<PartitionCell>(key, owner.shard, entry->created_at));
  }
  created.insert(created.end(), entry->partitions.begin(), entry->partitions.end());
  TopicEntry& added = *entry;
  stream.topics[added.id] = std::move(entry);
  return added;
}

void CatalogEdit::remove_topic(StreamEntry& stream, const TopicEntry& topic) {
  removed.insert(removed.end(), topic.partitions.begin(), topic.partitions.end());
  stream.topics.erase(topic.id);
}

void CatalogEdit::purge_topic(const TopicEntry& topic) {
  purged.insert(purged.end(), topic.partitions.begin(), topic.partitions.end());
}

}  // namespace hark::core::internal
