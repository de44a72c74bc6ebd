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
// for instance). No gtest (hark-bench uses it too): a failure is a line on stderr and empty
// paths, which harkd and the clients refuse with a line naming them.
class TestCa {
 public:
  explicit TestCa(std::string directory);
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  const std::string& ca_file() const { return ca_.cert; }
  // A certificate for `names` (DNS names, or IP addresses as "IP:127.0.0.1"), the first one
  // its CommonName, for a server or a client, valid from now + `from` to now + `until`
  // (negative: in the past), signed by this CA.
  CertFiles issue(const std::string& file_stem, const std::vector<std::string>& names,
                  std::chrono::seconds from = std::chrono::hours(-1),
                  std::chrono::seconds until = std::chrono::hours(24));

  // The same with no CommonName in the subject, the names in subjectAltName only: what etcd
  // 3.4's gateway needs from a client certificate when auth is on (docs/cluster.md §TLS to
  // etcd in production).
  CertFiles issue_without_common_name(const std::string& file_stem,
                                      const std::vector<std::string>& names);

 private:
  void create();  // The CA's key and certificate.
  CertFiles issue_named(const std::string& file_stem, const std::vector<std::string>& names,
                        const std::string& common_name, std::chrono::seconds from,
                        std::chrono::seconds until);

  std::string directory_;
  CertFiles ca_;
  evp_pkey_st* key_ = nullptr;  // The CA's, owned.
  x509_st* cert_ = nullptr;     // The CA's, owned.
  long serial_ = 1;
};

}  // namespace hark::test
