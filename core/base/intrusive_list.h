#pragma once

#include <cstddef>

#include "hark/core/base/assert.h"

namespace hark {

// The hook an object inherits to sit in an IntrusiveList. An object can be in one list per
// Tag: `struct Timer : ListHook<WheelTag>, ListHook<ExpiredTag> {}`. Inheriting (rather than a
// member) makes the hook-to-object step a plain static_cast, with no offset arithmetic.
template <typename Tag = void>
class ListHook {
 public:
  ListHook() = default;
  // A hook is tied to the address of its object: never copied along with it.
  ListHook(const ListHook&) : ListHook() {}
  ListHook& operator=(const ListHook&) { return *this; }

  bool linked() const { return next_ != nullptr; }

 private:
  template <typename T, typename U>
  friend class IntrusiveList;

  ListHook* prev_ = nullptr;
  ListHook* next_ = nullptr;
};

// A doubly linked list of objects that carry their own hook, so inserting and removing never
// allocate (timers, connections, waits). O(1) push, remove and splice. Not thread-safe: it
// belongs to one shard. The list does not own its items; it must be empty when destroyed.
template <typename T, typename Tag = void>
class IntrusiveList {
  using Hook = ListHook<Tag>;

 public:
  IntrusiveList() { head_.prev_ = head_.next_ = &head_; }
  IntrusiveList(const IntrusiveList&) = delete;
  IntrusiveList& operator=(const IntrusiveList&) = delete;
  ~IntrusiveList() { HARK_ASSERT(empty()); }

  bool empty() const { return head_.next_ == &head_; }
  size_t size() const { return size_; }

  void push_back(T& item) { insert_before(head_, item); }
  void push_front(T& item) { insert_before(*head_.next_, item); }

  T& front() {
    HARK_ASSERT(!empty());
    return owner(head_.next_);
  }
  T& back() {
    HARK_ASSERT(!empty());
    return owner(head_.prev_);
  }

  // Requires: item is in this list.
  void remove(T& item) {
    Hook& hook = item;
    HARK_ASSERT(hook.linked());
    hook.prev_->next_ = hook.next_;
    hook.next_->prev_ = hook.prev_;
    hook.prev_ = hook.next_ = nullptr;
    size_--;
  }

  T* pop_front() {
    if (empty()) return nullptr;
    T& item = owner(head_.next_);
    remove(item);
    return &item;
  }

  // Moves every item of `other` to the end of this list in O(1).
  void splice_back(IntrusiveList& other) {
    if (other.empty()) return;
    Hook* first = other.head_.next_;
    Hook* last = other.head_.prev_;
    first->prev_ = head_.prev_;
    head_.prev_->next_ = first;
    last->next_ = &head_;
    head_.prev_ = last;
    size_ += other.size_;
    other.head_.prev_ = other.head_.next_ = &other.head_;
    other.size_ = 0;
  }

  // Calls f(T&) for each item in order; f may remove the item it is given (and no other).
  template <typename F>
  void for_each(F&& f) {
    for (Hook* hook = head_.next_; hook != &head_;) {
      Hook* next = hook->next_;
      f(owner(hook));
      hook = next;
    }
  }

 private:
  static T& owner(Hook* hook) { return static_cast<T&>(*hook); }

  void insert_before(Hook& position, T& item) {
    Hook& hook = item;
    HARK_ASSERT(!hook.linked());
    hook.prev_ = position.prev_;
    hook.next_ = &position;
    position.prev_->next_ = &hook;
    position.prev_ = &hook;
    size_++;
  }

  Hook head_;
  size_t size_ = 0;
};

}  // namespace hark
