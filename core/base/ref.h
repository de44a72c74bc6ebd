#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace hark {

template <typename T>
class Ref;

// Intrusive, atomic reference counting for objects whose lifetime spans shards: immutable
// catalog snapshots every shard holds, partition cells an operation in flight still points
// at. The count lives in the object (one allocation, no control block, no weak references),
// and it is the only thing that changes after construction, so `T` must be immutable or
// synchronize itself. Copying a Ref is an atomic increment: hold one per operation, not per
// message. (docs/style.md §5 bans std::shared_ptr; this is the one way hark shares ownership.)
class RefCounted {
 public:
  void acquire() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  // True for the last reference. acq_rel, so the deleting thread sees every write made
  // before any other release.
  bool release() const { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

 protected:
  RefCounted() = default;
  // A copy is a new object: it starts without references.
  RefCounted(const RefCounted&) {}
  RefCounted& operator=(const RefCounted&) { return *this; }
  // Virtual so a Ref can delete through the base: a Ref<T> member works with `T` incomplete
  // where the owner is destroyed (public headers name internal types only by declaration).
  virtual ~RefCounted() = default;

 private:
  template <typename T>
  friend class Ref;

  mutable std::atomic<uint32_t> refs_{0};
};

// A counted reference to a `T` derived from RefCounted; deletes it with the last reference.
template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): a null Ref reads naturally.
  // Takes a reference on `object` (which may be fresh from `new`, with none yet).
  explicit Ref(T* object) : object_(object), counted_(object) {
    if (counted_ != nullptr) counted_->acquire();
  }
  Ref(const Ref& other) : object_(other.object_), counted_(other.counted_) {
    if (counted_ != nullptr) counted_->acquire();
  }
  Ref(Ref&& other) noexcept
      : object_(std::exchange(other.object_, nullptr)),
        counted_(std::exchange(other.counted_, nullptr)) {}
  // Ref<const T> from Ref<T>.
  template <typename U>
  Ref(Ref<U> other) noexcept  // NOLINT(google-explicit-constructor)
      : object_(other.object_), counted_(other.counted_) {
    other.object_ = nullptr;
    other.counted_ = nullptr;
  }
  Ref& operator=(Ref other) noexcept {
    std::swap(object_, other.object_);
    std::swap(counted_, other.counted_);
    return *this;
  }
  ~Ref() { reset(); }

  void reset() {
    object_ = nullptr;
    const RefCounted* const counted = std::exchange(counted_, nullptr);
    if (counted != nullptr && counted->release()) delete counted;
  }
  T* get() const { return object_; }
  T& operator*() const { return *object_; }
  T* operator->() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }

 private:
  template <typename U>
  friend class Ref;

  T* object_ = nullptr;
  const RefCounted* counted_ = nullptr;
};

template <typename T, typename... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

}  // namespace hark
