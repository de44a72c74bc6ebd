#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/storage/log_options.h"
#include "hark/storage/segment_format.h"

namespace hark::storage {

// Recovery of one segment from the bytes of its files: pure functions over bytes, so the unit
// tests and the fuzzer drive them without a disk. PartitionLog::open() reads the files and
// applies the outcome (truncate, rewrite the index, drop later segments).
//
// The rules (docs/storage-format.md, "Recovery"):
// - The index is trusted up to its first structural fault (a partial entry, offsets or
//   positions not increasing, a position at or past the end of the .log).
// - The .log is scanned from `scan_from` (the last trusted entry, or 0 for a full check).
// - A message that runs past the end of the file is a torn tail (the segment ends before it),
//   unless the index holds a later message: then its size field is damaged.
// - A complete message that fails validation is a torn tail too if the index does not reach
//   it (the index is written after the data it covers, so it was never acknowledged as
//   written); if the index covers it, it is damage and `policy` decides: refuse, or skip to the
//   next indexed message.

// The longest structurally valid prefix of an .index file's bytes, for a .log of `log_bytes`.
std::vector<IndexEntry> decode_index(std::span<const std::byte> index_bytes, uint64_t log_bytes);

struct SegmentScan {
  Offset start;                         // The segment's start offset (its file name).
  std::span<const IndexEntry> indexed;  // decode_index() of its .index file.
  uint64_t log_bytes = 0;               // The .log file's size.
  uint64_t scan_from = 0;               // Position of the first byte in `tail`.
  std::span<const std::byte> tail;      // The .log's bytes [scan_from, log_bytes).
  CorruptionPolicy policy = CorruptionPolicy::refuse;
};

struct RecoveredSegment {
  std::vector<IndexEntry> entries;  // Every valid message, in order.
  uint64_t valid_bytes = 0;         // The .log's length after recovery (truncate to this).
  bool torn = false;                // valid_bytes < log_bytes: a torn tail was cut off.
  bool zeros_after = false;         // When torn: every byte cut is zero (pre-written region).
  Offset first_lost;                // When torn: the first offset that was lost.
  uint32_t skipped_count = 0;       // Corrupt messages skipped (policy skip).
  bool index_changed = false;       // `entries` differ from `indexed`: rewrite the .index.
};

// Requires: scan_from <= log_bytes, tail.size() == log_bytes - scan_from, and scan_from is 0 or
// the position of an entry in `indexed`. Returns Error::invalid_message_checksum for damage
// under CorruptionPolicy::refuse (logged with the offset); everything else is a value.
Result<RecoveredSegment> scan_segment(const SegmentScan& scan);

}  // namespace hark::storage
