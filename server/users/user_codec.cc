#include "hark/server/users/user_codec.h"

#include <string>
#include <utility>

#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::server {
namespace {

// Record kinds of users.log (docs/storage-format.md §Users log), one per UserChange.
enum class UserRecordKind : uint8_t {
  user_put = 1,
  user_deleted = 2,
  token_put = 3,
  token_deleted = 4,
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

void encode(protocol::Writer& writer, const UserPut& put) {
  const UserRecord& user = put.user;
  writer.u8(static_cast<uint8_t>(UserRecordKind::user_put));
  writer.u32(user.id);
  writer.u64(user.created_at);
  writer.u8(user.status);
  put_text(writer, user.username);
  put_text(writer, user.password_hash);
  writer.u8(user.permissions ? 1 : 0);
  if (user.permissions) protocol::write_permissions(writer, *user.permissions);
}

void encode(protocol::Writer& writer, const UserDeleted& deleted) {
  writer.u8(static_cast<uint8_t>(UserRecordKind::user_deleted));
  writer.u32(deleted.id);
}

void encode(protocol::Writer& writer, const TokenPut& put) {
  writer.u8(static_cast<uint8_t>(UserRecordKind::token_put));
  writer.u32(put.user_id);
  put_text(writer, put.token.name);
  put_text(writer, put.token.lookup);
  put_text(writer, put.token.hash);
  writer.u64(put.token.expiry_at);
}

void encode(protocol::Writer& writer, const TokenDeleted& deleted) {
  writer.u8(static_cast<uint8_t>(UserRecordKind::token_deleted));
  writer.u32(deleted.user_id);
  put_text(writer, deleted.name);
}

Result<UserChange> decode_user_put(protocol::Reader& reader) {
  UserPut put;
  UserRecord& user = put.user;
  HARK_TRY_ASSIGN(user.id, reader.u32());
  HARK_TRY_ASSIGN(user.created_at, reader.u64());
  HARK_TRY_ASSIGN(user.status, reader.u8());
  HARK_TRY_ASSIGN(user.username, take_text(reader));
  HARK_TRY_ASSIGN(user.password_hash, take_text(reader));
  HARK_TRY_ASSIGN(const uint8_t has_permissions, reader.u8());
  if (has_permissions != 0) {
    HARK_TRY_ASSIGN(user.permissions, protocol::read_permissions(reader));
  }
  return UserChange(std::move(put));
}

Result<UserChange> decode_token_put(protocol::Reader& reader) {
  TokenPut put;
  HARK_TRY_ASSIGN(put.user_id, reader.u32());
  HARK_TRY_ASSIGN(put.token.name, take_text(reader));
  HARK_TRY_ASSIGN(put.token.lookup, take_text(reader));
  HARK_TRY_ASSIGN(put.token.hash, take_text(reader));
  HARK_TRY_ASSIGN(put.token.expiry_at, reader.u64());
  return UserChange(std::move(put));
}

Result<UserChange> decode(protocol::Reader& reader) {
  HARK_TRY_ASSIGN(const uint8_t kind, reader.u8());
  switch (static_cast<UserRecordKind>(kind)) {
    case UserRecordKind::user_put: return decode_user_put(reader);
    case UserRecordKind::user_deleted: {
      HARK_TRY_ASSIGN(const uint32_t id, reader.u32());
      return UserChange(UserDeleted{.id = id});
    }
    case UserRecordKind::token_put: return decode_token_put(reader);
    case UserRecordKind::token_deleted: {
      TokenDeleted deleted;
      HARK_TRY_ASSIGN(deleted.user_id, reader.u32());
      HARK_TRY_ASSIGN(deleted.name, take_text(reader));
      return UserChange(std::move(deleted));
    }
  }
  return Error::state_file_corrupted;
}

}  // namespace

void encode_change(std::vector<std::byte>& out, const UserChange& change) {
  protocol::Writer writer(out);
  std::visit([&writer](const auto& one) { encode(writer, one); }, change);
}

Result<UserChange> decode_change(std::span<const std::byte> bytes) {
  protocol::Reader reader(bytes);
  Result<UserChange> change = decode(reader);
  if (!change.ok() || !reader.empty()) return Error::state_file_corrupted;
  return change;
}

}  // namespace hark::server
