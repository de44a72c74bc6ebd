#include "hark/server/users/user_records.h"

#include <algorithm>
#include <utility>

namespace hark::server {
namespace {

Status apply_one(UserTable& table, const UserPut& put) {
  UserRecord user = put.user;
  user.tokens.clear();
  const auto existing = table.users.find(user.id);
  if (existing != table.users.end()) user.tokens = std::move(existing->second.tokens);
  table.next_id = std::max(table.next_id, user.id + 1);
  table.users[user.id] = std::move(user);
  return ok_status();
}

Status apply_one(UserTable& table, const UserDeleted& deleted) {
  if (table.users.erase(deleted.id) == 0) return Error::resource_not_found;
  return ok_status();
}

Status apply_one(UserTable& table, const TokenPut& put) {
  const auto user = table.users.find(put.user_id);
  if (user == table.users.end()) return Error::resource_not_found;
  user->second.tokens.push_back(put.token);
  return ok_status();
}

Status apply_one(UserTable& table, const TokenDeleted& deleted) {
  const auto user = table.users.find(deleted.user_id);
  if (user == table.users.end()) return Error::resource_not_found;
  std::erase_if(user->second.tokens,
                [&](const TokenRecord& token) { return token.name == deleted.name; });
  return ok_status();
}

}  // namespace

std::vector<UserChange> changes_rebuilding(const UserTable& table) {
  std::vector<UserChange> changes;
  for (const auto& [id, user] : table.users) {
    changes.emplace_back(UserPut{.user = user});
    for (const TokenRecord& token : user.tokens) {
      changes.emplace_back(TokenPut{.user_id = id, .token = token});
    }
  }
  if (table.next_id > 0 && table.users.count(table.next_id - 1) == 0) {
    UserRecord placeholder{.id = table.next_id - 1, .status = user_status_inactive};
    changes.emplace_back(UserPut{.user = std::move(placeholder)});
    changes.emplace_back(UserDeleted{.id = table.next_id - 1});
  }
  return changes;
}

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

Status apply_change(UserTable& table, const UserChange& change) {
  return std::visit([&table](const auto& one) { return apply_one(table, one); }, change);
}

}  // namespace hark::server
