#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "hark/core/base/result.h"
#include "hark/protocol/writer.h"

// OpenSSL's types, declared here so that only tls.cc includes OpenSSL.
struct ssl_ctx_st;
struct ssl_st;
struct bio_st;

namespace hark::server {

// What a TlsContext is built from.
struct TlsFiles {
  std::string cert;  // PEM, the chain with the leaf first.
  std::string key;   // PEM.
  // Empty: a server that asks no certificate of its clients (the client listener, TLS 1.2 and
  // 1.3). Set: mutual TLS 1.3 (the node links, docs/cluster.md §Trust): sessions of either
  // role present `cert` and require the peer's, signed by this CA (PEM); names in the peer's
  // certificate are not checked.
  std::string peer_ca;
};

// TLS for the client listener and the node links (docs/operations.md §TLS): one context each,
// built at start from PEM files. Renegotiation off, no session tickets (no state kept between
// connections). Thread-safe once built (OpenSSL's SSL_CTX is); shared by every shard.
class TlsContext {
 public:
  // Loads the files and checks that the key matches the certificate. Errors: a line naming the
  // file and OpenSSL's reason.
  static std::unique_ptr<TlsContext> load(const TlsFiles& files, std::string& error);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* get() const { return context_; }

 private:
  explicit TlsContext(ssl_ctx_st* context) : context_(context) {}
  ssl_ctx_st* context_;
};

// One connection's or link's TLS state: an OpenSSL session over two memory BIOs, so the
// socket keeps its io_uring receive and send (this kernel has no kTLS) and only the bytes pass
// through here: ciphertext the recv delivered is fed in and decrypted into the request buffer;
// a response is encrypted into one buffer the Sender writes. The handshake happens inside the
// reads (a server answers what the client sent; a client's first read() with nothing fed
// produces its hello), so it never blocks the shard, and it runs under the connection's login
// deadline (a link's handshake deadline). Buffers are bounded: the input is decrypted
// as it arrives (at most one partial record is held), and output nobody takes is capped
// (output_overflow()). Used by one thread at a time; it moves with its connection
// (migration.h).
class TlsSession {
 public:
  // The server or the client end; null when OpenSSL cannot allocate a session.
  static std::unique_ptr<TlsSession> accept(const TlsContext& context);
  static std::unique_ptr<TlsSession> connect(const TlsContext& context);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // What read() found.
  enum class ReadState : uint8_t {
    data,    // `bytes` plaintext bytes were written to the buffer.
    more,    // Nothing more until more ciphertext arrives.
    closed,  // The peer sent close_notify.
    failed,  // A handshake or record error (failure() says which): drop the connection.
  };
  struct ReadResult {
    ReadState state;
    size_t bytes = 0;
  };

  // Takes ciphertext the socket delivered (copied). Then call read() until it answers more.
  void feed(std::span<const std::byte> ciphertext);
  ReadResult read(std::span<std::byte> plaintext);
  // Encrypts `parts` as application data, appending to `out` after any output the session
  // already had (handshake records, alerts). False on an error (failure()).
  bool encrypt(std::span<const std::span<const std::byte>> parts, protocol::Bytes& out);
  // Output the session produced on its own (the handshake's answer, an alert), not yet taken.
  size_t output_pending() const;
  // Appends that output to `out`.
  void take_output(protocol::Bytes& out);
  // More output waits than a handshake or a few alerts make: a peer provoking answers it
  // never reads.
  bool output_overflow() const { return output_pending() > output_pending_max; }
  bool established() const;
  // The reason of the last failure (OpenSSL's, and why the peer's certificate was refused when
  // it was), for the log.
  const std::string& failure() const { return failure_; }

  static constexpr size_t output_pending_max = 64 * 1024;

 private:
  TlsSession(ssl_st* ssl, bio_st* input, bio_st* output)
      : ssl_(ssl), input_(input), output_(output) {}
  static std::unique_ptr<TlsSession> open(const TlsContext& context, bool server);
  void note_failure(const char* what);

  ssl_st* ssl_;
  bio_st* input_;   // Owned by ssl_.
  bio_st* output_;  // Owned by ssl_.
  std::string failure_;
};

}  // namespace hark::server
