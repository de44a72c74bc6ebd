#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "hark/core/base/result.h"
#include "hark/core/broker/offset_written.h"
#include "hark/core/broker/operations.h"
#include "hark/io/completion.h"
#include "hark/io/ring.h"

namespace hark::core::internal {

// The stored consumer offsets of one partition: in memory, and in <partition>/consumer_offsets
// as 16-byte records [kind u8][0 u8 × 3][consumer id u32][offset u64] (offset UINT64_MAX: the
// consumer's offset was deleted), appended through the ring. A change is acknowledged (its
// OffsetWritten hears ok) only once its record is written — and fdatasynced when `sync` (the
// partition's durability is `always`) — so a process crash loses no acknowledged store. Changes
// made while a write is in flight share the next one. get() sees a change at once (the next
// poll of an auto-committing connection must); a failed write answers every waiting change
// with cannot_write_to_file or cannot_sync_file and puts memory back to what the file holds.
//
// The file stays small: when it would pass max(64 KiB, twice the live records), the next write
// is a compaction instead (every live offset written to <file>.tmp, fdatasynced when `sync`,
// renamed over the file, the directory fdatasynced when `sync`); a failed write makes the next
// one a compaction too, so bytes of a failed write never come back. Open reads the whole file,
// which compaction bounds. Owner shard only.
class OffsetStore final : private io::Completion {
 public:
  // Hears of every change's end in its place (the partition holds a replicated leader's
  // changes until its followers hold them too).
  class Listener {
   public:
    virtual void offset_written(OffsetWritten& done, Status status) = 0;

   protected:
    ~Listener() = default;
  };

  // Blocking: at partition open only. Errors: cannot_open_consumer_offsets_file,
  // cannot_read_consumer_offsets, cannot_write_to_file.
  static Result<std::unique_ptr<OffsetStore>> open(io::Ring& ring, const std::string& path,
                                                   bool sync);
  ~OffsetStore();
  OffsetStore(const OffsetStore&) = delete;
  OffsetStore& operator=(const OffsetStore&) = delete;

  std::optional<uint64_t> get(const ConsumerRef& consumer) const;
  // Calls fn(consumer, offset) for every stored offset (what get() answers).
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [consumer, offset] : offsets_) fn(consumer, offset);
  }
  void set(const ConsumerRef& consumer, uint64_t offset, OffsetWritten& done);
  // Returns false (and `done` hears nothing) if nothing was stored for `consumer`.
  bool erase(const ConsumerRef& consumer, OffsetWritten& done);
  // Makes the stored offsets exactly `wanted` (a follower taking its leader's): the changes go
  // out as one batch that `done` hears of. Returns false (and `done` hears nothing) if they
  // were `wanted` already.
  bool adopt(std::span<const std::pair<ConsumerRef, uint64_t>> wanted, OffsetWritten& done);
  // Forgets every offset (purge). Waits for the writes in flight and queued.
  void clear();
  // Waits until every change is written or failed (drives the ring: not from inside a
  // completion); rewrites the file from memory if a failed write left it behind.
  void close();

  void set_listener(Listener* listener) { listener_ = listener; }

  // For tests and metrics: the file's size, and compactions since open.
  uint64_t file_bytes() const { return size_; }
  uint64_t compactions() const { return compactions_; }

  // Compaction starts past max(compact_bytes_min, 2 × live records).
  static constexpr uint64_t compact_bytes_min = 64 << 10;

 private:
  using Offsets = absl::flat_hash_map<ConsumerRef, uint64_t>;
  // What the operation in flight is.
  enum class Step : uint8_t { idle, append, append_sync, compact_write, compact_sync, dir_sync };

  OffsetStore(io::Ring& ring, std::string path, int fd, bool sync)
      : ring_(ring), path_(std::move(path)), fd_(fd), sync_(sync) {}
  void record(const ConsumerRef& consumer, uint64_t offset, OffsetWritten& done);
  void start_next();
  bool compaction_due() const;
  void start_compaction();
  void submit_write();
  void complete(int32_t result, uint32_t flags) override;
  void advance(int32_t result);
  void compaction_written();
  void finish_batch();
  void fail(Error error, int32_t result);
  void written(OffsetWritten& done, Status status);

  io::Ring& ring_;
  const std::string path_;
  int fd_;
  const bool sync_;
  Offsets offsets_;  // What get() answers: every change, written or not.
  Offsets durable_;  // What the file holds.
  IntrusiveList<OffsetWritten, OffsetWrittenTag> waiters_;  // By sequence, increasing.
  std::vector<std::byte> queued_;                           // Records not yet submitted.
  std::vector<std::byte> in_flight_;  // The append or the compaction snapshot in flight.
  uint64_t written_ = 0;              // Bytes of in_flight_ written so far.
  uint64_t position_ = 0;             // Where in_flight_ goes in its file.
  int compact_fd_ = -1;               // <file>.tmp while compacting.
  uint64_t size_ = 0;                 // File size once in_flight_ is written.
  uint64_t sequence_ = 0;             // Of the last change.
  uint64_t batch_sequence_ = 0;       // Of the last change the operation in flight covers.
  uint64_t compactions_ = 0;
  Step step_ = Step::idle;
  Listener* listener_ = nullptr;
  bool dirty_ = false;  // A write failed: the file may hold bytes past size_.
};

}  // namespace hark::core::internal
