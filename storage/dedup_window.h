#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hark/core/base/message_layout.h"
#include "hark/core/base/units.h"

namespace hark::storage {

// A message's id as stored (message_layout::id: Iggy's little-endian u128). 0 is never stored:
// a send's id 0 gets a random UUID.
struct MessageId {
  uint64_t low = 0;
  uint64_t high = 0;

  bool is_zero() const { return low == 0 && high == 0; }
  bool operator==(const MessageId&) const = default;
  template <typename H>
  friend H AbslHashValue(H state, const MessageId& id) {
    return H::combine(std::move(state), id.low, id.high);
  }
};

// The id of the message starting at `at`. Requires: its header is in bounds.
inline MessageId message_id(std::span<const std::byte> bytes, size_t at) {
  return MessageId{.low = load_u64(bytes, at + message_layout::id),
                   .high = load_u64(bytes, at + message_layout::id + 8)};
}

// One partition log's message-id deduplication window (docs/cluster.md §The data path,
// Deduplication): the ids of the last `capacity` messages appended to the log, each with its
// offset. It is derived from the log alone, so every replica of a partition holds the same one
// and a follower that becomes leader deduplicates as its old leader did. A ring of the entries
// in offset order (the oldest leaves when a new one comes) and a flat map from id to offset
// for the lookup: at most `capacity` entries each (plus, while a batch is checked, its ids).
// Both grow as messages come, up to `capacity`. Owner shard only.
class DedupWindow {
 public:
  // 0: off (every call below is then a no-op and find() finds nothing).
  explicit DedupWindow(uint32_t capacity) : capacity_(capacity) {}

  bool enabled() const { return capacity_ > 0; }
  uint32_t capacity() const { return capacity_; }
  // Messages in the window (at most capacity()).
  size_t size() const { return size_; }

  // The offset of the message with `id` the window holds (or a claim() made for it).
  std::optional<Offset> find(const MessageId& id) const;
  // A message of a batch being appended will get `offset`, unless the window (or an earlier
  // message of the batch) holds `id`: then that one's offset is returned (the message is a
  // duplicate) and nothing changes. Otherwise later messages of the same batch with `id` find
  // the claim; add() confirms it, unclaim() withdraws it if the batch is refused. One lookup.
  std::optional<Offset> claim(const MessageId& id, Offset offset);
  void unclaim(const MessageId& id, Offset offset);
  // The message at `offset` (past every offset held) was appended with `id`; the oldest leaves
  // if the window is full.
  void add(const MessageId& id, Offset offset);
  // Messages at or after `end` were cut from the log (a roll-back or a truncation): their ids
  // leave.
  void cut(Offset end);
  void clear();

 private:
  struct Entry {
    MessageId id;
    Offset offset;
  };
  // Forgets `entry`'s id unless a newer message holds it.
  void forget(const Entry& entry);

  const uint32_t capacity_;
  absl::flat_hash_map<MessageId, Offset> offsets_;
  // The ring: entries_[head_] is the oldest; it grows to capacity_ before it wraps, so until
  // then head_ is 0 and the entries are entries_[0, size_).
  std::vector<Entry> entries_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace hark::storage
