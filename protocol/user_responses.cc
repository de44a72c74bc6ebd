#include "hark/protocol/user_responses.h"

#include "hark/protocol/primitives.h"
#include "hark/protocol/response_lists.h"

namespace hark::protocol {
namespace {

constexpr size_t no_permissions_padding = 3;

}  // namespace

void encode(const UserResponse& response, Writer& writer) {
  writer.u32(response.id);
  writer.u64(response.created_at);
  writer.u8(response.status);
  write_wire_name(writer, response.username);
}

Status decode(Reader& reader, UserResponse& response) {
  HARK_TRY_ASSIGN(response.id, reader.u32());
  HARK_TRY_ASSIGN(response.created_at, reader.u64());
  HARK_TRY_ASSIGN(response.status, reader.u8());
  HARK_TRY_ASSIGN(response.username, read_wire_name(reader));
  return ok_status();
}

void encode(const UserDetailsResponse& response, Writer& writer) {
  encode(response.user, writer);
  if (!response.permissions.has_value()) {
    writer.u32(0);  // 0.8.0 writes a u32 here, where a reader expects a u8 flag.
    return;
  }
  writer.u8(1);
  const size_t length_at = writer.size();
  writer.u32(0);
  write_permissions(writer, *response.permissions);
  writer.patch_u32(length_at, static_cast<uint32_t>(writer.size() - length_at - 4));
}

Status decode(Reader& reader, UserDetailsResponse& response) {
  HARK_TRY(decode(reader, response.user));
  HARK_TRY_ASSIGN(const uint8_t flag, reader.u8());
  response.permissions.reset();
  if (flag == 0) {
    HARK_TRY(reader.bytes(no_permissions_padding));
    return ok_status();
  }
  HARK_TRY_ASSIGN(const uint32_t blob_size, reader.u32());
  HARK_TRY_ASSIGN(const std::span<const std::byte> blob, reader.bytes(blob_size));
  Reader blob_reader(blob);
  HARK_TRY_ASSIGN(response.permissions, read_permissions(blob_reader));
  return ok_status();
}

void encode(const UsersResponse& response, Writer& writer) { encode_all(response.users, writer); }

Status decode(Reader& reader, UsersResponse& response) {
  return decode_run(reader, response.users);
}

void encode(const RawPersonalAccessTokenResponse& response, Writer& writer) {
  write_wire_name(writer, response.token);
}

Status decode(Reader& reader, RawPersonalAccessTokenResponse& response) {
  HARK_TRY_ASSIGN(response.token, read_wire_name(reader));
  return ok_status();
}

void encode(const PersonalAccessTokenInfo& info, Writer& writer) {
  write_wire_name(writer, info.name);
  writer.u64(info.expiry_at);
}

Status decode(Reader& reader, PersonalAccessTokenInfo& info) {
  HARK_TRY_ASSIGN(info.name, read_wire_name(reader));
  HARK_TRY_ASSIGN(info.expiry_at, reader.u64());
  return ok_status();
}

void encode(const PersonalAccessTokensResponse& response, Writer& writer) {
  encode_all(response.tokens, writer);
}

Status decode(Reader& reader, PersonalAccessTokensResponse& response) {
  return decode_run(reader, response.tokens);
}

}  // namespace hark::protocol
