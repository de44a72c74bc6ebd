#pragma once

#include <cstdint>
#include <string>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/server/users/user_records.h"

namespace hark::server {

// Where a backend hands every change it stored, in the order stored: UserStore, which
// publishes each as the next table (version + 1).
class UserPublisher {
 public:
  // Never blocks (a copy of the table and a short lock); called by one thread at a time.
  virtual void publish(const UserChange& change) = 0;
  // The published table's version.
  virtual uint64_t version() const = 0;
  // The published table.
  virtual Ref<const UserTable> table() const = 0;

 protected:
  ~UserPublisher() = default;
};

// Where harkd's users are kept: the one thing that differs between a single node (the users
// log, JournalUserBackend), tests and embedders (MemoryUserBackend) and a cluster (the
// metadata journal in etcd, cluster::ClusterUserBackend). A backend only stores and loads
// UserChanges; every rule (who may change whom, name and password rules, limits, hashing) is
// UserStore's, above it, so every backend answers the same (docs/architecture.md §6).
//
// One mechanism publishes: a backend hands each change it stored to its UserPublisher, its
// own from persist() (before persist returns) and, for a shared backend, every other
// writer's as they arrive, in one order on every node.
//
// Thread-safety: UserStore calls persist() one change at a time (under its write lock), from
// AuthPool threads, and load() once, at open, before anything else. Control plane.
class UserBackend {
 public:
  enum class Persisted : uint8_t {
    stored,  // Durable and published.
    stale,   // Nothing stored: another writer's change was published since `base_version`,
             // so the change is checked again against the newer table (UserStore retries).
  };

  virtual ~UserBackend() = default;

  // Every user as stored (no user at all the first time: UserStore then creates root). Its
  // version is 0. Keeps `publisher` for what it stores later. Blocking. Errors: the
  // backend's (state_file_corrupted for damage).
  virtual Result<Ref<UserTable>> load(UserPublisher& publisher) = 0;
  // Makes `change` durable and publishes it before it returns; a failed persist changes
  // nothing anyone sees. `base_version`: the published version `change` was checked
  // against. Blocking. Errors: the backend's (a file error, feature_unavailable when etcd
  // cannot be reached; logged).
  virtual Result<Persisted> persist(const UserChange& change, uint64_t base_version) = 0;
  // Where the users are, for log lines ("<data>/users.log", "memory").
  virtual std::string where() const = 0;

 protected:
  UserBackend() = default;
};

}  // namespace hark::server
