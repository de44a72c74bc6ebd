#pragma once

#include <atomic>

namespace hark::io {

// A node of an Inbox, embedded in the message it carries (a Task, a hand-back).
class InboxNode {
 public:
  InboxNode() = default;
  InboxNode(const InboxNode&) = delete;
  InboxNode& operator=(const InboxNode&) = delete;

 private:
  friend class Inbox;
  std::atomic<InboxNode*> next_{nullptr};
};

// A shard's intrusive lock-free queue of work from other threads (Vyukov's MPSC queue): any
// thread pushes with one atomic exchange, only the owning shard pops, and nothing allocates.
// A chain of nodes linked with link() is pushed with the same single exchange, so a shard
// handing back a hundred waiters to one home shard costs that shard one exchange.
//
// Concurrent: `head_` is the only word producers touch, with a seq_cst exchange, because the
// SleepGate handshake pairs it with the gate's state word (see sleep_gate.h): the sleeper's
// seq_cst load of `head_` after announcing sleep and the producer's exchange before reading
// the state cannot both miss each other. The link to the previous node is a release store,
// read with acquire by pop(). `tail_` and `stub_` belong to the consumer.
class Inbox {
 public:
  Inbox();
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // Any thread. `node` must not be in any inbox and must stay alive until popped.
  void push(InboxNode& node) { push_chain(node, node); }
  // Any thread. Pushes first..last, previously linked with link(), in one exchange.
  void push_chain(InboxNode& first, InboxNode& last);
  // Links `next` after `node` before a push_chain(). Producer side, before publishing.
  static void link(InboxNode& node, InboxNode& next) {
    node.next_.store(&next, std::memory_order_relaxed);
  }

  // Owner only. The oldest node, or nullptr when empty or when a producer is between its
  // exchange and its link (it finishes within a few instructions: the owner just polls again).
  InboxNode* pop();

  // True if every pushed node has been popped (a push in progress counts as non-empty). Exact
  // on the owner, whose re-check in the SleepGate handshake this is (seq_cst on `head_`); an
  // approximation on other threads (monitors). Both words matter: the owner re-pushes the stub
  // behind what it believes is the last node, and a producer may slip in just before it, so
  // `head_ == &stub_` alone can hold while nodes wait before the stub.
  bool empty() const {
    return tail_.load(std::memory_order_relaxed) == &stub_ &&
           head_.load(std::memory_order_seq_cst) == &stub_;
  }

 private:
  void push_stub();

  alignas(64) std::atomic<InboxNode*> head_;
  // Written only by the owner; atomic so that monitors on other threads may read it.
  alignas(64) std::atomic<InboxNode*> tail_;
  InboxNode stub_;
};

}  // namespace hark::io
