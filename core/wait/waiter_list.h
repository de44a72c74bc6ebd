#pragma once

#include <atomic>

#include "hark/core/wait/wait.h"

namespace hark::core {

// The registrations parked on one partition, as a Treiber stack: any shard pushes with a CAS,
// only the partition's owner drains, by exchanging the head with null. Nothing is ever popped
// singly, so there is no ABA problem, and a registration is never touched by the list after
// the drain hands it to the owner.
//
// Concurrent: `head_` only. seq_cst on the push and the drain, because they pair with the
// partition's next_offset (CommitPoint): a home's push-then-re-check and an owner's
// publish-then-drain must not both miss each other (docs/architecture.md §4; the Relacy model in
// tests/core shows release/acquire losing a wake-up). A registration's `next_` is a plain
// field written before the push's CAS and read after the drain's exchange.
class WaiterList {
 public:
  WaiterList() = default;
  WaiterList(const WaiterList&) = delete;
  WaiterList& operator=(const WaiterList&) = delete;

  // Any shard.
  void push(Registration& registration) {
    Registration* head = head_.load(std::memory_order_relaxed);
    do {
      registration.next_ = head;
    } while (!head_.compare_exchange_weak(head, &registration, std::memory_order_seq_cst,
                                          std::memory_order_relaxed));
  }

  // Owner only. Everything pushed so far, newest first, linked through next().
  Registration* drain() { return head_.exchange(nullptr, std::memory_order_seq_cst); }

  static Registration* next(const Registration& registration) { return registration.next_; }

  // Owner: true if nothing was pushed since the last drain. seq_cst, so that skipping the drain
  // of an empty list after publishing a commit pairs with a home's push-then-re-check (a
  // Dekker pattern: with release/acquire both sides may miss each other). Other threads: a hint.
  bool empty() const { return head_.load(std::memory_order_seq_cst) == nullptr; }

 private:
  std::atomic<Registration*> head_{nullptr};
};

}  // namespace hark::core
