#pragma once

#include <array>
#include <cstdint>

#include "hark/core/base/clock.h"
#include "hark/core/base/result.h"
#include "hark/io/completion.h"
#include "hark/io/timer_wheel.h"
#include "hark/storage/disk.h"
#include "hark/storage/internal/segment.h"
#include "hark/storage/log_options.h"
#include "hark/storage/read_view.h"

namespace hark::storage::internal {

// Writes a partition's appended bytes to its segment files in the background, one operation at
// a time and in log order: segment k's data, then its index, then (when a sync is wanted) its
// fdatasyncs, before anything of segment k+1. A sealed segment is always synced once before
// the next one is written, whatever the durability policy (one fdatasync per segment), so a
// crash cannot keep a later segment and lose an earlier one; within a segment, the index is
// written after the data it describes.
//
// The index is a cache recovery rebuilds from the .log, so in every durability mode its
// entries are not written after every data write: they wait until the segment seals, a sync or
// flush is wanted, a staging buffer's worth is unwritten, or flush_interval passed. A producer
// waits for its data write only; a second write per send (another io-wq round trip, on file
// systems that run buffered writes off the submitting thread) would cost every send a wake-up
// for nothing it needs. Under `always` that second write was once kept so recovery could tell
// damage from a torn tail in the newest messages too; it cost the woken consumer more than
// that was worth (docs/storage-format.md §Write order).
//
// Under `memory` it starts when flush_bytes are unwritten or flush_interval after the first
// unwritten byte; under every other policy as soon as bytes are appended and no operation is in
// flight, because the producer waits for the write: appends that arrive while an operation is
// in flight are written together after it (group commit). Under `interval` it also syncs every
// sync_interval. Once started it runs until everything is written. A failed operation (ENOSPC,
// EIO) keeps every byte in memory, sets failure() — the log rejects appends while it is set —
// logs once, and is retried every flush_interval; a failed sync rewinds the segment to its last
// synced position (the kernel may have dropped the dirty pages) as far as the bytes are still in
// memory.
//
// Under `always` the data is written with durable writes (DiskFile::write_durable: an O_DIRECT
// write with RWF_DSYNC, one operation that is the commit) of whole direct_block_bytes blocks,
// from the block holding the first unwritten byte (so the partial tail block is rewritten in
// place, its acknowledged bytes unchanged) to the end of the chunk slot, the bytes past the
// data zeroed. Durable writes go into the pre-written region of the .log
// (Segment::prepared_bytes): before one would pass it, zeros are written (buffered) and
// fdatasynced ahead of it, 1 MiB past what the write needs, and again whenever the writer is
// idle and less than half of that is left. Appends that arrive while a write is in flight are
// written together after it and share the next one. Index entries only ever describe durable
// data, and the index is synced when the segment seals or on an explicit flush.
//
// Owner shard only; its own io completion (one op in flight) and timers.
class LogWriter final : public io::Completion {
 public:
  // What the log hears from its writer, on the owner shard, from inside the writer's
  // completion (the next operation already started).
  class Observer {
   public:
    // A .log write or fdatasync completed: Segment::written_bytes or synced_bytes grew (the
    // commit point may move).
    virtual void log_progressed() = 0;
    // A sealed segment became settled (Segment::settled): its files are needed no more.
    virtual void sealed_settled() = 0;
    // A write or sync failed with `error` (after the writer rewound what it must rewrite).
    virtual void writes_failed(Error error) = 0;

   protected:
    ~Observer() = default;
  };

  // Everything borrowed must outlive the writer.
  LogWriter(Disk& disk, io::TimerWheel& timers, const Clock& timer_clock, const LogOptions& options,
            Segments& segments, Accounts& accounts, Observer& observer);
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Arms the sync timer (`interval`).
  void start();
  // `bytes` were appended to the active segment.
  void appended(uint64_t bytes);
  // `segment` is leaving the log (retention, purge): forget it. Its files stay open while the
  // operation in flight on them, if any, completes.
  void removed(Segment& segment);
  // Writes everything out (and fdatasyncs each file if `sync`), driving the disk until done
  // or an operation fails. Never from inside a completion.
  Status drain(bool sync);
  // Asynchronous drain: `done` hears once every byte appended so far is written (and synced
  // if `sync`), or of the failure that stopped it; before flush() returns if it already is.
  void flush(bool sync, FlushCompletion& done);
  // Cancels the timers and fails waiting flushes. Requires: !busy().
  void stop();
  // Starts the next operation if none is in flight; with nothing left to write, clears a
  // failure (purge dropped what could not be written).
  void kick();

  Error failure() const { return failure_; }
  bool busy() const { return in_flight_.kind != OpKind::none; }

  void complete(int32_t result, uint32_t flags) override;

 private:
  enum class OpKind : uint8_t {
    none,
    write_log,
    write_durable,
    write_index,
    sync_log,
    sync_index,
    write_zeros,
    sync_zeros
  };
  struct InFlight {
    OpKind kind = OpKind::none;
    Segment* segment = nullptr;  // Null once the segment left the log.
    FileRef file;                // Keeps the file open until the op completes.
    ChunkRef chunk;              // Keeps the written bytes alive.
    uint64_t until = 0;          // write: the position written from; sync: what it covers.
    uint64_t end = 0;  // write_durable: its last data byte + 1; write_zeros: what is needed.
  };

  class ActionTimer final : public io::Timer {
   public:
    ActionTimer(LogWriter& writer, void (LogWriter::*action)())
        : writer_(writer), action_(action) {}
    void expire() override { (writer_.*action_)(); }

   private:
    LogWriter& writer_;
    void (LogWriter::*action_)();
  };

  void sync_due();
  bool start_next();
  bool start_for(Segment& segment);
  void start_write_log(Segment& segment);
  void start_write_durable(Segment& segment);
  bool load_lead(Segment& segment, ChunkSlot& slot, uint64_t from);
  void start_prepare(Segment& segment, uint64_t needed);
  uint64_t prepare_cap(const Segment& segment) const;
  bool reserve_refused(InFlight& op, int32_t result);
  bool prepare_ahead(Segment& segment);
  // Whether `segment`'s unwritten index entries are written now; if not, the index timer is
  // armed to write them later.
  bool index_due(const Segment& segment, bool sealed);
  void index_due_now();
  void start_write_index(Segment& segment);
  void start_sync(Segment& segment, OpKind kind);
  void applied(InFlight& op, uint64_t result);
  void failed(InFlight& op, int32_t result);
  void arm(io::Timer& timer, Duration after);
  bool flushed(const FlushCompletion& waiter) const;
  bool always() const { return options_.durability == Durability::always; }
  // Producers wait for the write (every policy but `memory`): write at once.
  bool write_at_once() const { return options_.durability != Durability::memory; }
  void notify_flushed();
  void fail_flushes(Error error);

  // Durable writes: how far past what a write needs the .log is pre-written.
  static constexpr uint64_t prepare_ahead_bytes = 1 << 20;
  static constexpr size_t index_staging_entries = 4096;
  static constexpr uint64_t write_bytes_max = 8ull << 20;

  Disk& disk_;
  io::TimerWheel& timers_;
  const Clock& timer_clock_;
  const LogOptions& options_;
  Segments& segments_;
  Accounts& accounts_;
  Observer& observer_;
  InFlight in_flight_;
  IntrusiveList<FlushCompletion, FlushTag> flush_waiters_;
  bool sync_wanted_ = false;
  bool draining_ = false;      // No pre-writing ahead while a close or flush drains the writer.
  bool index_wanted_ = false;  // The index timer fired: write every index entry out.
  Error failure_ = Error::ok;
  ActionTimer flush_timer_{*this, &LogWriter::kick};
  ActionTimer retry_timer_{*this, &LogWriter::kick};
  ActionTimer sync_timer_{*this, &LogWriter::sync_due};
  ActionTimer index_timer_{*this, &LogWriter::index_due_now};
  std::array<std::byte, index_staging_entries * index_entry_bytes> index_staging_{};
};

}  // namespace hark::storage::internal
