#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <absl/functional/function_ref.h>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/permissions.h"
#include "hark/server/users/user_backend.h"
#include "hark/server/users/user_records.h"

namespace hark::server {

// harkd's users, permissions and personal access tokens: the one interface the server uses,
// and the one place their rules live (Iggy 0.8.0's, plus root's guards), whatever backend
// keeps them (UserBackend: the users log on one node, memory in tests). Kept out of the
// embeddable core: the broker knows nothing of users; harkd checks permissions before it
// submits an operation (docs/architecture.md §6).
//
// Thread-safety: mutations and logins (slow hashes, the backend's blocking persist) run on
// AuthPool threads, one mutation at a time (write lock); readers on any thread take a
// snapshot (a Ref copied under a short lock) and check version() to know when to refresh.
// The backend publishes every change (UserPublisher), one at a time. Control plane.
class UserStore final : private UserPublisher {
 public:
  struct Root {
    std::string username = "iggy";
    std::string password = "iggy";
  };

  // Loads the users from `backend`, then bootstrap_root(`root`) (one node, tests). A cluster
  // passes no root and bootstraps once its journal runs. Blocking: at start only. Errors:
  // the backend's, hashing errors.
  static Result<std::unique_ptr<UserStore>> open(std::unique_ptr<UserBackend> backend,
                                                 std::optional<Root> root, UnixMicros now);
  // Creates the root user (id 0, every permission) from `root` unless some user exists. Once
  // per cluster: on a shared backend a node that finds another's root first creates none.
  // Blocking. Errors: as create_user, the backend's.
  Status bootstrap_root(const Root& root, UnixMicros now);
  UserStore(const UserStore&) = delete;
  UserStore& operator=(const UserStore&) = delete;

  Ref<const UserTable> snapshot() const;
  uint64_t version() const override { return version_.load(std::memory_order_acquire); }
  Ref<const UserTable> table() const override { return snapshot(); }

  // Each blocks (hash, the backend's persist): call off the shards. `actor` is the user who
  // asks. Iggy 0.8.0's errors: invalid_username (43), invalid_password (44) and
  // invalid_personal_access_token_name (50) for lengths (check_username and friends,
  // dispatch.h), invalid_password (44) for a password holding a NUL byte, invalid_command (3)
  // for a status but 1 or 2, user_already_exists (46), resource_not_found (20) for an unknown
  // user or token, cannot_delete_user (48) for root, cannot_change_permissions (49) for
  // root's or the actor's own permissions, unauthorized (41) when anyone but root updates
  // root or changes its password, invalid_credentials (42) for a wrong current password,
  // personal_access_token_already_exists (51), personal_access_tokens_limit_reached (52),
  // users_limit_reached (55); the backend's errors (nothing changes then).
  // `only_first`: refused (user_already_exists) unless the table has no user (root's
  // bootstrap).
  Result<UserRecord> create_user(std::string_view username, std::string_view password,
                                 uint8_t status, std::optional<protocol::Permissions> permissions,
                                 UnixMicros now, bool only_first = false);
  Result<UserRecord> delete_user(const protocol::Identifier& id);
  Result<UserRecord> update_user(uint32_t actor, const protocol::Identifier& id,
                                 std::optional<std::string> username,
                                 std::optional<uint8_t> status);
  Status update_permissions(uint32_t actor, const protocol::Identifier& id,
                            std::optional<protocol::Permissions> permissions);
  Status change_password(uint32_t actor, const protocol::Identifier& id, std::string_view current,
                         std::string_view next);
  // Returns the token, the only time it exists outside the client. expiry_us: 0 or UINT64_MAX
  // never expires (Iggy's server default and "never"), else µs from `now`.
  Result<std::string> create_token(uint32_t user_id, std::string_view name, uint64_t expiry_us,
                                   UnixMicros now, uint32_t tokens_max);
  Status delete_token(uint32_t user_id, std::string_view name);
  // Logins: the user id, or invalid_credentials (42) for an unknown user or a wrong password,
  // user_inactive (47) only with the right password. Every password login costs one full
  // hash (an unknown user's against a dummy hash), so neither the code nor the time tells
  // which users exist. For a token resource_not_found (20) when unknown (as 0.8.0),
  // personal_access_token_expired (54).
  Result<uint32_t> login(std::string_view username, std::string_view password) const;
  Result<uint32_t> login_with_token(std::string_view token, UnixMicros now) const;

  // True if root's password is still `password` (blocking: one slow hash).
  bool root_password_is(std::string_view password) const;

  // A user's status as the wire gives it: 1 active or 2 inactive, else invalid_command (3),
  // as 0.8.0's UserStatus::from_code. Pure.
  static Status check_status(uint8_t status);

 private:
  // Makes a change from the published table, or the error that refuses it.
  using Plan = absl::FunctionRef<Result<UserChange>(const UserTable& base)>;
  // How often a change is planned again when other writers' changes keep coming first.
  static constexpr int plan_attempts_max = 16;

  UserStore(std::unique_ptr<UserBackend> backend, std::string dummy_hash);
  // Under the write lock: plans a change against the published table, checks that it applies
  // and persists it (the backend publishes it); plans again when the backend finds it stale.
  // On any error nothing is published.
  Status mutate(Plan plan);
  // The backend's: the published table plus `change` becomes the next version.
  void publish(const UserChange& change) override;

  mutable std::mutex write_mutex_;     // One mutation at a time (held across the persist).
  mutable std::mutex snapshot_mutex_;  // Only to copy or replace `table_`.
  const std::unique_ptr<UserBackend> backend_;
  Ref<const UserTable> table_;
  std::atomic<uint64_t> version_{0};
  const std::string dummy_hash_;  // Of a random secret: what an unknown user is checked against.
};

}  // namespace hark::server
