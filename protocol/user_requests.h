#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/permissions.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Requests of the user, session and personal-access-token commands (docs/wire.md §Requests).
// Names are WireNames (1..255 bytes); passwords are [len u8][UTF-8] and may be empty on the
// wire (the server checks 3..100 bytes later, with InvalidPassword).

struct GetUserRequest {
  static constexpr Command code = Command::get_user;
  Identifier user_id;
  bool operator==(const GetUserRequest&) const = default;
};

struct GetUsersRequest {
  static constexpr Command code = Command::get_users;
  bool operator==(const GetUsersRequest&) const = default;
};

// status: 1 active, 2 inactive (not validated by the decoder).
struct CreateUserRequest {
  static constexpr Command code = Command::create_user;
  std::string username;
  std::string password;
  uint8_t status = 1;
  std::optional<Permissions> permissions;
  bool operator==(const CreateUserRequest&) const = default;
};

struct DeleteUserRequest {
  static constexpr Command code = Command::delete_user;
  Identifier user_id;
  bool operator==(const DeleteUserRequest&) const = default;
};

// [user Id][has_username u8][WireName?][has_status u8][status u8?]; only 1 means "present".
struct UpdateUserRequest {
  static constexpr Command code = Command::update_user;
  Identifier user_id;
  std::optional<std::string> username;
  std::optional<uint8_t> status;
  bool operator==(const UpdateUserRequest&) const = default;
};

struct UpdatePermissionsRequest {
  static constexpr Command code = Command::update_permissions;
  Identifier user_id;
  std::optional<Permissions> permissions;
  bool operator==(const UpdatePermissionsRequest&) const = default;
};

struct ChangePasswordRequest {
  static constexpr Command code = Command::change_password;
  Identifier user_id;
  std::string current_password;
  std::string new_password;
  bool operator==(const ChangePasswordRequest&) const = default;
};

// [WireName username][len u8 + password][len u32 + version][len u32 + context]. Both u32
// lengths are always present; an empty version or context is sent as length 0 ("absent").
struct LoginUserRequest {
  static constexpr Command code = Command::login_user;
  std::string username;
  std::string password;
  std::string version;
  std::string context;
  bool operator==(const LoginUserRequest&) const = default;
};

struct LogoutUserRequest {
  static constexpr Command code = Command::logout_user;
  bool operator==(const LogoutUserRequest&) const = default;
};

struct GetPersonalAccessTokensRequest {
  static constexpr Command code = Command::get_personal_access_tokens;
  bool operator==(const GetPersonalAccessTokensRequest&) const = default;
};

// expiry: µs; 0 = never expires.
struct CreatePersonalAccessTokenRequest {
  static constexpr Command code = Command::create_personal_access_token;
  std::string name;
  uint64_t expiry = 0;
  bool operator==(const CreatePersonalAccessTokenRequest&) const = default;
};

struct DeletePersonalAccessTokenRequest {
  static constexpr Command code = Command::delete_personal_access_token;
  std::string name;
  bool operator==(const DeletePersonalAccessTokenRequest&) const = default;
};

struct LoginWithPersonalAccessTokenRequest {
  static constexpr Command code = Command::login_with_personal_access_token;
  std::string token;
  bool operator==(const LoginWithPersonalAccessTokenRequest&) const = default;
};

void encode(const GetUserRequest& request, Writer& writer);
Status decode(Reader& reader, GetUserRequest& request);
void encode(const GetUsersRequest& request, Writer& writer);
Status decode(Reader& reader, GetUsersRequest& request);
void encode(const CreateUserRequest& request, Writer& writer);
Status decode(Reader& reader, CreateUserRequest& request);
void encode(const DeleteUserRequest& request, Writer& writer);
Status decode(Reader& reader, DeleteUserRequest& request);
void encode(const UpdateUserRequest& request, Writer& writer);
Status decode(Reader& reader, UpdateUserRequest& request);
void encode(const UpdatePermissionsRequest& request, Writer& writer);
Status decode(Reader& reader, UpdatePermissionsRequest& request);
void encode(const ChangePasswordRequest& request, Writer& writer);
Status decode(Reader& reader, ChangePasswordRequest& request);
void encode(const LoginUserRequest& request, Writer& writer);
Status decode(Reader& reader, LoginUserRequest& request);
void encode(const LogoutUserRequest& request, Writer& writer);
Status decode(Reader& reader, LogoutUserRequest& request);
void encode(const GetPersonalAccessTokensRequest& request, Writer& writer);
Status decode(Reader& reader, GetPersonalAccessTokensRequest& request);
void encode(const CreatePersonalAccessTokenRequest& request, Writer& writer);
Status decode(Reader& reader, CreatePersonalAccessTokenRequest& request);
void encode(const DeletePersonalAccessTokenRequest& request, Writer& writer);
Status decode(Reader& reader, DeletePersonalAccessTokenRequest& request);
void encode(const LoginWithPersonalAccessTokenRequest& request, Writer& writer);
Status decode(Reader& reader, LoginWithPersonalAccessTokenRequest& request);

}  // namespace hark::protocol
