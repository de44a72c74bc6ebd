#include "hark/storage/internal/log_writer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "hark/core/base/log.h"

namespace hark::storage::internal {
namespace {

// The source of the zeros that pre-write a .log ahead of its durable writes.
constexpr size_t zeros_bytes = 1 << 20;
const std::array<std::byte, zeros_bytes> zeros{};

uint64_t block_floor(uint64_t position) {
  return position / direct_block_bytes * direct_block_bytes;
}
uint64_t block_ceil(uint64_t position) { return block_floor(position + direct_block_bytes - 1); }

}  // namespace

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
  draining_ = true;
  kick();
  while (busy()) disk_.drive();
  draining_ = false;
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
  timers_.cancel(index_timer_);
}

void LogWriter::kick() {
  if (busy()) return;
  timers_.cancel(flush_timer_);
  if (start_next()) return;
  sync_wanted_ = false;
  index_wanted_ = false;
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
    if (always()) {
      start_write_durable(segment);  // The commit, before any index entry is written.
    } else {
      start_write_log(segment);
    }
  } else if (always() && segment.synced_bytes < segment.written_bytes) {
    start_sync(segment, OpKind::sync_log);  // After a failed sync rewound the written end.
  } else if (index_due(segment, sealed)) {
    start_write_index(segment);
  } else if ((sync_wanted_ || sealed) && segment.synced_bytes < segment.written_bytes) {
    start_sync(segment, OpKind::sync_log);
  } else if ((sync_wanted_ || sealed) && segment.index_synced < segment.index_written) {
    start_sync(segment, OpKind::sync_index);
  } else {
    return prepare_ahead(segment);
  }
  return true;
}

bool LogWriter::index_due(const Segment& segment, bool sealed) {
  const size_t unwritten = segment.index.size() - segment.index_written;
  if (unwritten == 0) return false;
  if (sealed || sync_wanted_ || draining_ || index_wanted_ || unwritten >= index_staging_entries ||
      !flush_waiters_.empty()) {
    return true;
  }
  if (!index_timer_.armed()) arm(index_timer_, options_.flush_interval);
  return false;
}

void LogWriter::index_due_now() {
  index_wanted_ = true;
  kick();
}

void LogWriter::start_write_durable(Segment& segment) {
  ChunkSlot* slot = const_cast<ChunkSlot*>(segment.slot_at(segment.written_bytes));
  HARK_ASSERT(slot != nullptr);  // Unwritten bytes are never evicted.
  const uint64_t from = block_floor(segment.written_bytes);
  const uint64_t slot_end = slot->position + slot->used;
  const uint64_t end = std::min(slot_end, from + write_bytes_max);
  const uint64_t to = block_ceil(end);
  if (to > segment.prepared_bytes) {
    start_prepare(segment, to);
    return;
  }
  if (from < slot->position && slot->lead_missing && !load_lead(segment, *slot, from)) {
    return;  // Retried on the flush interval; nothing in flight meanwhile.
  }
  // Past the data: zeros, so the rest of the block holds no stale memory (recovery would cut
  // it anyway: it finds the end by content).
  std::memset(slot->at(end), 0, static_cast<size_t>(to - end));
  in_flight_ = InFlight{.kind = OpKind::write_durable,
                        .segment = &segment,
                        .file = segment.log_file.copy(),
                        .chunk = slot->chunk.copy(),
                        .until = segment.written_bytes,
                        .end = end};
  in_flight_.file->write_durable(std::span<const std::byte>(slot->at(from), to - from), from,
                                 *this);
}

bool LogWriter::load_lead(Segment& segment, ChunkSlot& slot, uint64_t from) {
  // Once per open or roll back, a partial block already on disk: blocking, like the open.
  const Status read = segment.log_file->read_now(
      std::span<std::byte>(slot.at(from), static_cast<size_t>(slot.position - from)), from);
  if (read.ok()) {
    slot.lead_missing = false;
    return true;
  }
  if (failure_ == Error::ok) {
    HARK_LOG_ERROR(
        "partition %s: cannot read the tail block of segment %020u back; appends "
        "are rejected, retrying every flush interval",
        options_.directory, segment.start.value());
  }
  failure_ = Error::cannot_save_messages_to_segment;
  arm(retry_timer_, options_.flush_interval);
  return false;
}

uint64_t LogWriter::prepare_cap(const Segment& segment) const {
  return std::min(block_ceil(options_.segment_bytes_max), segment.zeros_limit);
}

void LogWriter::start_prepare(Segment& segment, uint64_t needed) {
  const uint64_t target =
      std::max(needed, std::min(needed + prepare_ahead_bytes, prepare_cap(segment)));
  const uint64_t zero_from =
      std::max({segment.zeroed_bytes, segment.prepared_bytes, segment.written_bytes});
  if (zero_from >= target) {
    start_sync(segment, OpKind::sync_zeros);
    return;
  }
  // Up to `needed` first, then the reserve ahead, so a write that fails is one or the other.
  const uint64_t stop = zero_from < needed ? needed : target;
  const size_t length = static_cast<size_t>(std::min<uint64_t>(stop - zero_from, zeros_bytes));
  in_flight_ = InFlight{.kind = OpKind::write_zeros,
                        .segment = &segment,
                        .file = segment.log_file.copy(),
                        .until = zero_from,
                        .end = needed};
  in_flight_.file->write(std::span(zeros).first(length), zero_from, *this);
}

bool LogWriter::prepare_ahead(Segment& segment) {
  if (!always() || segment.sealed || draining_ || failure_ != Error::ok) return false;
  const uint64_t needed = block_ceil(segment.size_bytes);
  if (segment.prepared_bytes >= std::min(needed + prepare_ahead_bytes / 2, prepare_cap(segment))) {
    return false;
  }
  start_prepare(segment, needed);
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
  const std::span<const std::byte> bytes(slot->at(segment.written_bytes),
                                         static_cast<size_t>(length));
  in_flight_.file->write(bytes, segment.written_bytes, *this);
}

void LogWriter::start_write_index(Segment& segment) {
  const size_t count =
      std::min(segment.index.size() - segment.index_written, index_staging_entries);
  // What the timer asked for is on its way; entries appended from now on wait for their own.
  if (count == segment.index.size() - segment.index_written) index_wanted_ = false;
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
  const bool log = kind != OpKind::sync_index;
  const uint64_t until = kind == OpKind::sync_log     ? segment.written_bytes
                         : kind == OpKind::sync_zeros ? segment.zeroed_bytes
                                                      : segment.index_written;
  in_flight_ = InFlight{.kind = kind,
                        .segment = &segment,
                        .file = log ? segment.log_file.copy() : segment.index_file.copy(),
                        .until = until};
  in_flight_.file->datasync(*this);
}

void LogWriter::complete(int32_t result, uint32_t /*flags*/) {
  HARK_ASSERT(busy());
  InFlight op = std::exchange(in_flight_, InFlight{});
  // A write that moves nothing (or no whole index entry) would be retried at once forever:
  // treat it as a failure, retried on the flush interval.
  // A durable write starts at its block: it moves data once it passes the old written end.
  const uint64_t progress_min =
      op.kind == OpKind::write_index     ? index_entry_bytes
      : op.kind == OpKind::write_durable ? op.until - block_floor(op.until) + 1
      : op.kind == OpKind::write_log || op.kind == OpKind::write_zeros ? 1
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
  const bool log_op = op.kind == OpKind::write_log || op.kind == OpKind::sync_log ||
                      op.kind == OpKind::write_durable;
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
    case OpKind::write_durable: {
      // Durable once complete: written and synced move together.
      const uint64_t now = std::min(op.end, block_floor(op.until) + result);
      HARK_ASSERT(segment->written_bytes == op.until);
      accounts_.unwritten_bytes -= now - op.until;
      accounts_.written_total += now - op.until;
      accounts_.synced_total += now - segment->synced_bytes;
      segment->written_bytes = segment->synced_bytes = now;
      break;
    }
    case OpKind::sync_index: segment->index_synced = op.until; break;
    case OpKind::write_zeros: segment->zeroed_bytes = op.until + result; break;
    case OpKind::sync_zeros: segment->prepared_bytes = op.until; break;
    case OpKind::none: HARK_UNREACHABLE();
  }
}

bool LogWriter::reserve_refused(InFlight& op, int32_t result) {
  Segment* segment = op.segment;
  if (op.kind != OpKind::write_zeros || segment == nullptr || op.until < op.end) return false;
  // Zeros past what the commit needs (disk full, a file size limit): go on without a reserve
  // for this segment; each durable write then pre-writes just its own blocks.
  HARK_LOG_WARN(
      "partition %s: segment %020u: cannot pre-write zeros past %u (%s); durable "
      "writes go on without a reserve",
      options_.directory, segment->start.value(), op.until,
      result == 0 ? "no progress" : std::strerror(-result));
  segment->zeros_limit = op.until;
  kick();
  return true;
}

void LogWriter::failed(InFlight& op, int32_t result) {
  if (reserve_refused(op, result)) return;
  const bool sync =
      op.kind == OpKind::sync_log || op.kind == OpKind::sync_index || op.kind == OpKind::sync_zeros;
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
  if (op.kind == OpKind::sync_zeros && segment != nullptr) {
    segment->zeroed_bytes = segment->prepared_bytes;  // The zeros may be lost: write them again.
  } else if (sync && segment != nullptr) {
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
