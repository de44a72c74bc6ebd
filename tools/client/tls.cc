#include "hark/tools/client/tls.h"

#include <algorithm>
#include <array>
#include <climits>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "hark/core/base/log.h"

namespace hark::client {
namespace {

std::string openssl_errors() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    std::array<char, 256> line{};
    ERR_error_string_n(code, line.data(), line.size());
    if (!text.empty()) text += "; ";
    text += line.data();
  }
  return text.empty() ? "the server closed the connection" : text;
}

bool is_ip_address(const std::string& host) {
  std::array<unsigned char, 16> address{};
  return inet_pton(AF_INET, host.c_str(), address.data()) == 1 ||
         inet_pton(AF_INET6, host.c_str(), address.data()) == 1;
}

SSL_CTX* make_context(const TlsOptions& options, Error& error) {
  SSL_CTX* context = SSL_CTX_new(TLS_client_method());
  if (context == nullptr) {
    error = Error::cannot_establish_connection;
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  const int loaded = options.ca_file.empty()
                         ? SSL_CTX_set_default_verify_paths(context)
                         : SSL_CTX_load_verify_locations(context, options.ca_file.c_str(), nullptr);
  if (loaded != 1) {
    HARK_LOG_WARN("cannot use %s as TLS CA certificates: %s",
                  options.ca_file.empty() ? "the system's" : options.ca_file, openssl_errors());
    SSL_CTX_free(context);
    error = Error::invalid_tls_certificate_path;
    return nullptr;
  }
  return context;
}

// Sets the name (or IP address) the server's certificate must carry, and SNI for a name.
bool expect_name(SSL* ssl, const std::string& name) {
  if (is_ip_address(name)) {
    return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1;
  }
  return SSL_set_tlsext_host_name(ssl, name.c_str()) == 1 && SSL_set1_host(ssl, name.c_str()) == 1;
}

}  // namespace

std::unique_ptr<TlsStream> TlsStream::create(int fd, const TlsOptions& options,
                                             std::string_view host, Error& error) {
  ERR_clear_error();
  SSL_CTX* context = make_context(options, error);
  if (context == nullptr) return nullptr;
  SSL* ssl = SSL_new(context);
  const std::string name = options.server_name.empty() ? std::string(host) : options.server_name;
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1 || !expect_name(ssl, name)) {
    HARK_LOG_WARN("cannot set up TLS for %s: %s", name, openssl_errors());
    SSL_free(ssl);
    SSL_CTX_free(context);
    error = Error::invalid_tls_domain;
    return nullptr;
  }
  SSL_set_connect_state(ssl);
  return std::unique_ptr<TlsStream>(new TlsStream(context, ssl));
}

TlsStream::~TlsStream() {
  SSL_free(ssl_);
  SSL_CTX_free(context_);
}

TlsStream::Want TlsStream::classify(int result, const char* what) {
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ: return Want::read;
    case SSL_ERROR_WANT_WRITE: return Want::write;
    case SSL_ERROR_ZERO_RETURN: return Want::closed;
    default: break;
  }
  const long verified = SSL_get_verify_result(ssl_);
  if (verified != X509_V_OK) {
    failure_code_ =
        verified == X509_V_ERR_HOSTNAME_MISMATCH || verified == X509_V_ERR_IP_ADDRESS_MISMATCH
            ? Error::invalid_tls_domain
            : Error::invalid_tls_certificate;
    failure_ = std::string(what) +
               ": the server's certificate was refused: " + X509_verify_cert_error_string(verified);
    ERR_clear_error();
  } else {
    failure_code_ = Error::cannot_establish_connection;
    failure_ = std::string(what) + ": " + openssl_errors();
  }
  return Want::failed;
}

TlsStream::Want TlsStream::handshake() {
  ERR_clear_error();
  const int result = SSL_connect(ssl_);
  return result == 1 ? Want::done : classify(result, "TLS handshake");
}

TlsStream::Io TlsStream::read(std::span<std::byte> buffer) {
  ERR_clear_error();
  const int got =
      SSL_read(ssl_, buffer.data(), static_cast<int>(std::min<size_t>(buffer.size(), INT_MAX)));
  if (got > 0) return {Want::done, static_cast<size_t>(got)};
  return {classify(got, "TLS read")};
}

TlsStream::Io TlsStream::write(std::span<const std::byte> bytes) {
  ERR_clear_error();
  const int sent =
      SSL_write(ssl_, bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
  if (sent > 0) return {Want::done, static_cast<size_t>(sent)};
  return {classify(sent, "TLS write")};
}

void TlsStream::shutdown() {
  ERR_clear_error();
  (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

}  // namespace hark::client
