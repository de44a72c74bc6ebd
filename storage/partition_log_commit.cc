// PartitionLog's commit point: advancing it (at append under `memory`, else when a write or,
// under `always`, an fdatasync completes), the producers waiting for it, and rolling back what a
// failed write or sync leaves uncommitted.
#include <algorithm>

#include "hark/core/base/log.h"
#include "hark/storage/partition_log.h"

namespace hark::storage {

void PartitionLog::when_committed(Offset end, CommitCompletion& done) {
  HARK_ASSERT(end <= appended_end_);
#ifdef HARK_MUTANT_ACK_BEFORE_WRITE
  const bool acknowledge = true;  // Planted bug: acknowledges at append, before any write.
#else
  const bool acknowledge = end <= next_offset_;
#endif
  if (acknowledge) {
    done.committed(ok_status());
    return;
  }
  HARK_ASSERT(commit_waiters_.empty() || commit_waiters_.back().end_ <= end);
  done.end_ = end;
  commit_waiters_.push_back(done);
}

void PartitionLog::advance_commit(Offset end) {
  if (end <= next_offset_) return;
  HARK_ASSERT(end <= appended_end_);
  next_offset_ = end;
  // Readers first (the listener wakes parked polls), then the producers: both follow the
  // commit, and a consumer may see a message before its producer hears of it, never before it
  // is durable.
  if (listener_ != nullptr) listener_->commit_advanced(next_offset_);
  finish_commits(next_offset_, ok_status());
}

void PartitionLog::finish_commits(Offset up_to, Status status) {
  while (!commit_waiters_.empty() && commit_waiters_.front().end_ <= up_to) {
    CommitCompletion* done = commit_waiters_.pop_front();
    done->committed(status);
  }
}

Offset PartitionLog::commit_end() const {
  const bool synced = options_.durability == Durability::always;
  for (const auto& segment : segments_) {
    const uint64_t on_disk = synced ? segment->synced_bytes : segment->written_bytes;
    if (on_disk >= segment->size_bytes || segment->empty()) continue;
    // The first message that does not end within the bytes on disk: everything before it is
    // committed. A write may stop inside a message, so compare ends, not starts.
    const auto& index = segment->index;
    const auto after = std::upper_bound(
        index.begin(), index.end(), on_disk,
        [](uint64_t position, const IndexEntry& entry) { return position < entry.position; });
    const size_t first_outside =
        after == index.begin() ? 0 : static_cast<size_t>(after - index.begin()) - 1;
    HARK_ASSERT(segment->entry_end(first_outside) > on_disk);
    return segment->offset_of(index[first_outside]);
  }
  return appended_end_;
}

void PartitionLog::log_progressed() {
  if (options_.durability == Durability::memory) return;
  advance_commit(commit_end());
  // A settled sealed segment keeps its files until a message after it is committed (a failed
  // commit could make it active again): that may be this one.
  close_settled_files();
}

void PartitionLog::writes_failed(Error error) {
  if (options_.durability == Durability::memory || appended_end_ == next_offset_) return;
  HARK_LOG_ERROR(
      "partition %s: the commit of offsets [%u, %u) failed (%s): they are rolled back "
      "and their producers get the error",
      options_.directory, next_offset_.value(), appended_end_.value(),
      std::string(error_name(error)));
  roll_back();
  finish_commits(Offset(UINT64_MAX), error);
}

void PartitionLog::roll_back() {
  // Segments holding nothing committed go whole (a roll made them for uncommitted batches).
  while (segments_.size() > 1 && segments_.back()->start >= next_offset_) {
    internal::Segment& segment = *segments_.back();
    writer_.removed(segment);
    segment.release_chunks(accounts_);
    remove_files(segment);
    segments_.pop_back();
    segments_.back()->sealed = false;
  }
  internal::Segment& active = *segments_.back();
  roll_back_segment(active, active.find(next_offset_));
  appended_end_ = next_offset_;
}

void PartitionLog::roll_back_segment(internal::Segment& segment, size_t keep_entries) {
  const uint64_t cut = keep_entries < segment.index.size() ? segment.index[keep_entries].position
                                                           : segment.size_bytes;
  // Bytes below the cut are committed, so written (synced where eviction waits for the sync),
  // so never evicted above it.
  HARK_ASSERT(segment.memory_position <= cut);
  const uint64_t written = std::min(segment.written_bytes, cut);
  const uint64_t synced = std::min(segment.synced_bytes, cut);
  accounts_.unwritten_bytes -= (segment.size_bytes - segment.written_bytes) - (cut - written);
  accounts_.appended_total -= segment.size_bytes - cut;
  accounts_.written_total -= segment.written_bytes - written;
  accounts_.synced_total -= segment.synced_bytes - synced;
  segment.size_bytes = cut;
  segment.written_bytes = written;
  segment.synced_bytes = synced;
  // The truncate below cuts any pre-written zeros after the cut: write them again.
  segment.prepared_bytes = std::min(segment.prepared_bytes, cut);
  segment.zeroed_bytes = std::min(segment.zeroed_bytes, cut);
  segment.zeros_limit = UINT64_MAX;  // The failure may have freed room: try a reserve again.
  segment.index.resize(keep_entries);
  segment.index_written = std::min(segment.index_written, keep_entries);
  segment.index_synced = std::min(segment.index_synced, keep_entries);
  // Uncommitted bytes were never served, so no view holds them: the chunks may be reused.
  while (!segment.chunks.empty() && segment.chunks.back().position >= cut) {
    accounts_.memory_bytes -= segment.chunks.back().chunk->capacity();
    segment.chunks.pop_back();
  }
  if (!segment.chunks.empty()) {
    internal::ChunkSlot& tail = segment.chunks.back();
    tail.used = std::min(tail.used, cut - tail.position);
  }
  if (segment.chunks.empty()) segment.memory_position = cut;
  // A failed write may have left some of the bytes in the file: a crash must not bring them
  // back. ENOSPC does not stop a shrinking truncate; if it fails anyway, the next write
  // overwrites them and recovery's offset and checksum checks cut what stays behind.
  const Status log_cut = segment.log_file->truncate_now(cut);
  const Status index_cut =
      segment.index_file->truncate_now(uint64_t{segment.index_written} * index_entry_bytes);
  if (!log_cut.ok() || !index_cut.ok()) {
    HARK_LOG_ERROR("partition %s: cannot truncate segment %020u after a failed commit",
                   options_.directory, segment.start.value());
  }
}

}  // namespace hark::storage
