// PartitionLog's commit point: the durable end (at append under `memory`, else when a write or,
// under `always`, an fdatasync completes), the replication rule that turns the members' durable
// ends into the commit point, the producers waiting for either, rolling back what a failed write
// or sync leaves uncommitted, a follower's truncation, and how far a read may see.
#include <algorithm>
#include <array>
#include <functional>
#include <span>

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

void PartitionLog::when_durable(Offset end, CommitCompletion& done) {
  HARK_ASSERT(end <= appended_end_);
  if (end <= durable_end_) {
    done.committed(ok_status());
    return;
  }
  HARK_ASSERT(durable_waiters_.empty() || durable_waiters_.back().end_ <= end);
  done.end_ = end;
  durable_waiters_.push_back(done);
}

Offset quorum_end(std::span<const Offset> durable_ends) {
  HARK_ASSERT(!durable_ends.empty() && durable_ends.size() <= PartitionLog::replicas_max);
  std::array<Offset, PartitionLog::replicas_max> sorted{};
  std::copy(durable_ends.begin(), durable_ends.end(), sorted.begin());
  const auto end = sorted.begin() + static_cast<std::ptrdiff_t>(durable_ends.size());
  // A majority is n/2 + 1 members: the (n/2 + 1)-th largest end is held by that many.
  const auto majority = sorted.begin() + static_cast<std::ptrdiff_t>(durable_ends.size() / 2);
  std::nth_element(sorted.begin(), majority, end, std::greater<>());
  // The leader counts only once durable itself: followers alone never commit past it.
  return std::min(*majority, durable_ends.front());
}

Offset PartitionLog::quorum_commit() const {
  Offset end = std::min(quorum_end(std::span(ends_).first(members_)), commit_cap_);
  for (uint32_t member = 1; member < members_; member++) {
    if ((in_sync_ & (1u << member)) != 0) end = std::min(end, ends_[member]);
  }
  return end;
}

void PartitionLog::advance_durable(Offset end) {
  if (end <= durable_end_) return;
  HARK_ASSERT(end <= appended_end_);
  durable_end_ = ends_[0] = end;
#ifdef HARK_MUTANT_ACK_AT_LOCAL_WRITE
  finish_commits(commit_waiters_, durable_end_, ok_status());  // Planted bug: no quorum.
#endif
#ifdef HARK_MUTANT_WAKE_AT_LOCAL_WRITE
  if (listener_ != nullptr) listener_->commit_advanced(durable_end_);  // Planted bug: no quorum.
#endif
  advance_commit(quorum_commit());
  // After the commit point: with one member a stored copy's completion (a move) then follows
  // the commit, as a send's does.
  finish_commits(durable_waiters_, durable_end_, ok_status());
}

Status PartitionLog::lead(uint32_t members) {
  if (members == 0 || members > replicas_max) return Error::invalid_replication_factor;
  members_ = members;
  in_sync_ = 1;
  std::fill(ends_.begin() + 1, ends_.end(), Offset(0));
  commit_cap_ = Offset(UINT64_MAX);
  advance_commit(quorum_commit());
  return ok_status();
}

void PartitionLog::set_in_sync(uint32_t mask) {
  in_sync_ = (mask | 1u) & ((1u << members_) - 1);
  advance_commit(quorum_commit());
}

void PartitionLog::recovered_commit(Offset end) {
  HARK_ASSERT(commit_waiters_.empty());
  next_offset_ = std::min(next_offset_, end);
}

void PartitionLog::follow() {
  members_ = 1;
  commit_cap_ = next_offset_;
}

Status PartitionLog::report_durable(uint32_t member, Offset end) {
  if (member == 0 || member >= members_) return Error::invalid_replication_factor;
  if (end > appended_end_) return Error::invalid_offset;
  if (end <= ends_[member]) return ok_status();
  ends_[member] = end;
  advance_commit(quorum_commit());
  return ok_status();
}

void PartitionLog::learn_commit(Offset leader_commit) {
  if (!following() || leader_commit <= commit_cap_) return;
  commit_cap_ = leader_commit;
  advance_commit(quorum_commit());
}

void PartitionLog::advance_commit(Offset end) {
  if (end <= next_offset_) return;
  HARK_ASSERT(end <= appended_end_);
  next_offset_ = end;
  // Readers first (the listener wakes parked polls), then the producers: both follow the
  // commit, and a consumer may see a message before its producer hears of it, never before it
  // is durable.
#ifdef HARK_MUTANT_WAKE_AT_LOCAL_WRITE
  if (listener_ != nullptr) listener_->commit_advanced(std::max(next_offset_, durable_end_));
#else
  if (listener_ != nullptr) listener_->commit_advanced(next_offset_);
#endif
  finish_commits(commit_waiters_, next_offset_, ok_status());
}

// What a read may see is the commit point's to decide: here, next to the rule, so that the
// mutant that serves consumers at the leader's own write is planted in this file alone.
Offset PartitionLog::read_end(ReadBound bound) const {
  if (bound == ReadBound::appended) return appended_end_;
#ifdef HARK_MUTANT_WAKE_AT_LOCAL_WRITE
  // Planted bug: a consumer woken at the leader's own write is served it, before a quorum.
  return std::max(next_offset_, durable_end_);
#else
  return next_offset_;
#endif
}

void PartitionLog::served(const ReadView& view, ReadBound bound) {
  // Bytes past the commit point handed out from memory must never be written over, even if a
  // failed write rolls them back (roll_back_to()).
  if (view.empty()) return;
#ifdef HARK_MUTANT_WAKE_AT_LOCAL_WRITE
  // The planted bug's committed reads pass the commit point too: it serves messages a failover
  // cuts, never bytes written over.
  if (bound != ReadBound::appended && view.last() < next_offset_) return;
#else
  if (bound != ReadBound::appended) return;
#endif
  served_end_ = std::max(served_end_, view.last() + 1);
}

void PartitionLog::finish_commits(IntrusiveList<CommitCompletion, CommitTag>& waiters, Offset up_to,
                                  Status status) {
  while (!waiters.empty() && waiters.front().end_ <= up_to) {
    CommitCompletion* done = waiters.pop_front();
    done->committed(status);
  }
}

void PartitionLog::finish_commits(Offset up_to, Status status) {
  finish_commits(durable_waiters_, up_to, status);
  finish_commits(commit_waiters_, up_to, status);
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
  advance_durable(commit_end());
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

void PartitionLog::roll_back() { roll_back_to(next_offset_); }

void PartitionLog::roll_back_to(Offset cut) {
  HARK_ASSERT(cut >= next_offset_);
  // Segments holding nothing kept go whole (a roll made them for the batches cut).
  while (segments_.size() > 1 && segments_.back()->start >= cut) {
    internal::Segment& segment = *segments_.back();
    writer_.removed(segment);
    segment.release_chunks(accounts_);
    remove_files(segment);
    segments_.pop_back();
    segments_.back()->sealed = false;
  }
  internal::Segment& active = *segments_.back();
  roll_back_segment(active, active.find(cut));
  // A follower may hold the bytes cut (an appended read): they are never written over, so new
  // appends go to a fresh chunk (the block they share copied).
  if (served_end_ > cut && !active.chunks.empty()) {
    active.add_chunk(options_.chunk_bytes, timer_clock_, accounts_);
  }
  appended_end_ = cut;
  window_.cut(cut);
  served_end_ = std::min(served_end_, cut);
  durable_end_ = std::min(durable_end_, cut);
  // Followers holding more than this log must truncate (report_durable() refuses their ends).
  for (Offset& end : ends_) end = std::min(end, cut);
}

Status PartitionLog::truncate(Offset end) {
  HARK_ASSERT(open_);
  if (end < next_offset_ || end > appended_end_) return Error::invalid_offset;
  if (end == appended_end_) return ok_status();
  // Nothing in flight, everything written and synced: only then may the files be cut.
  HARK_TRY(writer_.drain(true));
  if (end < next_offset_) return Error::invalid_offset;  // The drain's writes committed it.
  HARK_LOG_INFO("partition %s: truncated to offset %u (was %u)", options_.directory, end.value(),
                appended_end_.value());
  roll_back_to(end);
  // The cut ids left the window; the older ones it had evicted for them come back, so it is
  // again the window of the log it now holds (as a reopen would rebuild it). If the disk
  // refuses, it keeps what it holds, logged: a smaller window, never a cut id.
  const Status rebuilt = rebuild_window();
  if (!rebuilt.ok()) {
    HARK_LOG_ERROR("partition %s: its deduplication window could not be read back (%s)",
                   options_.directory, std::string(error_name(rebuilt.error())));
  }
  const internal::Segment& active = *segments_.back();
  if (!active.empty()) last_timestamp_ = active.index.back().timestamp;
  for (auto* waiters : {&durable_waiters_, &commit_waiters_}) {
    while (!waiters->empty() && waiters->back().end_ > end) {
      CommitCompletion& done = waiters->back();
      waiters->remove(done);
      // Never stored: a send cut by a new leader's epoch is retried there (retryable).
      done.committed(Error::shard_communication_error);
    }
  }
  return ok_status();
}

void PartitionLog::roll_back_segment(internal::Segment& segment, size_t keep_entries) {
  const uint64_t cut = keep_entries < segment.index.size() ? segment.index[keep_entries].position
                                                           : segment.size_bytes;
  // Bytes below the commit point are written (synced where eviction waits for the sync); bytes
  // above it may be too (a replicated log commits after its own write) and evicted: then every
  // chunk left starts past the cut and goes below.
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
