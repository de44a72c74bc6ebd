#pragma once

#include <chrono>
#include <string>
#include <vector>

struct evp_pkey_st;
struct x509_st;

namespace hark::test {

// A certificate and its key, as PEM files.
struct CertFiles {
  std::string cert;
  std::string key;
};

// A throwaway CA for a test, made at run time with OpenSSL's API (P-256 keys: fast), so no
// key is ever committed and nothing expires in the repository. The CA and every certificate
// it issues are PEM files in `directory`, which the caller owns (HarkdProcess's temp directory
// for instance). Failures are gtest failures and empty paths.
class TestCa {
 public:
  explicit TestCa(std::string directory);
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  const std::string& ca_file() const { return ca_.cert; }
  // A server certificate for `names` (DNS names, or IP addresses as "IP:127.0.0.1"), valid
  // from now + `from` to now + `until` (negative: in the past), signed by this CA.
  CertFiles issue(const std::string& file_stem, const std::vector<std::string>& names,
                  std::chrono::seconds from = std::chrono::hours(-1),
                  std::chrono::seconds until = std::chrono::hours(24));

 private:
  void create();  // The CA's key and certificate (gtest's ASSERTs need a void function).

  std::string directory_;
  CertFiles ca_;
  evp_pkey_st* key_ = nullptr;  // The CA's, owned.
  x509_st* cert_ = nullptr;     // The CA's, owned.
  long serial_ = 1;
};

}  // namespace hark::test
