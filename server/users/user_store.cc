#include "hark/server/users/user_store.h"

#include <algorithm>
#include <array>
#include <utility>

#include <sys/random.h>

#include "hark/core/base/log.h"
#include "hark/server/dispatch.h"
#include "hark/server/users/permissioner.h"
#include "hark/server/users/secret_hash.h"

namespace hark::server {
namespace {

constexpr uint32_t users_max = UINT32_MAX - 1;

Ref<UserTable> copy_of(const UserTable& table) {
  Ref<UserTable> next = make_ref<UserTable>(table);
  next->version = table.version + 1;
  return next;
}

// A token: token_lookup_chars hex characters, then 43 base64url characters (256 bits).
Result<std::string> random_token() {
  std::array<unsigned char, 8 + 32> random{};
  size_t filled = 0;
  while (filled < random.size()) {
    const ssize_t n = getrandom(random.data() + filled, random.size() - filled, 0);
    if (n <= 0) return Error::error;
    filled += static_cast<size_t>(n);
  }
  constexpr std::string_view hex = "0123456789abcdef";
  constexpr std::string_view base64url =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string token;
  for (size_t i = 0; i < 8; i++) {
    token.push_back(hex[random[i] >> 4]);
    token.push_back(hex[random[i] & 15]);
  }
  uint32_t bits = 0;
  int bits_count = 0;
  for (size_t i = 8; i < random.size(); i++) {
    bits = (bits << 8) | random[i];
    bits_count += 8;
    while (bits_count >= 6) {
      bits_count -= 6;
      token.push_back(base64url[(bits >> bits_count) & 63]);
    }
  }
  if (bits_count > 0) token.push_back(base64url[(bits << (6 - bits_count)) & 63]);
  return token;
}

// Root is changed by root only (its permissions and deletion by nobody, see the callers).
Status guard_root(uint32_t actor, const UserRecord& target) {
  if (target.id == root_user_id && actor != root_user_id) {
    HARK_LOG_WARN("users: user %u may not change the root user", actor);
    return Error::unauthorized;
  }
  return ok_status();
}

// Root's permissions are fixed (0.8.0); one's own would let a user manager grant itself
// everything.
Status guard_permissions(uint32_t actor, const UserRecord& target) {
  if (target.id == actor) {
    HARK_LOG_WARN("users: user %u may not change its own permissions", actor);
    return Error::cannot_change_permissions;
  }
  if (target.id == root_user_id) return Error::cannot_change_permissions;
  return ok_status();
}

bool has_token(const UserRecord& user, std::string_view name) {
  return std::any_of(user.tokens.begin(), user.tokens.end(),
                     [&](const TokenRecord& token) { return token.name == name; });
}

UnixMicros expiry_at(uint64_t expiry_us, UnixMicros now) {
  if (expiry_us == 0 || expiry_us == UINT64_MAX) return 0;
  return expiry_us > UINT64_MAX - now ? UINT64_MAX : now + expiry_us;
}

}  // namespace

Status UserStore::check_status(uint8_t status) {
  if (status != user_status_active && status != user_status_inactive) {
    return Error::invalid_command;
  }
  return ok_status();
}

UserStore::UserStore(std::unique_ptr<UserBackend> backend, std::string dummy_hash)
    : backend_(std::move(backend)),
      table_(make_ref<UserTable>()),
      dummy_hash_(std::move(dummy_hash)) {}

Result<std::unique_ptr<UserStore>> UserStore::open(std::unique_ptr<UserBackend> backend,
                                                   std::optional<Root> root, UnixMicros now) {
  HARK_TRY_ASSIGN(const std::string dummy_secret, random_token());
  HARK_TRY_ASSIGN(std::string dummy_hash, hash_secret(dummy_secret));
  std::unique_ptr<UserStore> store(new UserStore(std::move(backend), std::move(dummy_hash)));
  UserPublisher& publisher = *store;
  HARK_TRY_ASSIGN(Ref<const UserTable> table, store->backend_->load(publisher));
  {
    std::lock_guard lock(store->snapshot_mutex_);
    store->table_ = std::move(table);
    store->version_.store(store->table_->version, std::memory_order_release);
  }
  if (root) HARK_TRY(store->bootstrap_root(*root, now));
  HARK_LOG_INFO("users: %u users in %s", store->snapshot()->users.size(), store->backend_->where());
  return store;
}

Status UserStore::bootstrap_root(const Root& root, UnixMicros now) {
  if (!snapshot()->users.empty()) return ok_status();
  const Result<UserRecord> created =
      create_user(root.username, root.password, user_status_active, root_permissions(), now,
                  /*only_first=*/true);
  if (created.ok()) {
    HARK_LOG_INFO("users: created the root user '%s' (id %u)", root.username, created->id);
    return ok_status();
  }
  // A shared backend: another node's root was published first.
  if (created.error() == Error::user_already_exists) return ok_status();
  return created.error();
}

Ref<const UserTable> UserStore::snapshot() const {
  std::lock_guard lock(snapshot_mutex_);
  return table_;
}

void UserStore::publish(const UserChange& change) {
  // Publishers are one at a time (UserPublisher), so the table read here is the newest.
  Ref<UserTable> next = copy_of(*snapshot());
  const Status applied = apply_change(*next, change);
  if (!applied.ok()) {
    // mutate() checks every change against the table it applies to; only damage gets here.
    HARK_LOG_ERROR("users: a stored change does not apply (%s); ignored",
                   std::string(error_name(applied.error())));
    return;
  }
  const uint64_t version = next->version;
  {
    std::lock_guard lock(snapshot_mutex_);
    table_ = std::move(next);
  }
  version_.store(version, std::memory_order_release);
}

Status UserStore::mutate(Plan plan) {
  std::lock_guard lock(write_mutex_);
  for (int attempt = 0; attempt < plan_attempts_max; attempt++) {
    const Ref<const UserTable> base = snapshot();
    HARK_TRY_ASSIGN(const UserChange change, plan(*base));
    HARK_TRY(apply_change(*copy_of(*base), change));  // Checked before it is stored.
    HARK_TRY_ASSIGN(const UserBackend::Persisted persisted,
                    backend_->persist(change, base->version));
    if (persisted == UserBackend::Persisted::stored) return ok_status();
  }
  HARK_LOG_WARN("users: a change was refused: other nodes' changes came first %d times in a row",
                plan_attempts_max);
  return Error::feature_unavailable;
}

Result<UserRecord> UserStore::create_user(std::string_view username, std::string_view password,
                                          uint8_t status,
                                          std::optional<protocol::Permissions> permissions,
                                          UnixMicros now, bool only_first) {
  HARK_TRY(check_username(username));
  HARK_TRY(check_password(password));
  HARK_TRY(check_status(status));
  HARK_TRY_ASSIGN(const std::string hash, hash_secret(password));  // Before the lock: slow.
  UserRecord created;
  const Status mutated = mutate([&](const UserTable& base) -> Result<UserChange> {
    if (base.find_name(username) != nullptr) return Error::user_already_exists;
    if (only_first && !base.users.empty()) return Error::user_already_exists;
    if (base.users.size() >= users_max || base.next_id == UINT32_MAX) {
      return Error::users_limit_reached;
    }
    created = UserRecord{.id = base.next_id,
                         .created_at = now,
                         .status = status,
                         .username = std::string(username),
                         .password_hash = hash,
                         .permissions = permissions,
                         .tokens = {}};
    return UserChange(UserPut{.user = created});
  });
  if (!mutated.ok()) return mutated.error();
  return created;
}

Result<UserRecord> UserStore::delete_user(const protocol::Identifier& id) {
  UserRecord deleted;
  const Status mutated = mutate([&](const UserTable& base) -> Result<UserChange> {
    const UserRecord* const found = base.find(id);
    if (found == nullptr) return Error::resource_not_found;
    if (found->id == root_user_id) return Error::cannot_delete_user;
    deleted = *found;
    return UserChange(UserDeleted{.id = found->id});
  });
  if (!mutated.ok()) return mutated.error();
  return deleted;
}

Result<UserRecord> UserStore::update_user(uint32_t actor, const protocol::Identifier& id,
                                          std::optional<std::string> username,
                                          std::optional<uint8_t> status) {
  if (username) HARK_TRY(check_username(*username));
  if (status) HARK_TRY(check_status(*status));
  UserRecord updated;
  const Status mutated = mutate([&](const UserTable& base) -> Result<UserChange> {
    const UserRecord* const found = base.find(id);
    if (found == nullptr) return Error::resource_not_found;
    HARK_TRY(guard_root(actor, *found));
    if (username && *username != found->username && base.find_name(*username) != nullptr) {
      return Error::user_already_exists;
    }
    updated = *found;
    if (username) updated.username = *username;
    if (status) updated.status = *status;
    return UserChange(UserPut{.user = updated});
  });
  if (!mutated.ok()) return mutated.error();
  return updated;
}

Status UserStore::update_permissions(uint32_t actor, const protocol::Identifier& id,
                                     std::optional<protocol::Permissions> permissions) {
  return mutate([&](const UserTable& base) -> Result<UserChange> {
    const UserRecord* const found = base.find(id);
    if (found == nullptr) return Error::resource_not_found;
    HARK_TRY(guard_permissions(actor, *found));
    UserPut put{.user = *found};
    put.user.permissions = permissions;
    return UserChange(std::move(put));
  });
}

Status UserStore::change_password(uint32_t actor, const protocol::Identifier& id,
                                  std::string_view current, std::string_view next_password) {
  HARK_TRY(check_password(next_password));
  std::string current_hash;
  uint32_t user_id = 0;
  {
    const Ref<const UserTable> base = snapshot();
    const UserRecord* const found = base->find(id);
    if (found == nullptr) return Error::resource_not_found;
    HARK_TRY(guard_root(actor, *found));
    current_hash = found->password_hash;
    user_id = found->id;
  }
  if (!verify_secret(current, current_hash)) return Error::invalid_credentials;
  HARK_TRY_ASSIGN(const std::string hash, hash_secret(next_password));
  return mutate([&](const UserTable& base) -> Result<UserChange> {
    const UserRecord* const found = base.find(user_id);
    if (found == nullptr) return Error::resource_not_found;
    // Changed meanwhile by another request: the current password checked is no longer current.
    if (found->password_hash != current_hash) return Error::invalid_credentials;
    UserPut put{.user = *found};
    put.user.password_hash = hash;
    return UserChange(std::move(put));
  });
}

Result<std::string> UserStore::create_token(uint32_t user_id, std::string_view name,
                                            uint64_t expiry_us, UnixMicros now,
                                            uint32_t tokens_max) {
  HARK_TRY(check_token_name(name));
  HARK_TRY_ASSIGN(std::string token, random_token());
  HARK_TRY_ASSIGN(const std::string hash, hash_secret(token));
  const Status mutated = mutate([&](const UserTable& base) -> Result<UserChange> {
    const UserRecord* const found = base.find(user_id);
    if (found == nullptr) return Error::resource_not_found;
    if (found->tokens.size() >= tokens_max) return Error::personal_access_tokens_limit_reached;
    if (has_token(*found, name)) return Error::personal_access_token_already_exists;
    return UserChange(TokenPut{.user_id = user_id,
                               .token = {.name = std::string(name),
                                         .lookup = token.substr(0, token_lookup_chars),
                                         .hash = hash,
                                         .expiry_at = expiry_at(expiry_us, now)}});
  });
  if (!mutated.ok()) return mutated.error();
  return token;
}

Status UserStore::delete_token(uint32_t user_id, std::string_view name) {
  return mutate([&](const UserTable& base) -> Result<UserChange> {
    const UserRecord* const found = base.find(user_id);
    if (found == nullptr || !has_token(*found, name)) return Error::resource_not_found;
    return UserChange(TokenDeleted{.user_id = user_id, .name = std::string(name)});
  });
}

Result<uint32_t> UserStore::login(std::string_view username, std::string_view password) const {
  const Ref<const UserTable> table = snapshot();
  const UserRecord* const user = table->find_name(username);
  // An unknown user costs the same hash as a known one, so the delay does not tell either.
  const bool matches = verify_secret(password, user != nullptr ? user->password_hash : dummy_hash_);
  if (user == nullptr || !matches) return Error::invalid_credentials;
  if (!user->active()) return Error::user_inactive;  // Told only to who knows the password.
  return user->id;
}

Result<uint32_t> UserStore::login_with_token(std::string_view token, UnixMicros now) const {
  const Ref<const UserTable> table = snapshot();
  if (token.size() <= token_lookup_chars) return Error::resource_not_found;
  const std::string_view lookup = token.substr(0, token_lookup_chars);
  for (const auto& [id, user] : table->users) {
    for (const TokenRecord& record : user.tokens) {
      if (record.lookup != lookup || !verify_secret(token, record.hash)) continue;
      if (record.expiry_at != 0 && record.expiry_at <= now) {
        return Error::personal_access_token_expired;
      }
      if (!user.active()) return Error::user_inactive;
      return user.id;
    }
  }
  return Error::resource_not_found;
}

bool UserStore::root_password_is(std::string_view password) const {
  const Ref<const UserTable> table = snapshot();
  const UserRecord* const root = table->find(root_user_id);
  return root != nullptr && verify_secret(password, root->password_hash);
}

}  // namespace hark::server
