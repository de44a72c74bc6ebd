#include "hark/server/tls.h"

#include <errno.h>
#include <stdio.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "hark/core/base/assert.h"

namespace hark::server {
namespace {

// TLS 1.2 suites: forward secrecy and AEAD only (TLS 1.3 keeps OpenSSL's defaults, which
// are all of that kind).
constexpr const char* tls12_ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20";

// OpenSSL's queued errors as one line (the thread's queue is emptied).
std::string openssl_errors() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    std::array<char, 256> line{};
    ERR_error_string_n(code, line.data(), line.size());
    if (!text.empty()) text += "; ";
    text += line.data();
  }
  return text.empty() ? "no detail from OpenSSL" : text;
}

// A missing or unreadable file is named as such, before OpenSSL reports it less clearly.
std::string check_readable(const std::string& path, const char* what) {
  FILE* file = fopen(path.c_str(), "r");
  if (file == nullptr)
    return "cannot read the TLS " + std::string(what) + " " + path + ": " + strerror(errno);
  fclose(file);
  return {};
}

// Mutual TLS (the node links): TLS 1.3 only, both ends present a certificate and require the
// peer's, signed by `ca_file`. The chain is what is verified; the peer's names are not
// (docs/cluster.md §Trust says why).
std::string require_peer_certificates(SSL_CTX* context, const std::string& ca_file) {
  if (std::string error = check_readable(ca_file, "CA file"); !error.empty()) return error;
  SSL_CTX_set_min_proto_version(context, TLS1_3_VERSION);
  if (SSL_CTX_load_verify_locations(context, ca_file.c_str(), nullptr) != 1) {
    return "cannot use " + ca_file + " as the TLS CA file (PEM): " + openssl_errors();
  }
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  // Links are few and busy: each keeps its record buffers rather than allocate them again for
  // every request (configure() releases them for the many idle client connections).
  SSL_CTX_clear_mode(context, SSL_MODE_RELEASE_BUFFERS);
  return {};
}

std::string configure(SSL_CTX* context, const TlsFiles& files) {
  const std::string& cert_file = files.cert;
  const std::string& key_file = files.key;
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                   SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(context, 0);
  SSL_CTX_set_session_cache_mode(context, SSL_SESS_CACHE_OFF);
  // An idle connection gives its record buffers back (thousands of idle consumers).
  SSL_CTX_set_mode(context, SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_set_cipher_list(context, tls12_ciphers) != 1) {
    return "TLS cipher list refused: " + openssl_errors();
  }
  if (std::string error = check_readable(cert_file, "certificate"); !error.empty()) return error;
  if (std::string error = check_readable(key_file, "key"); !error.empty()) return error;
  if (SSL_CTX_use_certificate_chain_file(context, cert_file.c_str()) != 1) {
    return "cannot use " + cert_file + " as the TLS certificate chain (PEM): " + openssl_errors();
  }
  if (SSL_CTX_use_PrivateKey_file(context, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL compares the key with the certificate as it loads it.
    const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    return (mismatch ? "the TLS key " + key_file + " does not match the certificate " + cert_file
                     : "cannot use " + key_file + " as the TLS private key (PEM)") +
           ": " + openssl_errors();
  }
  if (SSL_CTX_check_private_key(context) != 1) {
    return "the TLS key " + key_file + " does not match the certificate " + cert_file + ": " +
           openssl_errors();
  }
  return files.peer_ca.empty() ? std::string() : require_peer_certificates(context, files.peer_ca);
}

}  // namespace

std::unique_ptr<TlsContext> TlsContext::load(const TlsFiles& files, std::string& error) {
  ERR_clear_error();
  // Either role: a link's session is the server or the client end (TlsSession::open).
  SSL_CTX* context = SSL_CTX_new(files.peer_ca.empty() ? TLS_server_method() : TLS_method());
  if (context == nullptr) {
    error = "cannot create a TLS context: " + openssl_errors();
    return nullptr;
  }
  error = configure(context, files);
  if (!error.empty()) {
    SSL_CTX_free(context);
    return nullptr;
  }
  return std::unique_ptr<TlsContext>(new TlsContext(context));
}

TlsContext::~TlsContext() { SSL_CTX_free(context_); }

std::unique_ptr<TlsSession> TlsSession::accept(const TlsContext& context) {
  return open(context, true);
}

std::unique_ptr<TlsSession> TlsSession::connect(const TlsContext& context) {
  return open(context, false);
}

std::unique_ptr<TlsSession> TlsSession::open(const TlsContext& context, bool server) {
  SSL* ssl = SSL_new(context.get());
  BIO* input = BIO_new(BIO_s_mem());
  BIO* output = BIO_new(BIO_s_mem());
  if (ssl == nullptr || input == nullptr || output == nullptr) {
    BIO_free(input);
    BIO_free(output);
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  // An empty memory BIO means "wait for more", not end of stream.
  BIO_set_mem_eof_return(input, -1);
  BIO_set_mem_eof_return(output, -1);
  SSL_set_bio(ssl, input, output);  // ssl owns both from here.
  if (server) {
    SSL_set_accept_state(ssl);
  } else {
    SSL_set_connect_state(ssl);
  }
  return std::unique_ptr<TlsSession>(new TlsSession(ssl, input, output));
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

void TlsSession::feed(std::span<const std::byte> ciphertext) {
  // A memory BIO takes everything (it grows); read() drains it right after.
  HARK_ASSERT(ciphertext.size() <= INT_MAX);
  if (ciphertext.empty()) return;
  const int written = BIO_write(input_, ciphertext.data(), static_cast<int>(ciphertext.size()));
  HARK_ASSERT(written == static_cast<int>(ciphertext.size()));
}

TlsSession::ReadResult TlsSession::read(std::span<std::byte> plaintext) {
  ERR_clear_error();
  const int size = static_cast<int>(std::min<size_t>(plaintext.size(), INT_MAX));
  const int got = SSL_read(ssl_, plaintext.data(), size);
  if (got > 0) return {ReadState::data, static_cast<size_t>(got)};
  switch (SSL_get_error(ssl_, got)) {
    case SSL_ERROR_WANT_READ: return {ReadState::more};
    case SSL_ERROR_ZERO_RETURN: return {ReadState::closed};
    default:
      note_failure(SSL_is_init_finished(ssl_) ? "TLS record" : "TLS handshake");
      return {ReadState::failed};
  }
}

bool TlsSession::encrypt(std::span<const std::span<const std::byte>> parts, protocol::Bytes& out) {
  // Gathered into full records (a response header alone would be a record of its own).
  std::array<std::byte, 16 * 1024> record;
  size_t filled = 0;
  auto flush = [&]() {
    ERR_clear_error();
    if (filled == 0) return true;
    const int written = SSL_write(ssl_, record.data(), static_cast<int>(filled));
    filled = 0;
    take_output(out);  // The output BIO never holds more than a record.
    if (written > 0) return true;
    note_failure("TLS write");
    return false;
  };
  for (std::span<const std::byte> part : parts) {
    while (!part.empty()) {
      const size_t take = std::min(part.size(), record.size() - filled);
      std::memcpy(record.data() + filled, part.data(), take);
      filled += take;
      part = part.subspan(take);
      if (filled == record.size() && !flush()) return false;
    }
  }
  return flush();
}

size_t TlsSession::output_pending() const { return BIO_ctrl_pending(output_); }

void TlsSession::take_output(protocol::Bytes& out) {
  const size_t pending = output_pending();
  if (pending == 0) return;
  const size_t start = out.size();
  out.resize(start + pending);
  const int got = BIO_read(output_, out.data() + start, static_cast<int>(pending));
  HARK_ASSERT(got == static_cast<int>(pending));
}

bool TlsSession::established() const { return SSL_is_init_finished(ssl_) == 1; }

void TlsSession::note_failure(const char* what) {
  failure_ = std::string(what) + ": " + openssl_errors();
  // OpenSSL's queue says only "certificate verify failed"; the verification says why.
  const long verified = SSL_get_verify_result(ssl_);
  if (verified != X509_V_OK) {
    failure_ +=
        std::string(" (the peer's certificate: ") + X509_verify_cert_error_string(verified) + ")";
  }
}

}  // namespace hark::server
