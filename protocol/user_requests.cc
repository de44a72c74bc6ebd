#include "hark/protocol/user_requests.h"

#include "hark/protocol/primitives.h"

namespace hark::protocol {
void encode(const GetUserRequest& request, Writer& writer) {
  write_identifier(writer, request.user_id);
}

Status decode(Reader& reader, GetUserRequest& request) {
  HARK_TRY_ASSIGN(request.user_id, read_identifier(reader));
  return ok_status();
}

void encode(const GetUsersRequest&, Writer&) {}
Status decode(Reader&, GetUsersRequest&) { return ok_status(); }

void encode(const CreateUserRequest& request, Writer& writer) {
  write_wire_name(writer, request.username);
  write_short_string(writer, request.password);
  writer.u8(request.status);
  write_permissions_field(writer, request.permissions);
}

Status decode(Reader& reader, CreateUserRequest& request) {
  HARK_TRY_ASSIGN(request.username, read_wire_name(reader));
  HARK_TRY_ASSIGN(request.password, read_short_string(reader));
  HARK_TRY_ASSIGN(request.status, reader.u8());
  HARK_TRY_ASSIGN(request.permissions, read_permissions_field(reader));
  return ok_status();
}

void encode(const DeleteUserRequest& request, Writer& writer) {
  write_identifier(writer, request.user_id);
}

Status decode(Reader& reader, DeleteUserRequest& request) {
  HARK_TRY_ASSIGN(request.user_id, read_identifier(reader));
  return ok_status();
}

void encode(const UpdateUserRequest& request, Writer& writer) {
  write_identifier(writer, request.user_id);
  writer.u8(request.username.has_value() ? 1 : 0);
  if (request.username.has_value()) write_wire_name(writer, *request.username);
  writer.u8(request.status.has_value() ? 1 : 0);
  if (request.status.has_value()) writer.u8(*request.status);
}

Status decode(Reader& reader, UpdateUserRequest& request) {
  HARK_TRY_ASSIGN(request.user_id, read_identifier(reader));
  HARK_TRY_ASSIGN(const uint8_t has_username, reader.u8());
  request.username.reset();
  if (has_username == 1) {
    HARK_TRY_ASSIGN(request.username, read_wire_name(reader));
  }
  HARK_TRY_ASSIGN(const uint8_t has_status, reader.u8());
  request.status.reset();
  if (has_status == 1) {
    HARK_TRY_ASSIGN(request.status, reader.u8());
  }
  return ok_status();
}

void encode(const UpdatePermissionsRequest& request, Writer& writer) {
  write_identifier(writer, request.user_id);
  write_permissions_field(writer, request.permissions);
}

Status decode(Reader& reader, UpdatePermissionsRequest& request) {
  HARK_TRY_ASSIGN(request.user_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.permissions, read_permissions_field(reader));
  return ok_status();
}

void encode(const ChangePasswordRequest& request, Writer& writer) {
  write_identifier(writer, request.user_id);
  write_short_string(writer, request.current_password);
  write_short_string(writer, request.new_password);
}

Status decode(Reader& reader, ChangePasswordRequest& request) {
  HARK_TRY_ASSIGN(request.user_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.current_password, read_short_string(reader));
  HARK_TRY_ASSIGN(request.new_password, read_short_string(reader));
  return ok_status();
}

void encode(const LoginUserRequest& request, Writer& writer) {
  write_wire_name(writer, request.username);
  write_short_string(writer, request.password);
  write_long_string(writer, request.version);
  write_long_string(writer, request.context);
}

Status decode(Reader& reader, LoginUserRequest& request) {
  HARK_TRY_ASSIGN(request.username, read_wire_name(reader));
  HARK_TRY_ASSIGN(request.password, read_short_string(reader));
  // Length 0 means "absent"; an empty string stands for that, so both round-trip.
  HARK_TRY_ASSIGN(request.version, read_long_string(reader));
  HARK_TRY_ASSIGN(request.context, read_long_string(reader));
  return ok_status();
}

void encode(const LogoutUserRequest&, Writer&) {}
Status decode(Reader&, LogoutUserRequest&) { return ok_status(); }

void encode(const GetPersonalAccessTokensRequest&, Writer&) {}
Status decode(Reader&, GetPersonalAccessTokensRequest&) { return ok_status(); }

void encode(const CreatePersonalAccessTokenRequest& request, Writer& writer) {
  write_wire_name(writer, request.name);
  writer.u64(request.expiry);
}

Status decode(Reader& reader, CreatePersonalAccessTokenRequest& request) {
  HARK_TRY_ASSIGN(request.name, read_wire_name(reader));
  HARK_TRY_ASSIGN(request.expiry, reader.u64());
  return ok_status();
}

void encode(const DeletePersonalAccessTokenRequest& request, Writer& writer) {
  write_wire_name(writer, request.name);
}

Status decode(Reader& reader, DeletePersonalAccessTokenRequest& request) {
  HARK_TRY_ASSIGN(request.name, read_wire_name(reader));
  return ok_status();
}

void encode(const LoginWithPersonalAccessTokenRequest& request, Writer& writer) {
  write_wire_name(writer, request.token);
}

Status decode(Reader& reader, LoginWithPersonalAccessTokenRequest& request) {
  HARK_TRY_ASSIGN(request.token, read_wire_name(reader));
  return ok_status();
}

}  // namespace hark::protocol
