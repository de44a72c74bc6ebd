#pragma once

#include <string>
#include <string_view>

#include "hark/core/base/result.h"

namespace hark::server {

// Salted, deliberately slow hashes of passwords and personal access tokens: libcrypt's
// yescrypt ("$y$..." strings, crypt(5)) through the reentrant crypt_r, with a fresh random salt
// from crypt_gensalt_rn. Each call is expensive on purpose (yescrypt's default cost), so harkd
// calls these only on its AuthPool threads, never on a shard. Thread-safe; control plane.

// The hash of `secret`. Errors: invalid_password (44) if it holds a NUL byte (libcrypt would
// hash only the bytes before it); error if libcrypt fails (logged).
Result<std::string> hash_secret(std::string_view secret);

// True if `secret` hashes to `hash` (a string hash_secret returned); never for a secret with a
// NUL byte (which costs the same hash). Compares in constant time.
bool verify_secret(std::string_view secret, const std::string& hash);

}  // namespace hark::server
