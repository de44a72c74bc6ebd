#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/io/reactor.h"
#include "hark/io/timer_wheel.h"
#include "hark/storage/commit.h"
#include "hark/storage/dedup_window.h"
#include "hark/storage/disk.h"
#include "hark/storage/internal/disk_reader.h"
#include "hark/storage/internal/log_writer.h"
#include "hark/storage/internal/segment.h"
#include "hark/storage/log_options.h"
#include "hark/storage/message_format.h"
#include "hark/storage/read_view.h"
#include "hark/storage/segment_recovery.h"

namespace hark::storage {

// What a read may return (PartitionLog::read): committed messages (what consumers see), or
// everything appended, committed or not (a follower's fetch, docs/cluster.md §Replication).
enum class ReadBound : uint8_t { committed, appended };

struct AppendResult {
  Offset first;          // Offset of the batch's first message.
  uint32_t count = 0;    // Messages appended.
  uint64_t bytes = 0;    // Bytes appended.
  UnixMicros timestamp;  // The batch's server timestamp (one per batch).
  // Messages the deduplication window dropped (PartitionLog::append).
  uint32_t duplicates = 0;
  // The send is acknowledged once the commit point reaches this (when_committed()): the end
  // of what it appended, or past the newest original of a duplicate it dropped, whichever is
  // later (so a send of duplicates only is answered once its originals are committed).
  Offset acknowledge_end;
};

// What a log runs on: the disk seam, the timer wheel and its clock, and the clock that stamps
// messages. All borrowed; they must outlive the log.
struct LogEnvironment {
  Disk& disk;
  io::TimerWheel& timers;
  const Clock& timer_clock;  // The clock `timers` is advanced with (monotonic).
  Clock& clock;              // Message timestamps (realtime).
};

// One partition's append-only log: segments of Iggy-format messages with an index each, in
// `options.directory` (docs/storage-format.md). Owned by the partition's owner shard and used
// only on that shard's thread. Data plane: append, read and the accessors; control plane: open,
// roll, retention, purge, close.
//
// Commit (log_options.h): under `memory` a batch commits — is readable and counts in
// next_offset() — when append() returns and its bytes are written in the background
// (LogWriter). Under `write` and `interval` it commits when the write of its bytes completed,
// under `always` when the fdatasync covering them completed; batches appended while one is in
// flight share the next (group commit). Until then it is invisible: reads, next_offset() and
// first_offset() see committed messages only. Outside `memory` a failed write or sync rolls
// every uncommitted batch back (memory and file) and fails their CommitCompletions. Every
// advance is told to the CommitListener, then to the CommitCompletions it satisfies.
//
// Replication (docs/cluster.md §Replication, Built: the core side). Three ends: the appended
// end (append() moves it), the local durable end (what the writes above made durable on this
// log's disk) and the commit point, which is one rule for every log: quorum_end() of the
// durable ends of the replica set's members — this log's own (counted only once durable) and
// those its followers report — capped by the leader's commit point when this log follows one.
// A log opens as the only member of its set and uncapped: its commit point is its durable
// end, as without replication.
// Reads hand out ReadViews that reference immutable chunks (docs/architecture.md §storage).
//
// Lifecycle: open() -> (append | read | ...)* -> close(). The destructor closes if needed.
class PartitionLog final : private internal::LogWriter::Observer {
 public:
  // Opens (creating if absent) and recovers the partition in `options.directory`, locking it
  // (a second opener gets Error::cannot_open_database). Background writes and reads go through
  // `reactor.ring()`, flush and sync timers on `reactor.timers()`; `clock` stamps messages.
  // Errors: invalid_configuration, invalid_version
  // (an unknown or missing format file next to segments), invalid_message_checksum (damage
  // under CorruptionPolicy::refuse), invalid_offset (segments overlap), file errors.
  static Result<std::unique_ptr<PartitionLog>> open(io::Reactor& reactor, Clock& clock,
                                                    const LogOptions& options);
  // The same on an explicit environment (tests use a MemoryDisk and a bare TimerWheel).
  static Result<std::unique_ptr<PartitionLog>> open(const LogEnvironment& environment,
                                                    const LogOptions& options);

  ~PartitionLog();
  PartitionLog(const PartitionLog&) = delete;
  PartitionLog& operator=(const PartitionLog&) = delete;

  // Validates a send's messages blob (`count` messages back to back) and, if valid, copies it
  // into the log, stamps each message (offset, one timestamp per batch never below the
  // previous one, a random UUID for id 0, checksum) and commits it (under `memory`; otherwise
  // starts its write, and when_committed() hears of the commit). A rejected batch changes nothing.
  // With a deduplication window (options.dedup_window), a message whose id (not 0) is in the
  // window, or earlier in the same batch, is dropped first (result.duplicates); what is left
  // is appended (nothing, if every message was a duplicate: then result.count is 0).
  // Errors: the Iggy codes of validate_batch(); cannot_append_message when too many bytes wait to
  // be written; while background writes fail, the failure's code (cannot_save_messages_to_segment
  // or cannot_sync_file); file errors of a segment roll.
  Result<AppendResult> append(std::span<const std::byte> messages, uint32_t count);

  // Appends `count` messages exactly as another partition log stored them (what its read()
  // handed out: offsets, timestamps, ids, headers, payloads and checksums kept byte for byte),
  // for a partition's copy to its new owner (docs/cluster.md §Moves) and, later, a replica's
  // fetch. The batch must start at the log's end (appended, committed or not); an empty log
  // (no message retained or waiting) restarts at the batch's first offset instead, since the
  // source's retention may have deleted its head. Commits and completes like append() (per
  // durability: when_committed() hears of it); the result's timestamp is the batch's newest.
  // A refused batch changes nothing. Errors: those of validate_stored_batch();
  // invalid_offset also when the batch does not start at the log's end (a gap or an overlap),
  // timestamp_out_of_range when it starts before last_timestamp(); then append()'s.
  //
  // `source`: the sealed segment of the other log the batch comes from (sealed_segment_at()
  // there; a follower far behind its leader, docs/cluster.md §Catch-up). This log's segments
  // then start and end where the source's do: a batch starting at source->start starts a new
  // segment (unless the active one is empty), none rolls by size inside it, and the batch that
  // reaches source->end seals it. Copied from its start, the segment ends up the source's file
  // byte for byte. Error: invalid_offset also when the batch does not lie within `source`.
  Result<AppendResult> append_stored(std::span<const std::byte> messages, uint32_t count,
                                     std::optional<SegmentBounds> source = std::nullopt);
  // The sealed segment holding the first message at or after `offset` (below appended_end()),
  // or nullopt when that message is in the active segment or there is none.
  std::optional<SegmentBounds> sealed_segment_at(Offset offset) const;

  // The ids of the last options.dedup_window messages appended, committed or not (for tests
  // and figures).
  const DedupWindow& dedup_window() const { return window_; }

  // Calls `done.committed()` once every message below `end` is committed, or with the error
  // that rolled some of them back; before returning if they already are (always
  // under `memory`). Requires: `end` is at most the end of what was appended, and not
  // below the `end` of a completion still waiting (appends come in order).
  void when_committed(Offset end, CommitCompletion& done);
  // The same once every message below `end` is durable on this log (its durable end passed it),
  // whatever the commit point: a follower's stored copy is acknowledged to its fetcher there.
  void when_durable(Offset end, CommitCompletion& done);
  // Optional; hears every commit advance. Must outlive the log (or be reset to null first).
  void set_commit_listener(CommitListener* listener) { listener_ = listener; }

  // The commit point: the exclusive end of committed messages.
  Offset next_offset() const { return next_offset_; }
  // The exclusive end of what this log's own writes made durable (per durability mode).
  Offset durable_end() const { return durable_end_; }

  // Replication. At most this many members in a replica set (the log and its followers).
  static constexpr uint32_t replicas_max = 7;
  // Leads a replica set of `members` (this log and members - 1 followers, whose durable ends
  // start at 0 until report_durable()), uncapped. 1 is every log's default. The commit point
  // never goes back: it holds until the rule passes it. Error: invalid_replication_factor
  // (0 or more than replicas_max).
  Status lead(uint32_t members);
  // Leader: the members (bit i: member i; bit 0, this log, is always set) that are in sync
  // (docs/cluster.md §Replication, the in-sync set). The commit point then also waits for every
  // in-sync member, not only a majority: a new leader is chosen among them, so each must hold
  // everything committed. lead() resets it to this log alone.
  void set_in_sync(uint32_t mask);
  uint32_t in_sync() const { return in_sync_; }
  // Right after open only, before anything is served: a replicated log's checkpoint knows only
  // `end` (at most the recovered end) to be committed; the rest waits for the replica set.
  void recovered_commit(Offset end);
  // Follows a leader: the only member of its set, capped at the leader's commit point, which
  // starts at this log's commit point and rises with learn_commit().
  void follow();
  // Leader: follower `member` (1 .. replicas() - 1) holds every message below `end` durably
  // (its fetch from `end`). Ends only rise (a lower one is ignored). Errors:
  // invalid_replication_factor (no such member), invalid_offset (past appended_end(): the
  // follower holds what this log does not, as after a roll-back; it must truncate).
  Status report_durable(uint32_t member, Offset end);
  // Follower: the leader's commit point, from a fetch's answer (a lower one is ignored).
  void learn_commit(Offset leader_commit);
  uint32_t replicas() const { return members_; }
  const std::string& directory() const { return options_.directory; }
  bool following() const { return commit_cap_ != Offset(UINT64_MAX); }
  // Drops every message at or after `end` from memory and the files (a follower after a leader
  // change cuts what the new leader's epoch does not hold). Everything appended is written and
  // synced first, so a restart recovers the truncated log; completions waiting past `end` get
  // shard_communication_error (retryable: the new leader takes the send). Drives the reactor: never
  // call from a completion. Errors: invalid_offset
  // (`end` below the commit point, which never goes back, or past appended_end()), a write
  // failure.
  Status truncate(Offset end);
  // The end of what was appended (committed or not): the offset the next message gets.
  Offset appended_end() const { return appended_end_; }
  // The server timestamp of the last batch appended (committed or not); 0 before any.
  UnixMicros last_timestamp() const { return last_timestamp_; }
  Offset first_offset() const;
  bool empty() const { return first_offset() == next_offset_; }
  uint64_t size_bytes() const;
  uint32_t segments_count() const { return static_cast<uint32_t>(segments_.size()); }
  uint64_t messages_count() const;
  // Bumped by purge() (docs/long-polling.md: a parked poll registered in an older epoch is
  // answered).
  uint64_t epoch() const { return epoch_; }
  // Bytes of chunks held in memory, and bytes not yet written (for metrics and tests).
  uint64_t memory_bytes() const { return accounts_.memory_bytes; }
  uint64_t unwritten_bytes() const { return accounts_.unwritten_bytes; }
  // Error::ok, or why background writes fail (appends are rejected meanwhile).
  Error write_failure() const { return writer_.failure(); }

  // Reads up to `count` whole messages from the first with offset >= `start` (from the first
  // retained message if `start` is below it), stopping before `bytes_max` would be exceeded
  // but returning at least one message if there is one. A view is contiguous bytes, so a read
  // also stops at the end of a memory chunk, at the memory/disk boundary and at a segment's
  // end: callers wanting more read again from last() + 1. Calls `done.read_done()` once:
  // before returning when the bytes are in memory, else from a ring completion on this shard.
  // An empty view when start >= next_offset() or count == 0. Errors: cannot_read_file,
  // invalid_message_checksum (damage found on disk; never served). With ReadBound::appended
  // next_offset() is replaced by appended_end() (a follower's fetch); those bytes are never
  // reused, even if a failed write rolls them back.
  void read(Offset start, uint32_t count, uint64_t bytes_max, ReadCompletion& done,
            ReadBound bound = ReadBound::committed);

  // read() without I/O: the same view when the first message at or after `start` is in memory,
  // nullopt when it would have to come from disk. For the owner's read at wake-up, which must
  // not wait (docs/architecture.md §4).
  std::optional<ReadView> read_memory(Offset start, uint32_t count, uint64_t bytes_max,
                                      ReadBound bound = ReadBound::committed);

  // The first offset whose message timestamp is >= `timestamp`, or the offset the next
  // appended message gets if none. It may not be committed yet (every policy but `memory`): a
  // poll from it parks until it is. Binary searches the in-memory indexes: no I/O.
  Result<Offset> offset_for_timestamp(UnixMicros timestamp) const;

  // Drops every message and segment; the log restarts empty at offset 0 (Iggy 0.8.0) and the
  // epoch is bumped. Views already handed out stay valid.
  Status purge();
  // Deletes the oldest `count` sealed segments (fewer if fewer are sealed). Returns how many.
  Result<uint32_t> delete_segments(uint32_t count);
  // Applies options.retention_age and retention_bytes to sealed segments. Returns how many
  // segments were deleted. Also runs after each roll; the owner should call it periodically.
  Result<uint32_t> apply_retention();

  // Writes out everything appended so far, and fdatasyncs every file if `fsync`; returns the
  // background failure if one stops it. Drives the reactor: never call from a completion.
  Status flush(bool fsync);
  // The same without blocking: `done.flushed()` once the bytes appended before this call are
  // written (and their .log synced if `fsync`), or with the failure that stopped the writes
  // (they go on being retried). May complete before the call returns.
  void flush(bool fsync, FlushCompletion& done);
  // Writes out and syncs pending data (logging a failure), waits for in-flight disk
  // operations, releases memory, files and the directory lock. Drives the reactor: never call
  // from a completion. Idempotent.
  void close();

 private:
  PartitionLog(const LogEnvironment& environment, const LogOptions& options);

  Status recover();
  Status recover_segment(Offset start, bool& torn);
  // Closes the files of a recovered segment a committed one follows (synced first under
  // `always`), so opening a log with many segments never holds their files all at once.
  Status close_recovered(internal::Segment& segment);
  Status check_order(Offset start) const;
  Status apply_recovery(internal::Segment& segment, const RecoveredSegment& recovered,
                        uint64_t log_bytes, uint64_t index_bytes);
  Status check_format_file(bool has_segments);
  Status open_files(internal::Segment& segment, bool create);
  // Closes the files of sealed segments that are settled and can never be written again (the
  // segment after them starts at a committed offset, so a roll-back cannot make them active),
  // so a log keeps about two files open however many segments it has.
  void close_settled_files();
  // The .log a disk read of `segment` goes through: its own, or (closed) the one kept open for
  // reads, reopened when the read moves to another segment.
  Result<internal::FileRef> file_for_read(const internal::Segment& segment);
  Status add_segment(Offset start);
  Status maybe_roll(uint64_t bytes);
  // Seals the active segment and starts the next at appended_end() (then applies retention).
  Status roll();
  // For append_stored() with a source: a segment starts at appended_end() (a new one unless
  // the active segment is empty).
  Status start_segment_here();
  Status remove_segment_front();
  void remove_files(internal::Segment& segment);
  UnixMicros next_timestamp();
  // For append_stored(): restarts an empty log at `start` (its segments re-created there).
  Status restart_empty_at(Offset start);
  // Copies a validated batch of `bytes` to the end of the active segment (rolled first if
  // it would pass segment_bytes_max and `may_roll`), checking the unwritten bytes' bound;
  // returns the copy, for its index entries.
  Result<std::span<std::byte>> copy_in(std::span<const std::byte> messages, uint64_t bytes,
                                       bool may_roll = true);
  // What append() keeps of a batch once duplicates are dropped (dedup_window.h).
  struct Kept {
    std::span<const std::byte> messages;
    uint32_t count = 0;
    uint64_t bytes = 0;
    Offset originals_end;              // Past the newest original of a duplicate dropped.
    std::vector<std::byte> compacted;  // What `messages` points into when some were dropped.
  };
  // Drops from a validated batch the messages whose id is in the window or earlier in the
  // batch, claiming the ids of the others at the offsets they will get (append() confirms them
  // as it stamps, or withdraws them with unclaim() if the batch is refused).
  Kept drop_duplicates(std::span<const std::byte> messages, uint32_t count, uint64_t bytes);
  void unclaim(const Kept& kept);
  // Refills the window from the log's newest messages (at most options.dedup_window of them,
  // read from memory or, 16 bytes each, from disk): at open and after a truncation.
  Status rebuild_window();
  // Counts a copied and indexed batch of `count` messages as appended (committed at once under
  // `memory`, else its write starts).
  void finish_append(uint64_t bytes, uint32_t count);
  // Where `start` is: the segment and index entry of the first message at or after it, or
  // nullptr when there is none.
  std::pair<const internal::Segment*, size_t> locate(Offset start, Offset end) const;
  // The end a read with `bound` stops at; remembers an appended read's end (served_end_).
  Offset read_end(ReadBound bound) const;
  void served(const ReadView& view, ReadBound bound);
  ReadView read_from_memory(const internal::Segment& segment, size_t entry, uint32_t count,
                            uint64_t bytes_max, Offset end) const;
  void read_from_disk(const internal::Segment& segment, size_t entry, uint32_t count,
                      uint64_t bytes_max, Offset end, ReadCompletion& done);
  // LogWriter::Observer: outside `memory`, commits on a .log write (`always`: sync) and rolls
  // back on a failure.
  void log_progressed() override;
  void sealed_settled() override { close_settled_files(); }
  void writes_failed(Error error) override;
  // The end of what the commit point may cover: the whole messages in each segment's written
  // prefix (synced prefix under `always`).
  Offset commit_end() const;
  // The local durable end moved to `end`: the commit point follows the rule.
  void advance_durable(Offset end);
  // The replication rule: quorum_end() of the members' durable ends, capped (see the class).
  Offset quorum_commit() const;
  void advance_commit(Offset end);
  // Completes, in order, the CommitCompletions waiting in `waiters` whose end is at most `up_to`.
  static void finish_commits(IntrusiveList<CommitCompletion, CommitTag>& waiters, Offset up_to,
                             Status status);
  void finish_commits(Offset up_to, Status status);
  // Drops every uncommitted message from memory and, as far as it can, from the files.
  void roll_back();
  // Drops every message at or after `cut` (>= the commit point), as roll_back() does.
  void roll_back_to(Offset cut);
  void roll_back_segment(internal::Segment& segment, size_t keep_entries);

  std::unique_ptr<Disk> owned_disk_;  // Set by the reactor overload of open().
  Disk& disk_;
  io::TimerWheel& timers_;
  const Clock& timer_clock_;
  Clock& clock_;
  const LogOptions options_;
  std::unique_ptr<DirectoryLock> lock_;
  internal::Segments segments_;
  internal::Accounts accounts_;
  internal::LogWriter writer_;
  internal::DiskReader reader_;
  // The .log of the closed sealed segment starting at read_file_start_ that disk reads last
  // needed (one per log: a reader of old data moves through one segment at a time).
  internal::FileRef read_file_;
  Offset read_file_start_;
  IdGenerator ids_;
  DedupWindow window_;
  CommitListener* listener_ = nullptr;
  IntrusiveList<CommitCompletion, CommitTag> commit_waiters_;   // By end, increasing.
  IntrusiveList<CommitCompletion, CommitTag> durable_waiters_;  // By end, increasing.
  Offset next_offset_;                                          // Committed end.
  Offset durable_end_;  // What this log's own writes made durable.
  // The replica set: durable ends of its members, this log's first (== durable_end_).
  std::array<Offset, replicas_max> ends_{};
  uint32_t members_ = 1;
  uint32_t in_sync_ = 1;
  Offset commit_cap_{UINT64_MAX};  // A follower's: the leader's commit point it learned.
  Offset served_end_;              // The end of what an appended read handed out.
  Offset appended_end_;            // Offset the next appended message gets (== next_offset_ unless
                                   // batches wait for their write or fdatasync).
  UnixMicros last_timestamp_ = 0;
  uint64_t epoch_ = 0;
  bool open_ = false;
};

}  // namespace hark::storage
