#include "hark/storage/internal/log_writer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "hark/core/base/log.h"

namespace hark::storage::internal {

LogWriter::LogWriter(Disk& disk, io::TimerWheel& timers, const Clock& timer_clock,
                     const LogOptions& options, Segments& segments, Accounts& accounts,
                     Observer& observer)
    : disk_(disk),
      timers_(timers),
      timer_clock_(timer_clock),
      options_(options),
      segments_(segments),
      accounts_(accounts),
      observer_(observer) {}

LogWriter::~LogWriter() {
  HARK_ASSERT(!busy());
  stop();
}

void LogWriter::start() {
  if (options_.durability == Durability::interval) arm(sync_timer_, options_.sync_interval);
}

void LogWriter::appended(uint64_t bytes) {
  accounts_.unwritten_bytes += bytes;
  accounts_.appended_total += bytes;
  // Outside `memory` the producer waits for the commit: write at once. If an operation is in
  // flight, kick() does nothing and these bytes ride the next write (group commit).
  if (write_at_once() || accounts_.unwritten_bytes >= options_.flush_bytes) {
    kick();
  } else if (!busy() && !flush_timer_.armed()) {
    arm(flush_timer_, options_.flush_interval);
  }
}

void LogWriter::removed(Segment& segment) {
  if (in_flight_.segment == &segment) in_flight_.segment = nullptr;
  HARK_ASSERT(accounts_.unwritten_bytes >= segment.size_bytes - segment.written_bytes);
  accounts_.unwritten_bytes -= segment.size_bytes - segment.written_bytes;
  // Its bytes no longer need writing or syncing: flush waiters count them as done.
  accounts_.written_total += segment.size_bytes - segment.written_bytes;
  accounts_.synced_total += segment.size_bytes - segment.synced_bytes;
  notify_flushed();
}

void LogWriter::flush(bool sync, FlushCompletion& done) {
  done.target_ = accounts_.appended_total;
  done.sync_ = sync;
  if (flushed(done)) {
    done.flushed(ok_status());
    return;
  }
  if (sync) sync_wanted_ = true;
  flush_waiters_.push_back(done);
  kick();
}

bool LogWriter::flushed(const FlushCompletion& waiter) const {
  return accounts_.written_total >= waiter.target_ &&
         (!waiter.sync_ || accounts_.synced_total >= waiter.target_);
}

void LogWriter::notify_flushed() {
  // Waiters are few (flush commands); a scan per completed operation is cheap.
  std::vector<FlushCompletion*> ready;
  flush_waiters_.for_each([&](FlushCompletion& waiter) {
    if (flushed(waiter)) ready.push_back(&waiter);
  });
  for (FlushCompletion* waiter : ready) {
    flush_waiters_.remove(*waiter);
    waiter->flushed(ok_status());
  }
}

void LogWriter::fail_flushes(Error error) {
  while (FlushCompletion* waiter = flush_waiters_.pop_front()) waiter->flushed(error);
}

Status LogWriter::drain(bool sync) {
  if (sync) sync_wanted_ = true;
  kick();
  while (busy()) disk_.drive();
  if (failure_ != Error::ok) return failure_;
  HARK_ASSERT(accounts_.unwritten_bytes == 0);
  return ok_status();
}

void LogWriter::stop() {
  HARK_ASSERT(!busy());
  fail_flushes(failure_ != Error::ok ? failure_ : Error::cannot_save_messages_to_segment);
  timers_.cancel(flush_timer_);
  timers_.cancel(retry_timer_);
  timers_.cancel(sync_timer_);
}

void LogWriter::kick() {
  if (busy()) return;
  timers_.cancel(flush_timer_);
  if (start_next()) return;
  sync_wanted_ = false;
  if (failure_ != Error::ok) {
    HARK_LOG_INFO("partition %s: nothing left to write; appends are accepted again",
                  options_.directory);
    failure_ = Error::ok;
    timers_.cancel(retry_timer_);
  }
}

void LogWriter::sync_due() {
  sync_wanted_ = true;
  kick();
  arm(sync_timer_, options_.sync_interval);
}

bool LogWriter::start_next() {
  for (auto& segment : segments_) {
    if (start_for(*segment)) return true;
  }
  return false;
}

bool LogWriter::start_for(Segment& segment) {
#ifdef HARK_MUTANT_NO_PREFIX_GUARD
  const bool sealed = false;  // Planted bug: sealed segments are not synced before the next.
#else
  const bool sealed = segment.sealed;
#endif
  if (segment.written_bytes < segment.size_bytes) {
    start_write_log(segment);
  } else if (always() && segment.synced_bytes < segment.written_bytes) {
    start_sync(segment, OpKind::sync_log);  // The commit, before any index entry is written.
  } else if (segment.index_written < segment.index.size()) {
    start_write_index(segment);
  } else if ((sync_wanted_ || sealed) && segment.synced_bytes < segment.written_bytes) {
    start_sync(segment, OpKind::sync_log);
  } else if ((sync_wanted_ || sealed) && segment.index_synced < segment.index_written) {
    start_sync(segment, OpKind::sync_index);
  } else {
    return false;
  }
  return true;
}

void LogWriter::start_write_log(Segment& segment) {
  const ChunkSlot* slot = segment.slot_at(segment.written_bytes);
  HARK_ASSERT(slot != nullptr);  // Unwritten bytes are never evicted.
  const uint64_t from = segment.written_bytes - slot->position;
  const uint64_t length = std::min(slot->used - from, write_bytes_max);
  in_flight_ = InFlight{.kind = OpKind::write_log,
                        .segment = &segment,
                        .file = segment.log_file.copy(),
                        .chunk = slot->chunk.copy(),
                        .until = segment.written_bytes};
  const std::span<const std::byte> bytes(slot->chunk->data() + from, static_cast<size_t>(length));
  in_flight_.file->write(bytes, segment.written_bytes, *this);
}

void LogWriter::start_write_index(Segment& segment) {
  const size_t count =
      std::min(segment.index.size() - segment.index_written, index_staging_entries);
  for (size_t i = 0; i < count; i++) {
    encode_index_entry(
        segment.index[segment.index_written + i],
        std::span(index_staging_).subspan(i * index_entry_bytes).first<index_entry_bytes>());
  }
  in_flight_ = InFlight{.kind = OpKind::write_index,
                        .segment = &segment,
                        .file = segment.index_file.copy(),
                        .until = segment.index_written};
  in_flight_.file->write(std::span(index_staging_).first(count * index_entry_bytes),
                         uint64_t{segment.index_written} * index_entry_bytes, *this);
}

void LogWriter::start_sync(Segment& segment, OpKind kind) {
  const bool log = kind == OpKind::sync_log;
  in_flight_ = InFlight{.kind = kind,
                        .segment = &segment,
                        .file = log ? segment.log_file.copy() : segment.index_file.copy(),
                        .until = log ? segment.written_bytes : segment.index_written};
  in_flight_.file->datasync(*this);
}

void LogWriter::complete(int32_t result, uint32_t /*flags*/) {
  HARK_ASSERT(busy());
  InFlight op = std::exchange(in_flight_, InFlight{});
  // A write that moves nothing (or no whole index entry) would be retried at once forever:
  // treat it as a failure, retried on the flush interval.
  const uint64_t progress_min = op.kind == OpKind::write_index ? index_entry_bytes
                                : op.kind == OpKind::write_log ? 1
                                                               : 0;
  if (result < 0 || static_cast<uint64_t>(result) < progress_min) {
    failed(op, result);
    return;
  }
  if (failure_ != Error::ok) {
    HARK_LOG_INFO("partition %s: background writes work again; appends are accepted",
                  options_.directory);
    failure_ = Error::ok;
  }
  applied(op, static_cast<uint64_t>(result));
  const bool settled = op.segment != nullptr && op.segment->sealed && op.segment->settled();
  // Under `interval` and `always` a failed sync rewrites from memory what it may have lost.
  evict_chunks(segments_, accounts_, options_.memory_bytes_max,
               options_.durability == Durability::interval || always());
  // The next operation starts before the log acknowledges anything, so the disk is never idle
  // while producers hear of their commit.
  kick();
  const bool log_op = op.kind == OpKind::write_log || op.kind == OpKind::sync_log;
  if (log_op && op.segment != nullptr) observer_.log_progressed();
  // After the commit moved: a sealed segment's files close once the next one holds a
  // committed message (PartitionLog::close_settled_files).
  if (settled) {
    op = InFlight{};  // Its reference to the file goes first, so the observer's close closes.
    observer_.sealed_settled();
  }
  if (!flush_waiters_.empty()) notify_flushed();
}

void LogWriter::applied(InFlight& op, uint64_t result) {
  Segment* segment = op.segment;
  if (segment == nullptr) return;  // It left the log while the op ran.
  switch (op.kind) {
    case OpKind::write_log:
      HARK_ASSERT(segment->written_bytes == op.until);
      segment->written_bytes += result;
      accounts_.unwritten_bytes -= result;
      accounts_.written_total += result;
      break;
    case OpKind::write_index:
      // A short write leaves part of an entry: it is written again, whole, next time.
      segment->index_written = op.until + result / index_entry_bytes;
      break;
    case OpKind::sync_log:
      accounts_.synced_total += op.until - segment->synced_bytes;
      segment->synced_bytes = op.until;
      break;
    case OpKind::sync_index: segment->index_synced = op.until; break;
    case OpKind::none: HARK_UNREACHABLE();
  }
}

void LogWriter::failed(InFlight& op, int32_t result) {
  const bool sync = op.kind == OpKind::sync_log || op.kind == OpKind::sync_index;
  const Error error = sync ? Error::cannot_sync_file : Error::cannot_save_messages_to_segment;
  if (failure_ == Error::ok) {
    HARK_LOG_ERROR(
        "partition %s: background %s failed (%s); appends are rejected, written data "
        "stays in memory and readable, retrying every flush interval",
        options_.directory, sync ? "fdatasync" : "write",
        result == 0 ? "no progress" : std::strerror(-result));
  }
  failure_ = error;
  fail_flushes(error);
  Segment* segment = op.segment;
  if (sync && segment != nullptr) {
    // After a failed fsync the kernel may have dropped the dirty pages: write them again from
    // memory, as far back as memory still reaches.
    const uint64_t rewind_to = std::max(segment->synced_bytes, segment->memory_position);
    accounts_.unwritten_bytes += segment->written_bytes - rewind_to;
    accounts_.written_total -= segment->written_bytes - rewind_to;
    segment->written_bytes = rewind_to;
    segment->index_written = segment->index_synced;
  }
  arm(retry_timer_, options_.flush_interval);
  observer_.writes_failed(error);
}

void LogWriter::arm(io::Timer& timer, Duration after) {
  timers_.cancel(timer);
  timers_.add(timer, saturating_add(timer_clock_.monotonic_now(), after));
}

}  // namespace hark::storage::internal
