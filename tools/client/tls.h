#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "hark/core/base/result.h"

struct ssl_ctx_st;
struct ssl_st;

namespace hark::client {

// How a client reaches a harkd (or Iggy server) with TLS on its TCP listener.
struct TlsOptions {
  bool enabled = false;
  // PEM certificates of the CAs to trust; empty: the system's (/etc/ssl/certs).
  std::string ca_file;
  // The name the server's certificate must carry (SNI too); empty: the host of the address
  // connected to (an IP address is checked against the certificate's IP entries).
  std::string server_name;
};

// The client side of one TLS session over a connected, non-blocking socket. The peer's
// certificate is verified against the CAs and the name, always: there is no switch to skip
// it. Calls never block; they say what the socket must become (readable, writable) for the
// caller to retry (Connection waits with its deadline). Control plane.
class TlsStream {
 public:
  // What a call needs before it can go on.
  enum class Want : uint8_t { done, read, write, closed, failed };
  struct Io {
    Want want;
    size_t bytes = 0;  // With done: bytes read or written.
  };

  // Null with `error` set (invalid_tls_certificate_path: the CA file cannot be used).
  static std::unique_ptr<TlsStream> create(int fd, const TlsOptions& options, std::string_view host,
                                           Error& error);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  Want handshake();
  Io read(std::span<std::byte> buffer);
  Io write(std::span<const std::byte> bytes);
  // Best effort, never waits: tells the server the session ends (close_notify).
  void shutdown();

  // After handshake() failed: the error to report (invalid_tls_domain: the certificate does
  // not name the server; invalid_tls_certificate: expired, untrusted or otherwise refused;
  // cannot_establish_connection: no TLS handshake at all) and OpenSSL's reason.
  Error failure_code() const { return failure_code_; }
  const std::string& failure() const { return failure_; }

 private:
  TlsStream(ssl_ctx_st* context, ssl_st* ssl) : context_(context), ssl_(ssl) {}
  Want classify(int result, const char* what);

  ssl_ctx_st* context_;
  ssl_st* ssl_;
  Error failure_code_ = Error::cannot_establish_connection;
  std::string failure_;
};

}  // namespace hark::client
