#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/server/users/user_records.h"

namespace hark::server {

// One UserChange as bytes: the payload of a users.log record (docs/storage-format.md §Users
// log), also what a cluster journals for it (docs/cluster.md §Metadata). Hashes only: a
// change never holds a password or a token. Pure.

// Appends `change` to `out`.
void encode_change(std::vector<std::byte>& out, const UserChange& change);
// The change `bytes` hold, whole; state_file_corrupted if they do not decode or are longer.
Result<UserChange> decode_change(std::span<const std::byte> bytes);

}  // namespace hark::server
