#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/server/users/user_backend.h"

namespace hark::server {

// Users kept in memory only: the fake the UserStore tests run on besides the users log, and
// a model for an embedder's or the cluster's backend (persist() applies the change, load()
// returns what was applied). Needs no disk: a new backend starts with no user (UserStore
// creates root) or from a table saved with table(). Thread-safe.
class MemoryUserBackend final : public UserBackend {
 public:
  // `initial`: the users to start from (say, another backend's table()); none by default.
  explicit MemoryUserBackend(const UserTable& initial = UserTable());

  Result<Ref<UserTable>> load(UserPublisher& publisher) override;
  Result<Persisted> persist(const UserChange& change, uint64_t base_version) override;
  std::string where() const override { return "memory"; }

  // What is stored now (version 0), a copy.
  UserTable table() const;
  // Every change persisted, in order.
  std::vector<UserChange> changes() const;
  // The next persist() fails with `error` and stores nothing (a full disk, an etcd outage).
  void fail_next_persist(Error error);

 private:
  mutable std::mutex mutex_;
  UserTable stored_;
  std::vector<UserChange> changes_;
  std::optional<Error> fail_next_;
  UserPublisher* publisher_ = nullptr;
};

}  // namespace hark::server
