// PartitionLog's segment management: rolls, retention, delete-segments, purge.
#include <algorithm>
#include <chrono>

#include "hark/core/base/log.h"
#include "hark/storage/partition_log.h"

namespace hark::storage {

Status PartitionLog::add_segment(Offset start) {
  auto segment = std::make_unique<internal::Segment>(start, options_.directory);
  HARK_TRY(open_files(*segment, true));
  // A new segment starts empty even if a file of that name was left behind.
  HARK_TRY(segment->log_file->truncate_now(0));
  HARK_TRY(segment->index_file->truncate_now(0));
  segments_.push_back(std::move(segment));
  return ok_status();
}

Status PartitionLog::maybe_roll(uint64_t bytes) {
  if (segments_.empty()) return add_segment(appended_end_);  // A purge that could not re-create.
  const internal::Segment& active = *segments_.back();
  if (active.size_bytes == 0 || active.size_bytes + bytes <= options_.segment_bytes_max) {
    return ok_status();
  }
  return roll();
}

Status PartitionLog::start_segment_here() {
  if (!segments_.empty() && segments_.back()->empty() && segments_.back()->start == appended_end_) {
    return ok_status();
  }
  return roll();
}

Status PartitionLog::roll() {
  // Opening two files blocks the shard briefly, once per segment_bytes_max of data.
  HARK_TRY(add_segment(appended_end_));
  if (segments_.size() < 2) return ok_status();  // A purge that could not re-create.
  segments_[segments_.size() - 2]->sealed = true;
  HARK_LOG_DEBUG("partition %s: rolled to segment %020u", options_.directory,
                 appended_end_.value());
  const Result<uint32_t> deleted = apply_retention();
  if (!deleted.ok()) {
    HARK_LOG_WARN("partition %s: retention after a roll failed", options_.directory);
  }
  return ok_status();
}

void PartitionLog::remove_files(internal::Segment& segment) {
  // A failure is logged by the disk; the files then reappear at the next open, where recovery
  // takes them back as the oldest segments. Nothing is lost, so carry on.
  (void)disk_.remove(segment.log_path);
  (void)disk_.remove(segment.index_path);
}

Status PartitionLog::remove_segment_front() {
  HARK_ASSERT(!segments_.empty());
  internal::Segment& segment = *segments_.front();
  writer_.removed(segment);
  segment.release_chunks(accounts_);
  remove_files(segment);
  if (read_file_ && read_file_start_ == segment.start) read_file_.reset();
  // Views already handed out keep their chunks; in-flight reads and writes keep the file.
  segments_.pop_front();
  return ok_status();
}

std::optional<SegmentBounds> PartitionLog::sealed_segment_at(Offset offset) const {
  const auto [segment, entry] = locate(offset, appended_end_);
  if (segment == nullptr || !segment->sealed) return std::nullopt;
  // Sealed: a segment follows it, whose start is the end of its offsets.
  const auto it = std::upper_bound(
      segments_.begin(), segments_.end(), segment->start,
      [](Offset value, const auto& candidate) { return value < candidate->start; });
  if (it == segments_.end()) return std::nullopt;
  return SegmentBounds{.start = segment->start, .end = (*it)->start};
}

Result<uint32_t> PartitionLog::delete_segments(uint32_t count) {
  HARK_ASSERT(open_);
  uint32_t deleted = 0;
  // Only sealed ones, never the active; and only ones whose messages all committed.
  while (deleted < count && segments_.size() > 1 && segments_[1]->start <= next_offset_) {
    HARK_TRY(remove_segment_front());
    deleted++;
  }
  return deleted;
}

void PartitionLog::close_settled_files() {
  // Sealed segments settle, and so close, oldest first: the ones still open are the newest
  // before the active one. Scanning back from there stops at the first closed one, so this
  // costs O(1) per call in the steady state (it runs after every write, log_progressed).
  if (segments_.size() < 2) return;
  for (size_t i = segments_.size() - 1; i-- > 0;) {
    internal::Segment& segment = *segments_[i];
    if (!segment.log_file) break;
    if (!segment.sealed || !segment.settled()) continue;
    if (segments_[i + 1]->start >= next_offset_) continue;  // roll_back() may reopen it.
    segment.log_file.reset();  // An operation in flight keeps its own reference.
    segment.index_file.reset();
  }
}

Result<uint32_t> PartitionLog::apply_retention() {
  HARK_ASSERT(open_);
  close_settled_files();
  const UnixMicros now = clock_.realtime_now();
  const auto age_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(options_.retention_age).count());
  uint32_t deleted = 0;
  while (segments_.size() > 1 && segments_[1]->start <= next_offset_) {
    const internal::Segment& oldest = *segments_.front();
    const bool too_old =
        age_us > 0 && (oldest.empty() || oldest.index.back().timestamp + age_us <= now);
    const bool too_big = options_.retention_bytes > 0 && size_bytes() > options_.retention_bytes;
    if (!too_old && !too_big) break;
    HARK_LOG_INFO("partition %s: retention deletes segment %020u (%s)", options_.directory,
                  oldest.start.value(), too_old ? "age" : "size");
    HARK_TRY(remove_segment_front());
    deleted++;
  }
  return deleted;
}

Status PartitionLog::purge() {
  HARK_ASSERT(open_);
  while (!segments_.empty()) HARK_TRY(remove_segment_front());
  next_offset_ = appended_end_ = durable_end_ = served_end_ = Offset(0);
  window_.clear();
  ends_.fill(Offset(0));
  if (following()) commit_cap_ = Offset(0);  // The leader's log restarts at 0 as well.
  // Batches waiting for their commit were dropped with the rest, as if committed first.
  finish_commits(Offset(UINT64_MAX), ok_status());
  epoch_++;
  writer_.kick();  // Clears a write failure that had only the purged data left to write.
  HARK_TRY(add_segment(Offset(0)));
  HARK_LOG_INFO("partition %s: purged (epoch %u)", options_.directory, epoch_);
  return ok_status();
}

}  // namespace hark::storage
