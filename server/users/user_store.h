#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/permissions.h"
#include "hark/storage/record_file.h"

namespace hark::server {

inline constexpr uint8_t user_status_active = 1;
inline constexpr uint8_t user_status_inactive = 2;
inline constexpr uint32_t root_user_id = 0;

// A personal access token as stored: never the token itself. `lookup` is the token's first
// token_lookup_chars characters (random, public), so a login finds its token without trying
// every hash; `hash` is the slow salted hash of the whole token (secret_hash.h).
struct TokenRecord {
  std::string name;
  std::string lookup;
  std::string hash;
  UnixMicros expiry_at = 0;  // 0: never expires.
};

struct UserRecord {
  uint32_t id = 0;
  UnixMicros created_at = 0;
  uint8_t status = user_status_active;
  std::string username;
  std::string password_hash;
  std::optional<protocol::Permissions> permissions;
  std::vector<TokenRecord> tokens;

  bool active() const { return status == user_status_active; }
};

// Every user, immutable once published: shards read it without a lock (UserStore::snapshot).
struct UserTable : RefCounted {
  uint64_t version = 0;
  std::map<uint32_t, UserRecord> users;
  uint32_t next_id = 0;

  const UserRecord* find(uint32_t id) const;
  const UserRecord* find(const protocol::Identifier& id) const;
  const UserRecord* find_name(std::string_view username) const;
};

// harkd's users, permissions and personal access tokens, persisted in <data>/users.log (a
// storage::RecordFile with magic "HARKUSER"; docs/storage-format.md §Users log). Kept out of
// the embeddable core: the broker knows nothing of users; harkd checks permissions before it
// submits an operation (docs/architecture.md §Authentication).
//
// Thread-safety: mutations and logins (slow hashes, a blocking write and fdatasync) run on
// AuthPool threads, one mutation at a time (write lock); readers on any thread take a
// snapshot (a Ref copied under a short lock) and check version() to know when to refresh.
// Control plane.
class UserStore {
 public:
  struct Root {
    std::string username = "iggy";
    std::string password = "iggy";
  };

  // Opens (creating) `path` and replays it; with no user at all, creates the root user (id
  // 0, every permission) from `root`. Blocking: at start only. Errors: those of
  // RecordFile::open, state_file_corrupted for a record that does not decode, hashing errors.
  static Result<std::unique_ptr<UserStore>> open(const std::string& path, const Root& root,
                                                 UnixMicros now);
  UserStore(const UserStore&) = delete;
  UserStore& operator=(const UserStore&) = delete;

  Ref<const UserTable> snapshot() const;
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

  // Each blocks (hash, write, fdatasync): call off the shards. `actor` is the user who asks.
  // Iggy 0.8.0's errors: user_already_exists (46), resource_not_found (20) for an unknown user
  // or token, cannot_delete_user (48) for root, cannot_change_permissions (49) for root's or
  // the actor's own permissions, unauthorized (41) when anyone but root updates root or
  // changes its password, invalid_credentials (42) for a wrong current password,
  // invalid_password (44) for a password holding a NUL byte, personal_access_token_already_
  // exists (51), personal_access_tokens_limit_reached (52), users_limit_reached (55); file
  // errors.
  Result<UserRecord> create_user(std::string_view username, std::string_view password,
                                 uint8_t status, std::optional<protocol::Permissions> permissions,
                                 UnixMicros now);
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

 private:
  UserStore(storage::RecordFile file, Ref<const UserTable> table, std::string dummy_hash);
  // Appends `records`, then publishes `next` (version + 1). Requires: write_mutex_ held.
  Status commit(Ref<UserTable> next, const std::vector<std::byte>& records);

  mutable std::mutex write_mutex_;     // One mutation at a time (held across the fdatasync).
  mutable std::mutex snapshot_mutex_;  // Only to copy or replace `table_`.
  storage::RecordFile file_;
  Ref<const UserTable> table_;
  std::atomic<uint64_t> version_{0};
  const std::string dummy_hash_;  // Of a random secret: what an unknown user is checked against.
};

// Tokens: 16 random hex characters of lookup, then 43 random base64url characters of secret.
inline constexpr size_t token_lookup_chars = 16;

}  // namespace hark::server
