// PartitionLog's data plane: append, read, lookups. Opening and recovery are in
// partition_log_open.cc; rolls, retention and purge in partition_log_segments.cc; the
// deduplication window in partition_log_dedup.cc.
#include "hark/storage/partition_log.h"

#include <algorithm>
#include <cstring>

#include "hark/core/base/log.h"
#include "hark/core/base/message_layout.h"

namespace hark::storage {

using internal::ChunkSlot;
using internal::Segment;

Offset PartitionLog::first_offset() const {
  for (const auto& segment : segments_) {
    // The first message may not be committed yet: then nothing is retained.
    if (!segment->empty())
      return std::min(segment->offset_of(segment->index.front()), next_offset_);
  }
  return next_offset_;
}

uint64_t PartitionLog::size_bytes() const {
  uint64_t total = 0;
  for (const auto& segment : segments_) total += segment->size_bytes;
  return total;
}

uint64_t PartitionLog::messages_count() const {
  uint64_t total = 0;
  for (const auto& segment : segments_) total += segment->index.size();
  return total;
}

UnixMicros PartitionLog::next_timestamp() {
  // One timestamp per batch, clamped so it never decreases within the partition even if the
  // wall clock steps back (docs/long-polling.md).
  last_timestamp_ = std::max(last_timestamp_, clock_.realtime_now());
  return last_timestamp_;
}

Result<std::span<std::byte>> PartitionLog::copy_in(std::span<const std::byte> messages,
                                                   uint64_t bytes, bool may_roll) {
  if (accounts_.unwritten_bytes + bytes > options_.unwritten_bytes_max) {
    return Error::cannot_append_message;
  }
  if (may_roll) HARK_TRY(maybe_roll(bytes));
  Segment& segment = *segments_.back();
  const std::span<std::byte> target =
      segment.reserve(bytes, options_.chunk_bytes, timer_clock_, accounts_);
  std::memcpy(target.data(), messages.data(), static_cast<size_t>(bytes));
  return target;
}

void PartitionLog::finish_append(uint64_t bytes, uint32_t count) {
  Segment& segment = *segments_.back();
  segment.commit(bytes);
  appended_end_ += count;
  writer_.appended(bytes);
  HARK_ASSERT(segment.last_offset() + 1 == appended_end_);
  // The durable end: under `memory` the batch counts as durable from here; otherwise the writer
  // starts its write now and log_progressed() moves the durable end once it is on disk. The
  // commit point follows (advance_durable()).
  if (options_.durability == Durability::memory) advance_durable(appended_end_);
}

Result<AppendResult> PartitionLog::append(std::span<const std::byte> messages, uint32_t count) {
  HARK_ASSERT(open_);
  HARK_TRY(Status(writer_.failure()));
  HARK_TRY_ASSIGN(const uint64_t bytes, validate_batch(messages, count));
  const Kept kept = drop_duplicates(messages, count, bytes);
  AppendResult result{.first = appended_end_,
                      .count = kept.count,
                      .bytes = kept.bytes,
                      .timestamp = last_timestamp_,
                      .duplicates = count - kept.count,
                      .acknowledge_end = std::max(appended_end_ + kept.count, kept.originals_end)};
  if (kept.count == 0) return result;  // Only duplicates: nothing to append.
  const Result<std::span<std::byte>> copied = copy_in(kept.messages, kept.bytes);
  if (!copied.ok()) {
    unclaim(kept);
    return copied.error();
  }
  const std::span<std::byte> target = *copied;
  Segment& segment = *segments_.back();
  const uint64_t base = segment.size_bytes;
  result.timestamp = next_timestamp();
  stamp_batch(target, kept.count, result.first, result.timestamp, ids_,
              [&](Offset offset, size_t position) {
                segment.index.push_back(
                    IndexEntry{.relative_offset = static_cast<uint32_t>(offset - segment.start),
                               .position = static_cast<uint32_t>(base + position),
                               .timestamp = result.timestamp});
                window_.add(message_id(target, position), offset);
              });
  finish_append(kept.bytes, kept.count);
  return result;
}

Status PartitionLog::restart_empty_at(Offset start) {
  while (!segments_.empty()) HARK_TRY(remove_segment_front());
  window_.clear();
  next_offset_ = appended_end_ = durable_end_ = ends_[0] = start;
  HARK_TRY(add_segment(start));
  HARK_LOG_INFO("partition %s: empty, restarted at offset %u for a stored copy", options_.directory,
                start.value());
  return ok_status();
}

Result<AppendResult> PartitionLog::append_stored(std::span<const std::byte> messages,
                                                 uint32_t count,
                                                 std::optional<SegmentBounds> source) {
  HARK_ASSERT(open_);
  HARK_TRY(Status(writer_.failure()));
  const bool empty_log = messages_count() == 0 && appended_end_ == next_offset_;
  HARK_TRY_ASSIGN(const StoredBatch batch, validate_stored_batch(messages, count, 0));
  if (source && (batch.first < source->start || batch.first + count > source->end)) {
    return Error::invalid_offset;
  }
  if (batch.first != appended_end_) {
    if (!empty_log) return Error::invalid_offset;
    HARK_TRY(restart_empty_at(batch.first));
  } else if (!empty_log && load_u64(messages, message_layout::timestamp) < last_timestamp_) {
    return Error::timestamp_out_of_range;
  }
  if (source && batch.first == source->start) HARK_TRY(start_segment_here());
  HARK_TRY_ASSIGN(const std::span<const std::byte> copy,
                  copy_in(messages, batch.bytes, !source.has_value()));
  Segment& segment = *segments_.back();
  const uint64_t base = segment.size_bytes;
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    segment.index.push_back(
        IndexEntry{.relative_offset = static_cast<uint32_t>(batch.first + i - segment.start),
                   .position = static_cast<uint32_t>(base + at),
                   .timestamp = load_u64(copy.subspan(at), message_layout::timestamp)});
    // Stored as they are, but in the window: a follower that becomes leader holds its leader's.
    window_.add(message_id(copy, at), batch.first + i);
    at += static_cast<size_t>(message_bytes(copy, at));
  }
  last_timestamp_ = std::max(last_timestamp_, batch.timestamp);
  finish_append(batch.bytes, count);
  // The source's segment ends here: so does this one (the next batch starts the next).
  if (source && appended_end_ == source->end) {
    HARK_LOG_INFO("partition %s: copied up to the end of the source's sealed segment %020u",
                  options_.directory, source->start.value());
    HARK_TRY(roll());
  }
  return AppendResult{
      .first = batch.first, .count = count, .bytes = batch.bytes, .timestamp = batch.timestamp};
}

void PartitionLog::read(Offset start, uint32_t count, uint64_t bytes_max, ReadCompletion& done,
                        ReadBound bound) {
  HARK_ASSERT(open_);
  const Offset end = read_end(bound);
  const auto [segment, entry] =
      count == 0 ? std::pair<const Segment*, size_t>() : locate(start, end);
  if (segment == nullptr) {
    done.read_done(ReadView());
  } else if (segment->index[entry].position >= segment->memory_position) {
    ReadView view = read_from_memory(*segment, entry, count, bytes_max, end);
    served(view, bound);
    done.read_done(std::move(view));
  } else {
    read_from_disk(*segment, entry, count, bytes_max, end, done);
  }
}

std::optional<ReadView> PartitionLog::read_memory(Offset start, uint32_t count, uint64_t bytes_max,
                                                  ReadBound bound) {
  HARK_ASSERT(open_);
  const Offset end = read_end(bound);
  const auto [segment, entry] =
      count == 0 ? std::pair<const Segment*, size_t>() : locate(start, end);
  if (segment == nullptr) return ReadView();
  if (segment->index[entry].position < segment->memory_position) return std::nullopt;
  ReadView view = read_from_memory(*segment, entry, count, bytes_max, end);
  served(view, bound);
  return view;
}

std::pair<const Segment*, size_t> PartitionLog::locate(Offset start, Offset end) const {
  if (start >= end) return {nullptr, 0};
  // The last segment starting at or before `start`; a start in a gap (or below the first
  // retained offset) moves on to the next message that exists.
  auto it =
      std::upper_bound(segments_.begin(), segments_.end(), start,
                       [](Offset value, const auto& segment) { return value < segment->start; });
  if (it != segments_.begin()) --it;
  for (; it != segments_.end(); ++it) {
    const size_t entry = (*it)->find(start);
    if (entry == (*it)->index.size()) continue;
    // A start in a gap may land on a message that is not committed yet.
    if ((*it)->offset_of((*it)->index[entry]) >= end) break;
    return {it->get(), entry};
  }
  return {nullptr, 0};
}

ReadView PartitionLog::read_from_memory(const Segment& segment, size_t entry, uint32_t count,
                                        uint64_t bytes_max, Offset end_offset) const {
  const uint64_t position = segment.index[entry].position;
  const ChunkSlot* slot = segment.slot_at(position);
  HARK_ASSERT(slot != nullptr);
  const uint64_t slot_end = slot->position + slot->used;
  uint64_t bytes = 0;
  uint32_t taken = 0;
  // Messages in a chunk are contiguous and were stamped by us: their sizes come from the index.
  // Nothing past `end_offset` is served (the commit point, or a follower's appended end).
  for (size_t i = entry; i < segment.index.size() && taken < count; i++) {
    if (segment.offset_of(segment.index[i]) >= end_offset) break;
    const uint64_t end = segment.entry_end(i);
    if (end > slot_end) break;
    const uint64_t size = end - segment.index[i].position;
    if (taken > 0 && bytes + size > bytes_max) break;
    bytes += size;
    taken++;
  }
  HARK_ASSERT(taken > 0);
  const std::span<const std::byte> view(slot->at(position), static_cast<size_t>(bytes));
  return ReadView(slot->chunk.copy(), view, taken, segment.offset_of(segment.index[entry]),
                  segment.offset_of(segment.index[entry + taken - 1]));
}

void PartitionLog::read_from_disk(const Segment& segment, size_t entry, uint32_t count,
                                  uint64_t bytes_max, Offset end_offset, ReadCompletion& done) {
  const uint64_t position = segment.index[entry].position;
  uint64_t bytes = 0;
  uint32_t taken = 0;
  // Up to the memory boundary; a size from the index may include a skipped corrupt gap, which
  // the reader's checks cut off.
  for (size_t i = entry; i < segment.index.size() && taken < count; i++) {
    if (segment.index[i].position >= segment.memory_position) break;
    if (segment.offset_of(segment.index[i]) >= end_offset) break;
    const uint64_t end = std::min(segment.entry_end(i), segment.memory_position);
    const uint64_t size = end - segment.index[i].position;
    if (taken > 0 && bytes + size > bytes_max) break;
    bytes += size;
    taken++;
  }
  HARK_ASSERT(taken > 0);
  Result<internal::FileRef> file = file_for_read(segment);
  if (!file.ok()) {
    done.read_done(file.error());
    return;
  }
  reader_.read(internal::DiskReader::Request{.file = std::move(file).value(),
                                             .position = position,
                                             .bytes = bytes,
                                             .first = segment.offset_of(segment.index[entry]),
                                             .count = taken,
                                             .end = end_offset},
               done);
}

Result<internal::FileRef> PartitionLog::file_for_read(const Segment& segment) {
  if (segment.log_file) return segment.log_file.copy();
  if (!read_file_ || read_file_start_ != segment.start) {
    read_file_.reset();  // Closed before the next opens: one file at most.
    HARK_TRY_ASSIGN(std::unique_ptr<DiskFile> file, disk_.open(segment.log_path, false));
    read_file_ = internal::FileRef(std::move(file));
    read_file_start_ = segment.start;
  }
  return read_file_.copy();
}

Result<Offset> PartitionLog::offset_for_timestamp(UnixMicros timestamp) const {
  // Timestamps never decrease within a partition: the first segment whose newest message is
  // recent enough holds the answer. Segments are few (bytes / segment_bytes_max): scan them.
  const auto it = std::find_if(segments_.begin(), segments_.end(), [&](const auto& s) {
    return !s->empty() && s->index.back().timestamp >= timestamp;
  });
  // None: the next message will be the first (after those not committed yet).
  if (it == segments_.end()) return appended_end_;
  const Segment& segment = **it;
  const auto entry = std::partition_point(
      segment.index.begin(), segment.index.end(),
      [&](const IndexEntry& candidate) { return candidate.timestamp < timestamp; });
  HARK_ASSERT(entry != segment.index.end());
  return segment.offset_of(*entry);
}

Status PartitionLog::flush(bool fsync) {
  HARK_ASSERT(open_);
  return writer_.drain(fsync);
}

void PartitionLog::flush(bool fsync, FlushCompletion& done) {
  HARK_ASSERT(open_);
  writer_.flush(fsync, done);
}

}  // namespace hark::storage
