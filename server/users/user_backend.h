#pragma once

#include <string>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/server/users/user_records.h"

namespace hark::server {

// Where harkd's users are kept: the one thing that differs between a single node (the users
// log, JournalUserBackend), tests and embedders (MemoryUserBackend) and, later, a cluster
// (etcd). A backend only stores and loads UserChanges; every rule (who may change whom,
// name and password rules, limits, hashing) is UserStore's, above it, so every backend
// answers the same (docs/architecture.md §6).
//
// Thread-safety: UserStore calls persist() one change at a time (under its write lock), from
// AuthPool threads, and load() once, at open, before anything else. Control plane.
class UserBackend {
 public:
  virtual ~UserBackend() = default;

  // Every user as stored (no user at all the first time: UserStore then creates root). Its
  // version is 0. Blocking. Errors: the backend's (state_file_corrupted for damage).
  virtual Result<Ref<UserTable>> load() = 0;
  // Makes `change` durable before it returns; UserStore publishes the change only after
  // that, so a failed persist changes nothing anyone sees. Blocking. Errors: the backend's
  // (a file error, logged).
  virtual Status persist(const UserChange& change) = 0;
  // Where the users are, for log lines ("<data>/users.log", "memory").
  virtual std::string where() const = 0;

 protected:
  UserBackend() = default;
};

}  // namespace hark::server
