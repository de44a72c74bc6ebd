#include "hark/storage/segment_recovery.h"

#include <algorithm>

#include "hark/core/base/log.h"
#include "hark/core/base/message_layout.h"
#include "hark/storage/message_format.h"

namespace hark::storage {
namespace {

// Where a scan stands: the next position to check and the lowest offset it may hold.
struct ScanCursor {
  uint64_t position = 0;
  Offset offset_min;
};

// The first indexed entry at a position after `position`, or nullptr.
const IndexEntry* next_indexed(std::span<const IndexEntry> indexed, uint64_t position) {
  const auto it = std::upper_bound(
      indexed.begin(), indexed.end(), position,
      [](uint64_t value, const IndexEntry& entry) { return value < entry.position; });
  return it == indexed.end() ? nullptr : &*it;
}

bool fits_relative(Offset start, Offset offset) {
  return offset >= start && offset - start <= UINT32_MAX;
}

// Handles a complete but invalid message at `cursor`: returns true to continue scanning (the
// cursor moved past it), false to end the segment there, or an error to refuse.
Result<bool> handle_corrupt(const SegmentScan& scan, RecoveredSegment& out, ScanCursor& cursor) {
  const bool covered = !scan.indexed.empty() && scan.indexed.back().position >= cursor.position;
  if (!covered) return false;  // Never indexed: a torn tail, not damage.
  if (scan.policy == CorruptionPolicy::refuse) {
    HARK_LOG_ERROR(
        "segment %020u: corrupt message at position %u (offset >= %u); refusing to "
        "open (corruption policy: refuse)",
        scan.start.value(), cursor.position, cursor.offset_min.value());
    return Error::invalid_message_checksum;
  }
  const IndexEntry* next = next_indexed(scan.indexed, cursor.position);
  if (next == nullptr) return false;
  const Offset resume = scan.start + next->relative_offset;
  HARK_LOG_ERROR(
      "segment %020u: CORRUPT message(s) at position %u, offsets %u..%u are skipped "
      "and will never be served (corruption policy: skip)",
      scan.start.value(), cursor.position, cursor.offset_min.value(), resume.value());
  out.skipped_count++;
  cursor.position = next->position;
  cursor.offset_min = std::max(resume, cursor.offset_min);
  return true;
}

// Scans messages from `cursor` to the end of the tail, appending to out.entries. Returns the
// position where valid data ends.
Result<uint64_t> scan_tail(const SegmentScan& scan, RecoveredSegment& out, ScanCursor& cursor) {
  namespace layout = message_layout;
  while (cursor.position < scan.log_bytes) {
    const size_t at = static_cast<size_t>(cursor.position - scan.scan_from);
    CheckedMessage message = check_stored_message(scan.tail, at, cursor.offset_min);
    if (message.check == MessageCheck::ok && !fits_relative(scan.start, message.offset)) {
      message.check = MessageCheck::corrupt;
    }
    // A message that runs past the end although the index knows a later one has a damaged
    // size field: damage, not a torn tail.
    const bool indexed_later =
        !scan.indexed.empty() && scan.indexed.back().position > cursor.position;
    if (message.check == MessageCheck::incomplete && !indexed_later) return cursor.position;
    if (message.check != MessageCheck::ok) {
      HARK_TRY_ASSIGN(const bool resumed, handle_corrupt(scan, out, cursor));
      if (!resumed) return cursor.position;
      continue;
    }
    const std::span<const std::byte> header = scan.tail.subspan(at, layout::header_bytes);
    out.entries.push_back(
        IndexEntry{.relative_offset = static_cast<uint32_t>(message.offset - scan.start),
                   .position = static_cast<uint32_t>(cursor.position),
                   .timestamp = load_u64(header, layout::timestamp)});
    cursor.position += message.bytes;
    cursor.offset_min = message.offset + 1;
  }
  return cursor.position;
}

bool same_entries(std::span<const IndexEntry> a, std::span<const IndexEntry> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const IndexEntry& x, const IndexEntry& y) {
                      return x.relative_offset == y.relative_offset && x.position == y.position &&
                             x.timestamp == y.timestamp;
                    });
}

}  // namespace

std::vector<IndexEntry> decode_index(std::span<const std::byte> index_bytes, uint64_t log_bytes) {
  std::vector<IndexEntry> entries;
  entries.reserve(index_bytes.size() / index_entry_bytes);
  for (size_t at = 0; at + index_entry_bytes <= index_bytes.size(); at += index_entry_bytes) {
    const IndexEntry entry = decode_index_entry(index_bytes.subspan(at).first<index_entry_bytes>());
    if (entry.position >= log_bytes) break;
    if (!entries.empty() && (entry.relative_offset <= entries.back().relative_offset ||
                             entry.position <= entries.back().position)) {
      break;
    }
    entries.push_back(entry);
  }
  return entries;
}

Result<RecoveredSegment> scan_segment(const SegmentScan& scan) {
  HARK_ASSERT(scan.scan_from <= scan.log_bytes);
  HARK_ASSERT(scan.tail.size() == scan.log_bytes - scan.scan_from);
  RecoveredSegment out;
  ScanCursor cursor{.position = scan.scan_from, .offset_min = scan.start};
  // Entries before scan_from are kept as indexed (their messages are checked when read).
  for (const IndexEntry& entry : scan.indexed) {
    if (entry.position >= scan.scan_from) break;
    out.entries.push_back(entry);
    cursor.offset_min = scan.start + entry.relative_offset + 1;
  }
  HARK_TRY_ASSIGN(out.valid_bytes, scan_tail(scan, out, cursor));
  out.torn = out.valid_bytes < scan.log_bytes;
  const auto cut = scan.tail.subspan(static_cast<size_t>(out.valid_bytes - scan.scan_from));
  out.zeros_after = out.torn && std::all_of(cut.begin(), cut.end(),
                                            [](std::byte b) { return b == std::byte{0}; });
  out.first_lost = cursor.offset_min;
  out.index_changed = !same_entries(out.entries, scan.indexed);
  return out;
}

}  // namespace hark::storage
