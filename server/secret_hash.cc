#include "server/secret_hash.h"

#include <crypt.h>

#include <memory>

#include "core/base/log.h"

namespace hark::server {
namespace {

// yescrypt's cost: 5 is libxcrypt's default for new hashes.
constexpr unsigned long yescrypt_cost = 5;

}  // namespace

Result<std::string> hash_secret(std::string_view secret) {
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
  const std::string text(secret);
  const char* const hashed = crypt_r(text.c_str(), hash.c_str(), data.get());
  if (hashed == nullptr) return false;
  const std::string_view computed(hashed);
  if (computed.size() != hash.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < hash.size(); i++) {
    difference |= static_cast<unsigned char>(computed[i] ^ hash[i]);
  }
  return difference == 0;
}

}  // namespace hark::server
