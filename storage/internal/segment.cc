#include "hark/storage/internal/segment.h"

#include <algorithm>
#include <cstring>

namespace hark::storage::internal {

Segment::Segment(Offset start_offset, std::string directory)
    : start(start_offset),
      log_path(directory + "/" + segment_file_name(start_offset, ".log")),
      index_path(directory + "/" + segment_file_name(start_offset, ".index")) {}

size_t Segment::find(Offset offset) const {
  if (offset <= start) return 0;
  const uint64_t relative = offset - start;
  const auto it = std::lower_bound(
      index.begin(), index.end(), relative,
      [](const IndexEntry& entry, uint64_t value) { return entry.relative_offset < value; });
  return static_cast<size_t>(it - index.begin());
}

const ChunkSlot* Segment::slot_at(uint64_t position) const {
  if (position < memory_position || position >= size_bytes) return nullptr;
  // The slot with the greatest start position <= position.
  const auto it =
      std::upper_bound(chunks.begin(), chunks.end(), position,
                       [](uint64_t value, const ChunkSlot& slot) { return value < slot.position; });
  HARK_ASSERT(it != chunks.begin());
  const ChunkSlot& slot = *(it - 1);
  HARK_ASSERT(position < slot.position + slot.used);
  return &slot;
}

std::span<std::byte> Segment::reserve(uint64_t bytes, uint64_t chunk_bytes, const Clock& clock,
                                      Accounts& accounts) {
  HARK_ASSERT(!sealed);
  HARK_ASSERT(bytes > 0);
  if (chunks.empty() ||
      chunks.back().lead + chunks.back().used + bytes > chunks.back().chunk->capacity()) {
    add_chunk(std::max(chunk_bytes, bytes), clock, accounts);
  }
  ChunkSlot& tail = chunks.back();
  HARK_ASSERT(tail.position + tail.used == size_bytes);
  return {tail.at(size_bytes), static_cast<size_t>(bytes)};
}

void Segment::add_chunk(uint64_t bytes, const Clock& clock, Accounts& accounts) {
  const uint64_t lead = size_bytes % direct_block_bytes;
  const Instant now = clock.monotonic_now();
  const bool streaming = !chunks.empty() && now - chunks.back().made <= streaming_fill_max;
  const ChunkMemory memory = streaming ? ChunkMemory::huge_page : ChunkMemory::heap;
  ChunkSlot slot{.position = size_bytes,
                 .chunk = ChunkRef(Chunk::create(static_cast<size_t>(lead + bytes), memory)),
                 .used = 0,
                 .lead = lead,
                 .made = now};
  const uint64_t block_start = size_bytes - lead;
  if (lead > 0 && !chunks.empty()) {
    // The tail slot ends at size_bytes and its chunk holds its whole first block, so it holds
    // [block_start, size_bytes): valid unless they are its own missing lead.
    const ChunkSlot& previous = chunks.back();
    std::memcpy(slot.chunk->data(), previous.at(block_start), static_cast<size_t>(lead));
    slot.lead_missing = previous.lead_missing && block_start < previous.position;
  } else {
    slot.lead_missing = lead > 0;
  }
  accounts.memory_bytes += slot.chunk->capacity();
  chunks.push_back(std::move(slot));
}

void Segment::commit(uint64_t bytes) {
  ChunkSlot& tail = chunks.back();
  HARK_ASSERT(tail.lead + tail.used + bytes <= tail.chunk->capacity());
  tail.used += bytes;
  size_bytes += bytes;
}

void Segment::release_chunks(Accounts& accounts) {
  for (ChunkSlot& slot : chunks) accounts.memory_bytes -= slot.chunk->capacity();
  chunks.clear();
  memory_position = size_bytes;
}

void evict_chunks(Segments& segments, Accounts& accounts, uint64_t memory_bytes_max,
                  bool synced_only) {
  for (auto& segment : segments) {
    std::deque<ChunkSlot>& chunks = segment->chunks;
    const uint64_t on_disk = synced_only ? segment->synced_bytes : segment->written_bytes;
    while (accounts.memory_bytes > memory_bytes_max && !chunks.empty()) {
      const ChunkSlot& slot = chunks.front();
      const bool active_tail = !segment->sealed && chunks.size() == 1;
      // Older chunks go first, and they are written first: stop at the first that must stay.
      if (active_tail || slot.position + slot.used > on_disk) return;
      segment->memory_position = slot.position + slot.used;
      accounts.memory_bytes -= slot.chunk->capacity();
      chunks.pop_front();
    }
    if (accounts.memory_bytes <= memory_bytes_max) return;
  }
}

}  // namespace hark::storage::internal
