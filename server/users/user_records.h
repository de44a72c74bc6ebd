#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/permissions.h"

namespace hark::server {

// harkd's users as data: what every UserBackend stores and every reader sees. Pure; no I/O.

inline constexpr uint8_t user_status_active = 1;
inline constexpr uint8_t user_status_inactive = 2;
inline constexpr uint32_t root_user_id = 0;

// Tokens: 16 random hex characters of lookup, then 43 random base64url characters of secret.
inline constexpr size_t token_lookup_chars = 16;

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

// One change to the users, as a backend persists it: every mutation UserStore makes is
// exactly one of these (the kinds of docs/storage-format.md §Users log).
struct UserPut {    // Created or changed (name, status, password, permissions).
  UserRecord user;  // Its `tokens` are not part of the change: a put keeps the user's tokens.
};
struct UserDeleted {  // With its tokens.
  uint32_t id = 0;
};
struct TokenPut {
  uint32_t user_id = 0;
  TokenRecord token;
};
struct TokenDeleted {
  uint32_t user_id = 0;
  std::string name;
};
using UserChange = std::variant<UserPut, UserDeleted, TokenPut, TokenDeleted>;

// Applies `change` to `table` (not its version): the one definition of what a change means,
// used by UserStore to build the next table and by backends to replay what they stored. A
// put raises next_id past the user's id, so a deleted user's id is never reused. Errors:
// resource_not_found when the change deletes an unknown user or names an unknown user's
// token (nothing is changed then).
Status apply_change(UserTable& table, const UserChange& change);

// The changes that, applied in order to an empty table, make one equal to `table` (its
// version aside): each user's put then its tokens, in id order; when the highest id ever put
// is no longer a user, a put and a delete of that id keep next_id (a snapshot of a cluster's
// users, docs/cluster.md §Users).
std::vector<UserChange> changes_rebuilding(const UserTable& table);

}  // namespace hark::server
