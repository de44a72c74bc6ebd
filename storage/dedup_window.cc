#include "hark/storage/dedup_window.h"

#include "hark/core/base/assert.h"

namespace hark::storage {

std::optional<Offset> DedupWindow::find(const MessageId& id) const {
  const auto it = offsets_.find(id);
  if (it == offsets_.end()) return std::nullopt;
  return it->second;
}

std::optional<Offset> DedupWindow::claim(const MessageId& id, Offset offset) {
  if (!enabled()) return std::nullopt;
  const auto [it, claimed] = offsets_.try_emplace(id, offset);
  if (claimed) return std::nullopt;
  return it->second;
}

void DedupWindow::unclaim(const MessageId& id, Offset offset) {
  forget(Entry{.id = id, .offset = offset});
}

void DedupWindow::add(const MessageId& id, Offset offset) {
  if (!enabled()) return;
  offsets_.insert_or_assign(id, offset);
  const Entry entry{.id = id, .offset = offset};
  if (size_ == capacity_) {
    forget(entries_[head_]);
    entries_[head_] = entry;
    head_ = (head_ + 1) % capacity_;
    return;
  }
  const size_t at = (head_ + size_) % capacity_;
  HARK_ASSERT(at <= entries_.size());
  if (at == entries_.size()) {
    entries_.push_back(entry);
  } else {
    entries_[at] = entry;
  }
  size_++;
}

void DedupWindow::cut(Offset end) {
  while (size_ > 0) {
    const Entry& newest = entries_[(head_ + size_ - 1) % capacity_];
    if (newest.offset < end) break;
    forget(newest);
    size_--;
  }
}

void DedupWindow::clear() {
  offsets_.clear();
  entries_.clear();
  head_ = size_ = 0;
}

void DedupWindow::forget(const Entry& entry) {
  const auto it = offsets_.find(entry.id);
  if (it != offsets_.end() && it->second == entry.offset) offsets_.erase(it);
}

}  // namespace hark::storage
