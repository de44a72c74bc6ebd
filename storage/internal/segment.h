#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/base/units.h"
#include "hark/storage/chunk.h"
#include "hark/storage/disk.h"
#include "hark/storage/internal/file_ref.h"
#include "hark/storage/segment_format.h"

namespace hark::storage::internal {

// A run of a segment's bytes held in memory: [position, position + used) of the .log, at
// chunk->data() + lead. The lead is position's offset in its direct_block_bytes block, so file
// blocks and chunk blocks line up for O_DIRECT; the lead bytes are a copy of the file's bytes
// [position - lead, position) (never served), which a durable write of the first block carries
// again. `lead_missing`: they were not in memory when the chunk was made (after an open or a
// roll back); the writer reads them from the file before its first durable write from here.
struct ChunkSlot {
  uint64_t position = 0;
  ChunkRef chunk;
  uint64_t used = 0;
  uint64_t lead = 0;
  bool lead_missing = false;
  Instant made{};  // When add_chunk() made it (monotonic).

  // Where file position `at_position` is in the chunk. Requires:
  // position - lead <= at_position <= position + used.
  std::byte* at(uint64_t at_position) const {
    return chunk->data() + (at_position + lead - position);
  }
};

// Byte totals the log keeps across segments.
struct Accounts {
  uint64_t memory_bytes = 0;     // Capacity of every chunk the log holds.
  uint64_t unwritten_bytes = 0;  // Appended bytes not yet written to a .log.
  // Monotonic byte counts since open, for flush waiters: appended; written to a .log (or no
  // longer needing it: dropped by purge or retention); synced likewise.
  uint64_t appended_total = 0;
  uint64_t written_total = 0;
  uint64_t synced_total = 0;
};

// One segment of a partition log: its two files, its index in memory and the suffix of its
// bytes still in memory. Owned by the PartitionLog (owner shard only), a plain aggregate the log,
// its writer and its reader share.
//
// Invariants:
//   memory_position <= written_bytes <= size_bytes, synced_bytes <= written_bytes,
//   chunks cover [memory_position, size_bytes) contiguously,
//   index_synced <= index_written <= index.size().
// Bytes below memory_position are only on disk; nothing below written_bytes changes again.
struct Segment {
  Segment(Offset start_offset, std::string directory);

  Offset start;
  std::string log_path;
  std::string index_path;
  FileRef log_file;    // Null once a sealed segment is settled (PartitionLog::close_settled_files).
  FileRef index_file;  // Likewise.
  std::vector<IndexEntry> index;  // One entry per message, offsets increasing (gaps allowed).
  uint64_t size_bytes = 0;
  uint64_t written_bytes = 0;
  uint64_t synced_bytes = 0;
  size_t index_written = 0;
  size_t index_synced = 0;
  uint64_t memory_position = 0;
  // Durable writes (`always`): [0, prepared_bytes) of the .log is allocated, written and
  // synced (content, then zeros), so a durable write below it changes no file metadata;
  // extending it writes zeros from max(prepared_bytes, written_bytes) to zeroed_bytes first.
  uint64_t prepared_bytes = 0;
  uint64_t zeroed_bytes = 0;
  uint64_t zeros_limit = UINT64_MAX;  // Where writing zeros ahead failed: no reserve past it.
  std::deque<ChunkSlot> chunks;
  bool sealed = false;

  bool empty() const { return index.empty(); }
  // Every byte and index entry is written and synced: nothing will be written to its files.
  bool settled() const {
    return written_bytes == size_bytes && synced_bytes == size_bytes &&
           index_written == index.size() && index_synced == index.size();
  }
  Offset offset_of(const IndexEntry& entry) const { return start + entry.relative_offset; }
  // Requires: !empty().
  Offset last_offset() const { return offset_of(index.back()); }

  // Index of the first entry with offset >= `offset` (index.size() if none).
  size_t find(Offset offset) const;
  // The slot holding `position`, or nullptr if it is below memory_position (on disk only).
  const ChunkSlot* slot_at(uint64_t position) const;
  // Where the message at index[i] ends, as the index and the segment's size tell it.
  uint64_t entry_end(size_t i) const {
    return i + 1 < index.size() ? index[i + 1].position : size_bytes;
  }

  // Space for `bytes` more at the end of the segment: the tail chunk if they fit, else a new
  // chunk of max(chunk_bytes, bytes). commit() makes them part of the segment.
  std::span<std::byte> reserve(uint64_t bytes, uint64_t chunk_bytes, const Clock& clock,
                               Accounts& accounts);
  void commit(uint64_t bytes);
  // A new tail chunk for at least `bytes` after its lead (ChunkSlot), the lead copied from the
  // last. Its memory is ChunkMemory::huge_page when the last chunk was made within
  // streaming_fill_max (the partition is streaming: this one will fill too), else heap memory,
  // so a slow or idle partition keeps costing only the pages it has written.
  void add_chunk(uint64_t bytes, const Clock& clock, Accounts& accounts);

  // Drops every chunk (the segment leaves the log, or the log closes).
  void release_chunks(Accounts& accounts);
};

using Segments = std::deque<std::unique_ptr<Segment>>;

// A segment's next chunk gets huge-page memory when its last one was made at most this long
// before: the partition takes in at least a chunk's bytes (1 MiB by default) a second.
constexpr Duration streaming_fill_max = std::chrono::seconds(1);

// Drops the oldest chunks whose bytes are on disk (written; also synced when `synced_only`),
// never the tail chunk of the active segment, until the log holds at most `memory_bytes_max`.
void evict_chunks(Segments& segments, Accounts& accounts, uint64_t memory_bytes_max,
                  bool synced_only);

}  // namespace hark::storage::internal
