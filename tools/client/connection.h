#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/protocol/writer.h"
#include "hark/tools/client/tls.h"

namespace hark::client {

// One blocking TCP connection to an Iggy-protocol server: sends request frames, reads
// response frames. Every operation takes a deadline (CLOCK_MONOTONIC), so nothing blocks
// past it whatever the peer does. Partial reads and writes, EINTR and EAGAIN are handled
// inside; the caller sees whole frames or an Error.
//
// Any transport failure or timeout closes the connection: with no request ids on the wire,
// a late or half-read response would be matched to the next request. Errors:
// invalid_server_address (33), cannot_establish_connection (9), not_connected (61),
// disconnected (8: the peer closed or the socket failed), task_timeout (12001),
// invalid_size_bytes (80: a response larger than allowed), client_shutdown (63: cancelled
// through the cancel descriptor); with TLS (set_tls) also the handshake's: invalid_tls_domain
// (64), invalid_tls_certificate_path (65), invalid_tls_certificate (66), each logged with
// OpenSSL's reason. Owned by one thread. Control plane: allocates the response
// payload.
class Connection {
 public:
  Connection() = default;
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // TLS for the next open() (a copy is kept).
  void set_tls(const TlsOptions& tls) { tls_options_ = tls; }
  // Connects to "host:port" or "[v6 address]:port", trying each resolved address; with TLS,
  // then shakes hands and verifies the server's certificate before the deadline.
  Status open(std::string_view host_port, Instant deadline);
  void close();
  bool is_open() const { return fd_ >= 0; }

  // While `fd` is readable, no wait blocks: a command that would wait for the socket fails
  // with client_shutdown and closes the connection (a server drops a parked poll whose
  // client is gone). Bytes already readable on the socket are still taken first. -1 turns it
  // off. `fd` must stay open while set; the Connection never reads or closes it.
  void set_cancel_fd(int fd) { cancel_fd_ = fd; }

  // Writes all of `frame`.
  Status send_all(std::span<const std::byte> frame, Instant deadline);

  // Reads one response. Status 0 → its payload; any other status → that code as the Error
  // (Iggy sends no payload with an error; one is read and dropped if present).
  Result<protocol::Bytes> read_response(Instant deadline, uint32_t payload_max);

 private:
  // Waits until the socket is readable (POLLIN) or writable (POLLOUT), or the deadline.
  Status wait_for(short events, Instant deadline);
  Status read_exact(std::span<std::byte> buffer, Instant deadline);
  Status fail(Error error);
  // TLS: the handshake, and the loops of send_all and read_exact over the session.
  Status start_tls(std::string_view host, Instant deadline);
  Status wait_tls(TlsStream::Want want, Instant deadline);
  Status send_tls(std::span<const std::byte> frame, Instant deadline);
  Status read_tls(std::span<std::byte> buffer, Instant deadline);

  // What the first read of a response takes beyond its header.
  static constexpr size_t first_read_bytes = 4096;

  int fd_ = -1;
  int cancel_fd_ = -1;
  TlsOptions tls_options_;
  std::unique_ptr<TlsStream> tls_;  // While open with TLS.
};

}  // namespace hark::client
