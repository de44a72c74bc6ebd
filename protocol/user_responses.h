#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/protocol/permissions.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Responses of the user and personal-access-token commands, as 0.8.0 sends them
// (docs/wire.md §Responses).

// 14 + username bytes: [id u32][created_at u64 µs][status u8: 1 active, 2 inactive]
// [username WireName].
struct UserResponse {
  uint32_t id = 0;
  uint64_t created_at = 0;
  uint8_t status = 1;
  std::string username;
  bool operator==(const UserResponse&) const = default;
};

// get_user, create_user: UserResponse, then permissions in 0.8.0's asymmetric encoding:
// none → four zero bytes (a u32 0); some → [1 u8][len u32][Permissions]. A reader takes the
// first byte as the flag (0 → skip 3 more bytes) and decodes the blob from exactly `len`
// bytes. get_user on an unknown user answers an empty payload (decode_optional_payload).
struct UserDetailsResponse {
  UserResponse user;
  std::optional<Permissions> permissions;
  bool operator==(const UserDetailsResponse&) const = default;
};

// get_users: UserResponses to the end of the payload.
struct UsersResponse {
  std::vector<UserResponse> users;
  bool operator==(const UsersResponse&) const = default;
};

// create_personal_access_token: [token WireName], the only time the token is shown.
struct RawPersonalAccessTokenResponse {
  std::string token;
  bool operator==(const RawPersonalAccessTokenResponse&) const = default;
};

// [name WireName][expiry_at u64 µs, 0 = never].
struct PersonalAccessTokenInfo {
  std::string name;
  uint64_t expiry_at = 0;
  bool operator==(const PersonalAccessTokenInfo&) const = default;
};

// get_personal_access_tokens: PersonalAccessTokenInfos to the end of the payload.
struct PersonalAccessTokensResponse {
  std::vector<PersonalAccessTokenInfo> tokens;
  bool operator==(const PersonalAccessTokensResponse&) const = default;
};

void encode(const UserResponse& response, Writer& writer);
Status decode(Reader& reader, UserResponse& response);
void encode(const UserDetailsResponse& response, Writer& writer);
Status decode(Reader& reader, UserDetailsResponse& response);
void encode(const UsersResponse& response, Writer& writer);
Status decode(Reader& reader, UsersResponse& response);
void encode(const RawPersonalAccessTokenResponse& response, Writer& writer);
Status decode(Reader& reader, RawPersonalAccessTokenResponse& response);
void encode(const PersonalAccessTokenInfo& info, Writer& writer);
Status decode(Reader& reader, PersonalAccessTokenInfo& info);
void encode(const PersonalAccessTokensResponse& response, Writer& writer);
Status decode(Reader& reader, PersonalAccessTokensResponse& response);

}  // namespace hark::protocol
