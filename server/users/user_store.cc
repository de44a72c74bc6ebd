#include "hark/server/users/user_store.h"

#include <algorithm>
#include <array>
#include <utility>

#include <sys/random.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"
#include "hark/server/users/permissioner.h"
#include "hark/server/users/secret_hash.h"

namespace hark::server {
namespace {

constexpr std::string_view magic = "HARKUSER";
constexpr uint32_t format_version = 1;
constexpr uint32_t users_max = UINT32_MAX - 1;

// Record kinds of users.log (docs/storage-format.md §Users log).
enum class UserRecordKind : uint8_t {
  user_put = 1,       // A user's whole state but its tokens (create, update, password, perms).
  user_deleted = 2,   // With its tokens.
  token_put = 3,      // A token of a user.
  token_deleted = 4,  // By name.
};

void put_text(protocol::Writer& writer, std::string_view text) {
  writer.u32(static_cast<uint32_t>(text.size()));
  writer.chars(text);
}

Result<std::string> take_text(protocol::Reader& reader) {
  HARK_TRY_ASSIGN(const uint32_t size, reader.u32());
  HARK_TRY_ASSIGN(const auto bytes, reader.bytes(size));
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void record_user_put(std::vector<std::byte>& out, const UserRecord& user) {
  const size_t start = storage::begin_record(out);
  protocol::Writer writer(out);
  writer.u8(static_cast<uint8_t>(UserRecordKind::user_put));
  writer.u32(user.id);
  writer.u64(user.created_at);
  writer.u8(user.status);
  put_text(writer, user.username);
  put_text(writer, user.password_hash);
  writer.u8(user.permissions ? 1 : 0);
  if (user.permissions) protocol::write_permissions(writer, *user.permissions);
  storage::finish_record(out, start);
}

void record_user_deleted(std::vector<std::byte>& out, uint32_t id) {
  const size_t start = storage::begin_record(out);
  protocol::Writer writer(out);
  writer.u8(static_cast<uint8_t>(UserRecordKind::user_deleted));
  writer.u32(id);
  storage::finish_record(out, start);
}

void record_token_put(std::vector<std::byte>& out, uint32_t user_id, const TokenRecord& token) {
  const size_t start = storage::begin_record(out);
  protocol::Writer writer(out);
  writer.u8(static_cast<uint8_t>(UserRecordKind::token_put));
  writer.u32(user_id);
  put_text(writer, token.name);
  put_text(writer, token.lookup);
  put_text(writer, token.hash);
  writer.u64(token.expiry_at);
  storage::finish_record(out, start);
}

void record_token_deleted(std::vector<std::byte>& out, uint32_t user_id, std::string_view name) {
  const size_t start = storage::begin_record(out);
  protocol::Writer writer(out);
  writer.u8(static_cast<uint8_t>(UserRecordKind::token_deleted));
  writer.u32(user_id);
  put_text(writer, name);
  storage::finish_record(out, start);
}

Status replay_user_put(protocol::Reader& reader, UserTable& table) {
  UserRecord user;
  HARK_TRY_ASSIGN(user.id, reader.u32());
  HARK_TRY_ASSIGN(user.created_at, reader.u64());
  HARK_TRY_ASSIGN(user.status, reader.u8());
  HARK_TRY_ASSIGN(user.username, take_text(reader));
  HARK_TRY_ASSIGN(user.password_hash, take_text(reader));
  HARK_TRY_ASSIGN(const uint8_t has_permissions, reader.u8());
  if (has_permissions != 0) {
    HARK_TRY_ASSIGN(user.permissions, protocol::read_permissions(reader));
  }
  const auto existing = table.users.find(user.id);
  if (existing != table.users.end()) user.tokens = std::move(existing->second.tokens);
  table.next_id = std::max(table.next_id, user.id + 1);
  table.users[user.id] = std::move(user);
  return ok_status();
}

Status replay_token_put(protocol::Reader& reader, UserTable& table) {
  HARK_TRY_ASSIGN(const uint32_t user_id, reader.u32());
  TokenRecord token;
  HARK_TRY_ASSIGN(token.name, take_text(reader));
  HARK_TRY_ASSIGN(token.lookup, take_text(reader));
  HARK_TRY_ASSIGN(token.hash, take_text(reader));
  HARK_TRY_ASSIGN(token.expiry_at, reader.u64());
  const auto user = table.users.find(user_id);
  if (user == table.users.end()) return Error::state_file_corrupted;
  user->second.tokens.push_back(std::move(token));
  return ok_status();
}

Status replay_one(std::span<const std::byte> payload, UserTable& table) {
  protocol::Reader reader(payload);
  HARK_TRY_ASSIGN(const uint8_t kind, reader.u8());
  Status status;
  switch (static_cast<UserRecordKind>(kind)) {
    case UserRecordKind::user_put: status = replay_user_put(reader, table); break;
    case UserRecordKind::user_deleted: {
      HARK_TRY_ASSIGN(const uint32_t id, reader.u32());
      if (table.users.erase(id) == 0) return Error::state_file_corrupted;
      break;
    }
    case UserRecordKind::token_put: status = replay_token_put(reader, table); break;
    case UserRecordKind::token_deleted: {
      HARK_TRY_ASSIGN(const uint32_t user_id, reader.u32());
      HARK_TRY_ASSIGN(const std::string name, take_text(reader));
      const auto user = table.users.find(user_id);
      if (user == table.users.end()) return Error::state_file_corrupted;
      std::erase_if(user->second.tokens, [&](const TokenRecord& t) { return t.name == name; });
      break;
    }
    default: return Error::state_file_corrupted;
  }
  // A record that does not decode whole is damage, whatever the decoder said.
  if (!status.ok() || !reader.empty()) return Error::state_file_corrupted;
  return ok_status();
}

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

}  // namespace

const UserRecord* UserTable::find(uint32_t id) const {
  const auto found = users.find(id);
  return found == users.end() ? nullptr : &found->second;
}

const UserRecord* UserTable::find(const protocol::Identifier& id) const {
  return id.is_numeric() ? find(id.number()) : find_name(id.name());
}

const UserRecord* UserTable::find_name(std::string_view username) const {
  for (const auto& [id, user] : users) {
    if (user.username == username) return &user;
  }
  return nullptr;
}

UserStore::UserStore(storage::RecordFile file, Ref<const UserTable> table, std::string dummy_hash)
    : file_(std::move(file)), table_(std::move(table)), dummy_hash_(std::move(dummy_hash)) {
  version_.store(table_->version, std::memory_order_release);
}

Result<std::unique_ptr<UserStore>> UserStore::open(const std::string& path, const Root& root,
                                                   UnixMicros now) {
  Ref<UserTable> table = make_ref<UserTable>();
  HARK_TRY_ASSIGN(storage::RecordFile file,
                  storage::RecordFile::open(path, magic, format_version,
                                            [&table](std::span<const std::byte> payload) {
                                              return replay_one(payload, *table);
                                            }));
  const bool empty = table->users.empty() && table->next_id == 0;
  HARK_TRY_ASSIGN(const std::string dummy_secret, random_token());
  HARK_TRY_ASSIGN(std::string dummy_hash, hash_secret(dummy_secret));
  std::unique_ptr<UserStore> store(
      new UserStore(std::move(file), std::move(table), std::move(dummy_hash)));
  if (empty) {
    HARK_TRY(store->create_user(root.username, root.password, user_status_active,
                                root_permissions(), now));
    HARK_LOG_INFO("users: created the root user '%s' (id %u)", root.username, root_user_id);
  }
  HARK_LOG_INFO("users: %u users in %s", store->snapshot()->users.size(), path);
  return store;
}

Ref<const UserTable> UserStore::snapshot() const {
  std::lock_guard lock(snapshot_mutex_);
  return table_;
}

Status UserStore::commit(Ref<UserTable> next, const std::vector<std::byte>& records) {
  HARK_TRY(file_.append_now(records));
  const uint64_t version = next->version;
  {
    std::lock_guard lock(snapshot_mutex_);
    table_ = std::move(next);
  }
  version_.store(version, std::memory_order_release);
  return ok_status();
}

Result<UserRecord> UserStore::create_user(std::string_view username, std::string_view password,
                                          uint8_t status,
                                          std::optional<protocol::Permissions> permissions,
                                          UnixMicros now) {
  HARK_TRY_ASSIGN(std::string hash, hash_secret(password));  // Before the lock: slow.
  std::lock_guard lock(write_mutex_);
  const Ref<const UserTable> base = snapshot();
  if (base->find_name(username) != nullptr) return Error::user_already_exists;
  if (base->users.size() >= users_max || base->next_id == UINT32_MAX) {
    return Error::users_limit_reached;
  }
  Ref<UserTable> next = copy_of(*base);
  UserRecord user{.id = next->next_id++,
                  .created_at = now,
                  .status = status,
                  .username = std::string(username),
                  .password_hash = std::move(hash),
                  .permissions = std::move(permissions),
                  .tokens = {}};
  std::vector<std::byte> records;
  record_user_put(records, user);
  next->users[user.id] = user;
  HARK_TRY(commit(std::move(next), records));
  return user;
}

Result<UserRecord> UserStore::delete_user(const protocol::Identifier& id) {
  std::lock_guard lock(write_mutex_);
  const Ref<const UserTable> base = snapshot();
  const UserRecord* const found = base->find(id);
  if (found == nullptr) return Error::resource_not_found;
  if (found->id == root_user_id) return Error::cannot_delete_user;
  UserRecord removed = *found;
  Ref<UserTable> next = copy_of(*base);
  next->users.erase(removed.id);
  std::vector<std::byte> records;
  record_user_deleted(records, removed.id);
  HARK_TRY(commit(std::move(next), records));
  return removed;
}

Result<UserRecord> UserStore::update_user(uint32_t actor, const protocol::Identifier& id,
                                          std::optional<std::string> username,
                                          std::optional<uint8_t> status) {
  std::lock_guard lock(write_mutex_);
  const Ref<const UserTable> base = snapshot();
  const UserRecord* const found = base->find(id);
  if (found == nullptr) return Error::resource_not_found;
  HARK_TRY(guard_root(actor, *found));
  if (username && *username != found->username && base->find_name(*username) != nullptr) {
    return Error::user_already_exists;
  }
  Ref<UserTable> next = copy_of(*base);
  UserRecord& user = next->users[found->id];
  if (username) user.username = std::move(*username);
  if (status) user.status = *status;
  std::vector<std::byte> records;
  record_user_put(records, user);
  UserRecord updated = user;
  HARK_TRY(commit(std::move(next), records));
  return updated;
}

Status UserStore::update_permissions(uint32_t actor, const protocol::Identifier& id,
                                     std::optional<protocol::Permissions> permissions) {
  std::lock_guard lock(write_mutex_);
  const Ref<const UserTable> base = snapshot();
  const UserRecord* const found = base->find(id);
  if (found == nullptr) return Error::resource_not_found;
  // Root's are fixed (0.8.0); one's own would let a user manager grant itself everything.
  if (found->id == root_user_id || found->id == actor) {
    if (found->id == actor)
      HARK_LOG_WARN("users: user %u may not change its own permissions", actor);
    return Error::cannot_change_permissions;
  }
  Ref<UserTable> next = copy_of(*base);
  UserRecord& user = next->users[found->id];
  user.permissions = std::move(permissions);
  std::vector<std::byte> records;
  record_user_put(records, user);
  return commit(std::move(next), records);
}

Status UserStore::change_password(uint32_t actor, const protocol::Identifier& id,
                                  std::string_view current, std::string_view next_password) {
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
  HARK_TRY_ASSIGN(std::string hash, hash_secret(next_password));
  std::lock_guard lock(write_mutex_);
  const Ref<const UserTable> base = snapshot();
  const UserRecord* const found = base->find(user_id);
  if (found == nullptr) return Error::resource_not_found;
  // Changed meanwhile by another request: the current password checked is no longer current.
  if (found->password_hash != current_hash) return Error::invalid_credentials;
  Ref<UserTable> next = copy_of(*base);
  UserRecord& user = next->users[user_id];
  user.password_hash = std::move(hash);
  std::vector<std::byte> records;
  record_user_put(records, user);
  return commit(std::move(next), records);
}

Result<std::string> UserStore::create_token(uint32_t user_id, std::string_view name,
                                            uint64_t expiry_us, UnixMicros now,
                                            uint32_t tokens_max) {
  HARK_TRY_ASSIGN(std::string token, random_token());
  HARK_TRY_ASSIGN(std::string hash, hash_secret(token));
  std::lock_guard lock(write_mutex_);
  const Ref<const UserTable> base = snapshot();
  const UserRecord* const found = base->find(user_id);
  if (found == nullptr) return Error::resource_not_found;
  if (found->tokens.size() >= tokens_max) return Error::personal_access_tokens_limit_reached;
  for (const TokenRecord& existing : found->tokens) {
    if (existing.name == name) return Error::personal_access_token_already_exists;
  }
  TokenRecord record{.name = std::string(name),
                     .lookup = token.substr(0, token_lookup_chars),
                     .hash = std::move(hash),
                     .expiry_at = 0};
  if (expiry_us != 0 && expiry_us != UINT64_MAX) {
    record.expiry_at = expiry_us > UINT64_MAX - now ? UINT64_MAX : now + expiry_us;
  }
  Ref<UserTable> next = copy_of(*base);
  std::vector<std::byte> records;
  record_token_put(records, user_id, record);
  next->users[user_id].tokens.push_back(std::move(record));
  HARK_TRY(commit(std::move(next), records));
  return token;
}

Status UserStore::delete_token(uint32_t user_id, std::string_view name) {
  std::lock_guard lock(write_mutex_);
  const Ref<const UserTable> base = snapshot();
  const UserRecord* const found = base->find(user_id);
  if (found == nullptr) return Error::resource_not_found;
  const bool known = std::any_of(found->tokens.begin(), found->tokens.end(),
                                 [&](const TokenRecord& token) { return token.name == name; });
  if (!known) return Error::resource_not_found;
  Ref<UserTable> next = copy_of(*base);
  std::erase_if(next->users[user_id].tokens,
                [&](const TokenRecord& token) { return token.name == name; });
  std::vector<std::byte> records;
  record_token_deleted(records, user_id, name);
  return commit(std::move(next), records);
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
