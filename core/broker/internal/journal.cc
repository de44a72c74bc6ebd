#include "hark/core/broker/internal/journal.h"

#include <cstring>
#include <string>

#include "hark/core/base/assert.h"
#include "hark/core/broker/internal/catalog.h"
#include "hark/storage/record_file.h"

namespace hark::core::internal {

namespace {

// Appends little-endian fields to one record; finish() writes the framing.
class RecordWriter {
 public:
  RecordWriter(std::vector<std::byte>& out, RecordKind kind)
      : out_(out), start_(storage::begin_record(out)) {
    u8(static_cast<uint8_t>(kind));
  }
  ~RecordWriter() { storage::finish_record(out_, start_); }
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  RecordWriter& u8(uint8_t value) { return raw(&value, 1); }
  RecordWriter& u32(uint32_t value) { return raw(&value, 4); }
  RecordWriter& u64(uint64_t value) { return raw(&value, 8); }
  RecordWriter& name(std::string_view text) {
    u8(static_cast<uint8_t>(text.size()));
    return raw(text.data(), text.size());
  }
  RecordWriter& bytes(std::span<const std::byte> data) { return raw(data.data(), data.size()); }

 private:
  // Little-endian hosts only (x86-64, aarch64): the values are copied as they are in memory.
  RecordWriter& raw(const void* bytes, size_t size) {
    const size_t at = out_.size();
    out_.resize(at + size);
    std::memcpy(out_.data() + at, bytes, size);
    return *this;
  }

  std::vector<std::byte>& out_;
  size_t start_;
};

class RecordReader {
 public:
  explicit RecordReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  bool u8(uint8_t& value) { return raw(&value, 1); }
  bool u32(uint32_t& value) { return raw(&value, 4); }
  bool u64(uint64_t& value) { return raw(&value, 8); }
  bool name(std::string& text) {
    uint8_t size = 0;
    if (!u8(size) || size == 0 || bytes_.size() < size) return false;
    text.assign(reinterpret_cast<const char*>(bytes_.data()), size);
    bytes_ = bytes_.subspan(size);
    return true;
  }
  bool settings(TopicSettings& settings) {
    return u8(settings.compression) && u64(settings.message_expiry_us) &&
           u64(settings.max_topic_size) && u8(settings.replication_factor);
  }
  bool at_end() const { return bytes_.empty(); }
  std::span<const std::byte> rest() { return std::exchange(bytes_, std::span<const std::byte>()); }

 private:
  bool raw(void* value, size_t size) {
    if (bytes_.size() < size) return false;
    std::memcpy(value, bytes_.data(), size);
    bytes_ = bytes_.subspan(size);
    return true;
  }

  std::span<const std::byte> bytes_;
};

void write_settings(RecordWriter& writer, const TopicSettings& settings) {
  writer.u8(settings.compression)
      .u64(settings.message_expiry_us)
      .u64(settings.max_topic_size)
      .u8(settings.replication_factor);
}

Status corrupted() { return Error::state_file_corrupted; }

}  // namespace

void journal_stream_created(std::vector<std::byte>& out, uint32_t id, UnixMicros created_at,
                            std::string_view name) {
  RecordWriter(out, RecordKind::stream_created).u32(id).u64(created_at).name(name);
}

void journal_stream_deleted(std::vector<std::byte>& out, uint32_t id) {
  RecordWriter(out, RecordKind::stream_deleted).u32(id);
}

void journal_stream_updated(std::vector<std::byte>& out, uint32_t id, std::string_view name) {
  RecordWriter(out, RecordKind::stream_updated).u32(id).name(name);
}

void journal_topic_created(std::vector<std::byte>& out, uint32_t stream, uint32_t id,
                           UnixMicros created_at, std::string_view name,
                           const TopicSettings& settings) {
  RecordWriter writer(out, RecordKind::topic_created);
  writer.u32(stream).u32(id).u64(created_at).u32(settings.partitions_count);
  write_settings(writer, settings);
  writer.name(name);
}

void journal_topic_deleted(std::vector<std::byte>& out, uint32_t stream, uint32_t id) {
  RecordWriter(out, RecordKind::topic_deleted).u32(stream).u32(id);
}

void journal_topic_purged(std::vector<std::byte>& out, uint32_t stream, uint32_t id) {
  RecordWriter(out, RecordKind::topic_purged).u32(stream).u32(id);
}

void journal_topic_updated(std::vector<std::byte>& out, uint32_t stream, uint32_t id,
                           std::string_view name, const TopicSettings& settings) {
  RecordWriter writer(out, RecordKind::topic_updated);
  writer.u32(stream).u32(id);
  write_settings(writer, settings);
  writer.name(name);
}

void journal_partitions_created(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                                uint32_t count, UnixMicros created_at) {
  RecordWriter(out, RecordKind::partitions_created)
      .u32(stream)
      .u32(topic)
      .u32(count)
      .u64(created_at);
}

void journal_partitions_deleted(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                                uint32_t count) {
  RecordWriter(out, RecordKind::partitions_deleted).u32(stream).u32(topic).u32(count);
}

void journal_group_created(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                           uint32_t id, std::string_view name) {
  RecordWriter(out, RecordKind::group_created).u32(stream).u32(topic).u32(id).name(name);
}

void journal_member(std::vector<std::byte>& out, RecordKind kind, uint32_t stream, uint32_t topic,
                    uint32_t group, uint32_t member) {
  HARK_ASSERT(kind == RecordKind::member_joined || kind == RecordKind::member_left);
  RecordWriter(out, kind).u32(stream).u32(topic).u32(group).u32(member);
}

void journal_group_deleted(std::vector<std::byte>& out, uint32_t stream, uint32_t topic,
                           uint32_t id) {
  RecordWriter(out, RecordKind::group_deleted).u32(stream).u32(topic).u32(id);
}

void journal_entry(std::vector<std::byte>& out, uint64_t sequence,
                   std::span<const std::byte> records) {
  RecordWriter(out, RecordKind::entry).u64(sequence).bytes(records);
}

void journal_extension(std::vector<std::byte>& out, std::span<const std::byte> bytes) {
  RecordWriter(out, RecordKind::extension).bytes(bytes);
}

void journal_next_ids(std::vector<std::byte>& out, IdLevel level, uint32_t stream, uint32_t topic,
                      uint32_t next) {
  RecordWriter(out, RecordKind::next_ids)
      .u8(static_cast<uint8_t>(level))
      .u32(stream)
      .u32(topic)
      .u32(next);
}

namespace {

// A topic's partitions as runs of equal creation times (one CreatePartitions each), then its
// groups in id order with their members in join order, then its group counter.
void snapshot_topic(std::vector<std::byte>& out, const Catalog& catalog, const StreamEntry& stream,
                    const TopicEntry& topic) {
  TopicSettings settings = topic.settings;
  settings.partitions_count = 0;
  journal_topic_created(out, stream.id, topic.id, topic.created_at, topic.name, settings);
  size_t first = 0;
  while (first < topic.partitions.size()) {
    const UnixMicros created_at = topic.partitions[first]->created_at;
    size_t end = first + 1;
    while (end < topic.partitions.size() && topic.partitions[end]->created_at == created_at) end++;
    journal_partitions_created(out, stream.id, topic.id, static_cast<uint32_t>(end - first),
                               created_at);
    first = end;
  }
  for (const auto& [id, group] : topic.groups) {
    journal_group_created(out, stream.id, topic.id, id, group->name);
    if (!catalog.members_journaled) continue;  // One node: members are connections.
    for (const GroupMemberInfo& member : group->members) {
      journal_member(out, RecordKind::member_joined, stream.id, topic.id, id, member.id);
    }
  }
  journal_next_ids(out, IdLevel::group, stream.id, topic.id, topic.next_group_id);
}

}  // namespace

void journal_snapshot(std::vector<std::byte>& out, const Catalog& catalog,
                      std::span<const std::vector<std::byte>> extensions) {
  HARK_ASSERT(catalog.sequence > 0);
  std::vector<std::byte> records;
  journal_next_ids(records, IdLevel::stream, 0, 0, catalog.next_stream_id);
  for (const auto& [stream_id, stream] : catalog.streams) {
    journal_stream_created(records, stream_id, stream->created_at, stream->name);
    for (const auto& [topic_id, topic] : stream->topics) {
      snapshot_topic(records, catalog, *stream, *topic);
    }
    journal_next_ids(records, IdLevel::topic, stream_id, 0, stream->next_topic_id);
  }
  for (const auto& extension : extensions) journal_extension(records, extension);
  RecordWriter(out, RecordKind::snapshot).u64(catalog.sequence).bytes(records);
}

namespace {

// Each replays one kind of record from `reader` (positioned after the kind byte); false when
// the record does not decode or does not fit the catalog.
StreamEntry* find_stream(CatalogEdit& edit, uint32_t stream_id) {
  auto found = edit.writable_stream(NameOrId::id(stream_id));
  return found.ok() ? *found : nullptr;
}

const TopicEntry* find_topic(StreamEntry* stream, uint32_t topic_id) {
  if (stream == nullptr) return nullptr;
  auto found = stream->topic(NameOrId::id(topic_id));
  return found.ok() ? *found : nullptr;
}

bool replay_stream(RecordKind kind, RecordReader& reader, CatalogEdit& edit) {
  uint32_t id = 0;
  UnixMicros created_at = 0;
  std::string name;
  if (!reader.u32(id)) return false;
  if (kind == RecordKind::stream_created) {
    if (!reader.u64(created_at) || !reader.name(name)) return false;
    if (edit.catalog().streams.count(id) != 0) return false;
    edit.add_stream(id, created_at, std::move(name));
    return true;
  }
  StreamEntry* const stream = find_stream(edit, id);
  if (stream == nullptr) return false;
  if (kind == RecordKind::stream_deleted) {
    edit.remove_stream(*stream);
    return true;
  }
  if (!reader.name(name)) return false;
  edit.rename_stream(*stream, std::move(name));
  return true;
}

bool replay_topic(RecordKind kind, RecordReader& reader, CatalogEdit& edit) {
  uint32_t stream_id = 0;
  uint32_t id = 0;
  UnixMicros created_at = 0;
  std::string name;
  TopicSettings settings;
  if (!reader.u32(stream_id) || !reader.u32(id)) return false;
  StreamEntry* const stream = find_stream(edit, stream_id);
  const TopicEntry* const topic = find_topic(stream, id);
  switch (kind) {
    case RecordKind::topic_created:
      if (!reader.u64(created_at) || !reader.u32(settings.partitions_count) ||
          !reader.settings(settings) || !reader.name(name) || stream == nullptr ||
          topic != nullptr) {
        return false;
      }
      edit.add_topic(*stream, id, created_at, std::move(name), settings);
      return true;
    case RecordKind::topic_deleted:
      if (topic == nullptr) return false;
      edit.remove_topic(*stream, *topic);
      return true;
    case RecordKind::topic_purged:
      if (topic == nullptr) return false;
      edit.purge_topic(*stream, *topic);
      return true;
    default:
      if (!reader.settings(settings) || !reader.name(name) || topic == nullptr) return false;
      edit.update_topic(*stream, *topic, std::move(name), settings);
      return true;
  }
}

bool replay_partitions(RecordKind kind, RecordReader& reader, CatalogEdit& edit) {
  uint32_t stream_id = 0;
  uint32_t topic_id = 0;
  uint32_t count = 0;
  UnixMicros created_at = 0;
  if (!reader.u32(stream_id) || !reader.u32(topic_id) || !reader.u32(count)) return false;
  const bool create = kind == RecordKind::partitions_created;
  if (create && !reader.u64(created_at)) return false;
  StreamEntry* const stream = find_stream(edit, stream_id);
  const TopicEntry* const topic = find_topic(stream, topic_id);
  if (topic == nullptr || (!create && count > topic->partitions.size())) return false;
  if (create) {
    edit.add_partitions(*stream, *topic, count, created_at);
  } else {
    edit.remove_partitions(*stream, *topic, count);
  }
  return true;
}

bool replay_group(RecordKind kind, RecordReader& reader, CatalogEdit& edit) {
  uint32_t stream_id = 0;
  uint32_t topic_id = 0;
  uint32_t id = 0;
  std::string name;
  if (!reader.u32(stream_id) || !reader.u32(topic_id) || !reader.u32(id)) return false;
  const bool create = kind == RecordKind::group_created;
  if (create && !reader.name(name)) return false;
  StreamEntry* const stream = find_stream(edit, stream_id);
  const TopicEntry* const topic = find_topic(stream, topic_id);
  if (topic == nullptr) return false;
  const auto group = topic->group(NameOrId::id(id));
  if (create == group.ok()) return false;
  if (create) {
    edit.add_group(*stream, *topic, id, std::move(name));
  } else {
    edit.remove_group(*stream, *topic, **group);
  }
  return true;
}

// Members come and go with connections: a join of a member or a leave of a non-member changes
// nothing and is not an error (a node's own leave may cross another node's cleanup).
bool replay_member(RecordKind kind, RecordReader& reader, CatalogEdit& edit) {
  uint32_t stream_id = 0;
  uint32_t topic_id = 0;
  uint32_t group_id = 0;
  uint32_t member = 0;
  if (!reader.u32(stream_id) || !reader.u32(topic_id) || !reader.u32(group_id) ||
      !reader.u32(member)) {
    return false;
  }
  StreamEntry* const stream = find_stream(edit, stream_id);
  const TopicEntry* const topic = find_topic(stream, topic_id);
  if (topic == nullptr) return false;
  const auto group = topic->group(NameOrId::id(group_id));
  if (!group.ok()) return false;
  if (kind == RecordKind::member_joined) {
    edit.join_group(*stream, *topic, **group, member);
  } else {
    edit.leave_group(*stream, *topic, **group, member);
  }
  return true;
}

bool replay_next_ids(RecordReader& reader, CatalogEdit& edit) {
  uint8_t level = 0;
  uint32_t stream_id = 0;
  uint32_t topic_id = 0;
  uint32_t next = 0;
  if (!reader.u8(level) || !reader.u32(stream_id) || !reader.u32(topic_id) || !reader.u32(next)) {
    return false;
  }
  if (level == static_cast<uint8_t>(IdLevel::stream)) {
    edit.raise_next_stream_id(next);
    return true;
  }
  StreamEntry* const stream = find_stream(edit, stream_id);
  if (stream == nullptr) return false;
  if (level == static_cast<uint8_t>(IdLevel::topic)) {
    edit.raise_next_topic_id(*stream, next);
    return true;
  }
  const TopicEntry* const topic = find_topic(stream, topic_id);
  if (level != static_cast<uint8_t>(IdLevel::group) || topic == nullptr) return false;
  edit.raise_next_group_id(*stream, *topic, next);
  return true;
}

// The records inside an entry or a snapshot: none of them an entry or a snapshot.
bool replay_nested(std::span<const std::byte> records, CatalogEdit& edit) {
  while (!records.empty()) {
    const Result<storage::FramedRecord> record = storage::next_record(records);
    if (!record.ok() || record->payload.empty() ||
        record->payload[0] == std::byte(RecordKind::entry) ||
        record->payload[0] == std::byte(RecordKind::snapshot) ||
        !replay(record->payload, edit).ok()) {
      return false;
    }
    records = records.subspan(record->size);
  }
  return true;
}

// Entries are applied in order (the next one only).
bool replay_entry(RecordReader& reader, CatalogEdit& edit) {
  uint64_t sequence = 0;
  if (!reader.u64(sequence) || sequence != edit.catalog().sequence + 1) return false;
  if (!replay_nested(reader.rest(), edit)) return false;
  edit.set_sequence(sequence);
  return true;
}

// A snapshot rebuilds a catalog from nothing: it applies to an empty one only.
bool replay_snapshot(RecordReader& reader, CatalogEdit& edit) {
  uint64_t sequence = 0;
  const Catalog& catalog = edit.catalog();
  if (!reader.u64(sequence) || sequence == 0 || catalog.sequence != 0 || !catalog.streams.empty() ||
      catalog.next_stream_id != 0) {
    return false;
  }
  if (!replay_nested(reader.rest(), edit)) return false;
  edit.set_sequence(sequence);
  return true;
}

}  // namespace

Status replay(std::span<const std::byte> payload, CatalogEdit& edit) {
  RecordReader reader(payload);
  uint8_t kind_byte = 0;
  if (!reader.u8(kind_byte)) return corrupted();
  const auto kind = static_cast<RecordKind>(kind_byte);
  bool replayed = false;
  switch (kind) {
    case RecordKind::stream_created:
    case RecordKind::stream_deleted:
    case RecordKind::stream_updated: replayed = replay_stream(kind, reader, edit); break;
    case RecordKind::topic_created:
    case RecordKind::topic_deleted:
    case RecordKind::topic_purged:
    case RecordKind::topic_updated: replayed = replay_topic(kind, reader, edit); break;
    case RecordKind::partitions_created:
    case RecordKind::partitions_deleted: replayed = replay_partitions(kind, reader, edit); break;
    case RecordKind::group_created:
    case RecordKind::group_deleted: replayed = replay_group(kind, reader, edit); break;
    case RecordKind::member_joined:
    case RecordKind::member_left: replayed = replay_member(kind, reader, edit); break;
    case RecordKind::entry: replayed = replay_entry(reader, edit); break;
    case RecordKind::snapshot: replayed = replay_snapshot(reader, edit); break;
    case RecordKind::next_ids: replayed = replay_next_ids(reader, edit); break;
    case RecordKind::extension: {
      const std::span<const std::byte> bytes = reader.rest();
      edit.extensions.emplace_back(bytes.begin(), bytes.end());
      replayed = true;
      break;
    }
  }
  return replayed && reader.at_end() ? ok_status() : corrupted();
}

Status replay_records(std::span<const std::byte> records, CatalogEdit& edit) {
  while (!records.empty()) {
    HARK_TRY_ASSIGN(const storage::FramedRecord record, storage::next_record(records));
    HARK_TRY(replay(record.payload, edit));
    records = records.subspan(record.size);
  }
  return ok_status();
}

}  // namespace hark::core::internal
