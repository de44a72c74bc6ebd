#include "hark/io/inbox.h"

namespace hark::io {

Inbox::Inbox() : head_(&stub_), tail_(&stub_) {}

void Inbox::push_chain(InboxNode& first, InboxNode& last) {
  last.next_.store(nullptr, std::memory_order_relaxed);
  InboxNode* previous = head_.exchange(&last, std::memory_order_seq_cst);
  // Until this store, the consumer sees a gap after `previous` and waits for it.
  previous->next_.store(&first, std::memory_order_release);
}

void Inbox::push_stub() {
  stub_.next_.store(nullptr, std::memory_order_relaxed);
  InboxNode* previous = head_.exchange(&stub_, std::memory_order_seq_cst);
  previous->next_.store(&stub_, std::memory_order_release);
}

InboxNode* Inbox::pop() {
  InboxNode* tail = tail_.load(std::memory_order_relaxed);
  InboxNode* next = tail->next_.load(std::memory_order_acquire);
  if (tail == &stub_) {
    if (next == nullptr) return nullptr;
    tail_.store(next, std::memory_order_relaxed);
    tail = next;
    next = next->next_.load(std::memory_order_acquire);
  }
  if (next != nullptr) {
    tail_.store(next, std::memory_order_relaxed);
    return tail;
  }
  if (tail != head_.load(std::memory_order_acquire)) return nullptr;  // A push in progress.
  // `tail` is the last node: put the stub behind it so it can be handed out.
  push_stub();
  next = tail->next_.load(std::memory_order_acquire);
  if (next != nullptr) {
    tail_.store(next, std::memory_order_relaxed);
    return tail;
  }
  return nullptr;
}

}  // namespace hark::io
