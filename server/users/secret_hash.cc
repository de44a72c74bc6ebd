#include "hark/server/users/secret_hash.h"

#include <crypt.h>

#include <algorithm>
#include <memory>

#include "hark/core/base/log.h"

namespace hark::server {
namespace {

// yescrypt's cost: 5 is libxcrypt's default for new hashes.
constexpr unsigned long yescrypt_cost = 5;

// crypt_r takes a C string, which would end `secret` at its first NUL: a secret holding one
// is never hashed (refused) nor matched.
bool holds_nul(std::string_view secret) { return secret.find('\0') != std::string_view::npos; }

}  // namespace

Result<std::string> hash_secret(std::string_view secret) {
  if (holds_nul(secret)) return Error::invalid_password;
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  // A null random source: libcrypt reads the salt from the kernel (getrandom).
  if (crypt_gensalt_rn("$y$", yescrypt_cost, nullptr, 0, setting, sizeof(setting)) == nullptr) {
    HARK_LOG_ERROR("crypt_gensalt_rn failed: yescrypt unavailable?");
    return Error::error;
  }
  auto data = std::make_unique<crypt_data>();  // About 32 KiB: not on the stack.
  const std::string text(secret);              // crypt_r takes a C string.
  const char* const hashed = crypt_r(text.c_str(), setting, data.get());
  if (hashed == nullptr || hashed[0] == '*') {
    HARK_LOG_ERROR("crypt_r failed to hash a secret");
    return Error::error;
  }
  return std::string(hashed);
}

bool verify_secret(std::string_view secret, const std::string& hash) {
  if (hash.empty() || hash[0] != '$') return false;
  auto data = std::make_unique<crypt_data>();
  std::string text(secret);
  // A secret with a NUL matches nothing (none was hashed); hash it anyway, NULs replaced, so
  // that it costs the same time.
  const bool refused = holds_nul(text);
  std::replace(text.begin(), text.end(), '\0', '\x01');
  const char* const hashed = crypt_r(text.c_str(), hash.c_str(), data.get());
  if (hashed == nullptr || refused) return false;
  const std::string_view computed(hashed);
  if (computed.size() != hash.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < hash.size(); i++) {
    difference |= static_cast<unsigned char>(computed[i] ^ hash[i]);
  }
  return difference == 0;
}

}  // namespace hark::server
