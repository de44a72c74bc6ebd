// PartitionLog's message-id deduplication window (dedup_window.h; docs/cluster.md §The data
// path, Deduplication): dropping a send's duplicates, and rebuilding the window from the log.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "hark/storage/partition_log.h"

namespace hark::storage {

PartitionLog::Kept PartitionLog::drop_duplicates(std::span<const std::byte> messages,
                                                 uint32_t count, uint64_t bytes) {
  Kept kept{.messages = messages, .count = count, .bytes = bytes, .originals_end = Offset(0)};
  if (!window_.enabled()) return kept;
  // Each kept message claims its id at the offset it will get, so a later one of the batch
  // with the same id finds it as its original.
  uint32_t dropped = 0;
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    const MessageId id = message_id(messages, at);
    if (!id.is_zero()) {
      if (const std::optional<Offset> original = window_.claim(id, appended_end_ + (i - dropped))) {
        kept.originals_end = std::max(kept.originals_end, *original + 1);
        dropped++;
      }
    }
    at += static_cast<size_t>(message_bytes(messages, at));
  }
  if (dropped == 0) return kept;
  // A copy of the kept ones (a retry's path, rarely taken): a message is kept exactly when its
  // id is 0 or claimed at its own offset (an original's offset is always lower).
  kept.count = count - dropped;
  uint32_t taken = 0;
  at = 0;
  for (uint32_t i = 0; i < count; i++) {
    const size_t size = static_cast<size_t>(message_bytes(messages, at));
    const MessageId id = message_id(messages, at);
    if (id.is_zero() || window_.find(id) == appended_end_ + taken) {
      kept.compacted.insert(kept.compacted.end(), messages.begin() + static_cast<ptrdiff_t>(at),
                            messages.begin() + static_cast<ptrdiff_t>(at + size));
      taken++;
    }
    at += size;
  }
  HARK_ASSERT(taken == kept.count);
  kept.bytes = kept.compacted.size();
  kept.messages = kept.compacted;
  return kept;
}

void PartitionLog::unclaim(const Kept& kept) {
  size_t at = 0;
  for (uint32_t i = 0; i < kept.count; i++) {
    const MessageId id = message_id(kept.messages, at);
    if (!id.is_zero()) window_.unclaim(id, appended_end_ + i);
    at += static_cast<size_t>(message_bytes(kept.messages, at));
  }
}

Status PartitionLog::rebuild_window() {
  window_.clear();
  if (!window_.enabled()) return ok_status();
  // The newest messages first, from the newest segments, at most the window's size: bounded
  // whatever the log holds.
  struct Place {
    const internal::Segment* segment;
    size_t entry;
  };
  std::vector<Place> newest;
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    const internal::Segment& segment = **it;
    for (size_t entry = segment.index.size(); entry > 0; entry--) {
      if (newest.size() == window_.capacity()) break;
      newest.push_back(Place{.segment = &segment, .entry = entry - 1});
    }
    if (newest.size() == window_.capacity()) break;
  }
  // Oldest first, as they were appended. In memory the id is read there; below the memory
  // boundary the bytes are written (docs/architecture.md §storage), so the file has them.
  std::array<std::byte, message_layout::id + 16> head{};  // A header's first bytes, to its id.
  for (auto place = newest.rbegin(); place != newest.rend(); ++place) {
    const internal::Segment& segment = *place->segment;
    const IndexEntry& entry = segment.index[place->entry];
    if (const internal::ChunkSlot* slot = segment.slot_at(entry.position)) {
      std::memcpy(head.data(), slot->at(entry.position), head.size());
    } else {
      HARK_TRY_ASSIGN(const internal::FileRef file, file_for_read(segment));
      HARK_TRY(file->read_now(head, entry.position));
    }
    window_.add(message_id(head, 0), segment.offset_of(entry));
  }
  return ok_status();
}

}  // namespace hark::storage
