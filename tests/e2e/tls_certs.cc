#include "hark/tests/e2e/tls_certs.h"

#include <stdio.h>

#include <memory>
#include <utility>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace hark::test {
namespace {

// No gtest here (hark-bench issues certificates too): a failed step is a line on stderr, and
// the CA issues empty paths from then on, which harkd refuses at start with a clear line.
bool check(bool ok, const char* step) {
  if (!ok) std::fprintf(stderr, "TestCa: %s failed\n", step);
  return ok;
}

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertFree {
  void operator()(X509* cert) const { X509_free(cert); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

bool add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  if (extension == nullptr) return false;
  const bool added = X509_add_ext(cert, extension, -1) == 1;
  X509_EXTENSION_free(extension);
  return added;
}

// A certificate for `key` named `common_name` (empty: a subject without one), issued by `issuer`
// (self-issued when null); the caller adds its extensions and signs it.
Cert make_cert(EVP_PKEY* key, const std::string& common_name, X509* issuer,
               std::chrono::seconds from, std::chrono::seconds until, long serial) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), static_cast<long>(from.count()));
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(until.count()));
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!common_name.empty()) {
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                               0);
  }
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  check(add_extension(cert.get(), signer, NID_subject_key_identifier, "hash"), "subject key id");
  check(add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"),
        "authority key id");
  return cert;
}

bool write_pem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* file = fopen(path.c_str(), "w");
  if (file == nullptr) return false;
  const bool ok = cert != nullptr
                      ? PEM_write_X509(file, cert) == 1
                      : PEM_write_PrivateKey(file, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  fclose(file);
  return ok;
}

}  // namespace

TestCa::TestCa(std::string directory) : directory_(std::move(directory)) { create(); }

void TestCa::create() {
  key_ = EVP_EC_gen("P-256");
  if (!check(key_ != nullptr, "the CA's key")) return;
  cert_ = make_cert(key_, "hark test CA", nullptr, std::chrono::hours(-1), std::chrono::hours(24),
                    serial_)
              .release();
  const bool made =
      check(add_extension(cert_, cert_, NID_basic_constraints, "critical,CA:TRUE"),
            "basic constraints") &&
      check(add_extension(cert_, cert_, NID_key_usage, "critical,keyCertSign,cRLSign"),
            "key usage") &&
      check(X509_sign(cert_, key_, EVP_sha256()) > 0, "signing the CA") &&
      check(write_pem(directory_ + "/ca.pem", cert_, nullptr), "writing ca.pem") &&
      check(write_pem(directory_ + "/ca.key", nullptr, key_), "writing ca.key");
  if (!made) {
    X509_free(std::exchange(cert_, nullptr));  // Nothing is issued.
    return;
  }
  ca_ = {.cert = directory_ + "/ca.pem", .key = directory_ + "/ca.key"};
}

TestCa::~TestCa() {
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

CertFiles TestCa::issue(const std::string& file_stem, const std::vector<std::string>& names,
                        std::chrono::seconds from, std::chrono::seconds until) {
  return issue_named(file_stem, names, names.empty() ? "none" : names.front(), from, until);
}

CertFiles TestCa::issue_without_common_name(const std::string& file_stem,
                                            const std::vector<std::string>& names) {
  return issue_named(file_stem, names, "", std::chrono::hours(-1), std::chrono::hours(24));
}

CertFiles TestCa::issue_named(const std::string& file_stem, const std::vector<std::string>& names,
                              const std::string& common_name, std::chrono::seconds from,
                              std::chrono::seconds until) {
  const Key key(EVP_EC_gen("P-256"));
  if (!check(key != nullptr, "a key") || cert_ == nullptr) return {};
  std::string alt_names;
  for (const std::string& name : names) {
    if (!alt_names.empty()) alt_names += ",";
    alt_names += name.starts_with("IP:") ? name : "DNS:" + name;
  }
  Cert cert = make_cert(key.get(), common_name, cert_, from, until, ++serial_);
  // Both uses: the same certificate may identify a server or a client (etcd under
  // --client-cert-auth also dials itself with its server certificate; node links both ways).
  CertFiles files{.cert = directory_ + "/" + file_stem + ".pem",
                  .key = directory_ + "/" + file_stem + ".key"};
  const bool made =
      check(add_extension(cert.get(), cert_, NID_subject_alt_name, alt_names), "names") &&
      check(add_extension(cert.get(), cert_, NID_ext_key_usage, "serverAuth,clientAuth"),
            "extended key usage") &&
      check(X509_sign(cert.get(), key_, EVP_sha256()) > 0, "signing") &&
      check(write_pem(files.cert, cert.get(), nullptr), "writing the certificate") &&
      check(write_pem(files.key, nullptr, key.get()), "writing the key");
  return made ? files : CertFiles{};
}

}  // namespace hark::test
