#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hark/core/base/units.h"

namespace hark::storage {

// The on-disk layout of a partition directory. docs/storage-format.md gives every byte; a
// change here changes that page in the same commit.
//
//   <dir>/format                       "hark-partition-log 2\n": the format version
//   <dir>/<start_offset:020>.log       messages back to back, Iggy's classic format
//   <dir>/<start_offset:020>.index     one 16-byte IndexEntry per message of the .log

// The version file's name and its exact content. Version 2 (durable writes) lets a .log hold
// pre-written zeros after its data; a version-1 directory holds none, so it reads as version 2
// and is marked version 2 at open, before anything is written (a build that reads only
// version 1 would take a sealed segment's zeros for a torn tail and drop the later segments:
// it refuses the directory instead).
inline constexpr std::string_view format_file_name = "format";
inline constexpr std::string_view format_file_content = "hark-partition-log 2\n";
inline constexpr std::string_view format_file_content_v1 = "hark-partition-log 1\n";

// One message in a segment, as stored in the .index file (little-endian, no padding):
//   [0..4)  relative_offset u32   offset - segment start offset
//   [4..8)  position u32          byte position of the message's first byte in the .log
//   [8..16) timestamp u64         the message's server timestamp, µs since the epoch
// Offsets and positions strictly increase within a file. An offset may be missing (a corrupt
// message skipped at recovery), so readers search rather than index by offset.
struct IndexEntry {
  uint32_t relative_offset = 0;
  uint32_t position = 0;
  uint64_t timestamp = 0;
};

inline constexpr size_t index_entry_bytes = 16;

void encode_index_entry(const IndexEntry& entry, std::span<std::byte, index_entry_bytes> bytes);
IndexEntry decode_index_entry(std::span<const std::byte, index_entry_bytes> bytes);

// "00000000000000001234.log" for start 1234 and suffix ".log".
std::string segment_file_name(Offset start, std::string_view suffix);

// The start offset in a segment's .log name, or nullopt if `name` is not one.
std::optional<Offset> parse_log_file_name(std::string_view name);

// A sealed segment of a log: its first offset and the next segment's first, the end of its
// offsets (PartitionLog::sealed_segment_at, append_stored; a replica fetch carries it).
struct SegmentBounds {
  Offset start;
  Offset end;
};

}  // namespace hark::storage
