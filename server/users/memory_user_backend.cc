#include "hark/server/users/memory_user_backend.h"

#include <utility>

namespace hark::server {

MemoryUserBackend::MemoryUserBackend(const UserTable& initial) : stored_(initial) {
  stored_.version = 0;
}

Result<Ref<UserTable>> MemoryUserBackend::load(UserPublisher& publisher) {
  std::lock_guard lock(mutex_);
  publisher_ = &publisher;
  return make_ref<UserTable>(stored_);
}

Result<UserBackend::Persisted> MemoryUserBackend::persist(const UserChange& change,
                                                          uint64_t /*base_version*/) {
  {
    std::lock_guard lock(mutex_);
    if (fail_next_) return std::exchange(fail_next_, std::nullopt).value();
    HARK_TRY(apply_change(stored_, change));
    changes_.push_back(change);
  }
  publisher_->publish(change);
  return Persisted::stored;
}

UserTable MemoryUserBackend::table() const {
  std::lock_guard lock(mutex_);
  return stored_;
}

std::vector<UserChange> MemoryUserBackend::changes() const {
  std::lock_guard lock(mutex_);
  return changes_;
}

void MemoryUserBackend::fail_next_persist(Error error) {
  std::lock_guard lock(mutex_);
  fail_next_ = error;
}

}  // namespace hark::server
