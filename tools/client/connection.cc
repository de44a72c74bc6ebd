#include "hark/tools/client/connection.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <string>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "hark/core/base/clock.h"
#include "hark/core/base/log.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/reader.h"

namespace hark::client {
namespace {

Instant now() { return SystemClock::instance().monotonic_now(); }

// Milliseconds left until `deadline`, rounded up so a wait never ends before it; 0 if past.
int milliseconds_until(Instant deadline) {
  const Duration left = deadline - now();
  if (left <= Duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, INT32_MAX));
}

struct HostPort {
  std::string host;
  std::string port;
};

Result<HostPort> split_host_port(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return Error::invalid_server_address;
  }
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return HostPort{std::string(host), std::string(text.substr(colon + 1))};
}

// A non-blocking connect to one address, finished by poll() before `deadline`. Returns the
// connected socket or -1 (errno-level detail is logged once).
int connect_one(const addrinfo& address, Instant deadline) {
  const int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          address.ai_protocol);
  if (fd < 0) return -1;
  int result = ::connect(fd, address.ai_addr, address.ai_addrlen);
  if (result != 0 && errno == EINPROGRESS) {
    pollfd waiting{.fd = fd, .events = POLLOUT, .revents = 0};
    do {
      result = ::poll(&waiting, 1, milliseconds_until(deadline));
    } while (result < 0 && errno == EINTR);
    int error = result == 1 ? 0 : ETIMEDOUT;
    socklen_t length = sizeof error;
    if (result == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    result = error == 0 ? 0 : -1;
    errno = error;
  }
  if (result != 0) {
    HARK_LOG_WARN("connect failed: %s", std::strerror(errno));
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

Status Connection::open(std::string_view host_port, Instant deadline) {
  close();
  HARK_TRY_ASSIGN(const HostPort target, split_host_port(host_port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  const int resolved = ::getaddrinfo(target.host.c_str(), target.port.c_str(), &hints, &addresses);
  if (resolved != 0) {
    HARK_LOG_WARN("cannot resolve %s: %s", target.host, gai_strerror(resolved));
    return Error::invalid_server_address;
  }
  for (const addrinfo* address = addresses; address != nullptr && fd_ < 0;
       address = address->ai_next) {
    fd_ = connect_one(*address, deadline);
  }
  ::freeaddrinfo(addresses);
  if (fd_ < 0) return Error::cannot_establish_connection;
  return tls_options_.enabled ? start_tls(target.host, deadline) : ok_status();
}

void Connection::close() {
  if (tls_ != nullptr) tls_->shutdown();
  tls_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status Connection::start_tls(std::string_view host, Instant deadline) {
  Error error = Error::cannot_establish_connection;
  tls_ = TlsStream::create(fd_, tls_options_, host, error);
  if (tls_ == nullptr) return fail(error);
  for (;;) {
    const TlsStream::Want want = tls_->handshake();
    if (want == TlsStream::Want::done) return ok_status();
    if (want == TlsStream::Want::failed || want == TlsStream::Want::closed) {
      HARK_LOG_WARN("TLS with %s failed: %s", host, tls_->failure());
      const Error code = want == TlsStream::Want::closed ? Error::cannot_establish_connection
                                                         : tls_->failure_code();
      tls_.reset();  // No close_notify for a session that never started.
      return fail(code);
    }
    HARK_TRY(wait_tls(want, deadline));
  }
}

Status Connection::wait_tls(TlsStream::Want want, Instant deadline) {
  if (want == TlsStream::Want::read) return wait_for(POLLIN, deadline);
  if (want == TlsStream::Want::write) return wait_for(POLLOUT, deadline);
  if (want == TlsStream::Want::failed) HARK_LOG_WARN("%s", tls_->failure());
  return fail(Error::disconnected);
}

Status Connection::send_tls(std::span<const std::byte> frame, Instant deadline) {
  while (!frame.empty()) {
    const TlsStream::Io io = tls_->write(frame);
    if (io.want == TlsStream::Want::done) {
      frame = frame.subspan(io.bytes);
    } else {
      HARK_TRY(wait_tls(io.want, deadline));
    }
  }
  return ok_status();
}

Status Connection::read_tls(std::span<std::byte> buffer, Instant deadline) {
  while (!buffer.empty()) {
    const TlsStream::Io io = tls_->read(buffer);
    if (io.want == TlsStream::Want::done) {
      buffer = buffer.subspan(io.bytes);
    } else {
      HARK_TRY(wait_tls(io.want, deadline));
    }
  }
  return ok_status();
}

Status Connection::fail(Error error) {
  close();
  return error;
}

Status Connection::wait_for(short events, Instant deadline) {
  std::array<pollfd, 2> waiting{pollfd{.fd = fd_, .events = events, .revents = 0},
                                pollfd{.fd = cancel_fd_, .events = POLLIN, .revents = 0}};
  const nfds_t count = cancel_fd_ >= 0 ? 2 : 1;
  for (;;) {
    const int result = ::poll(waiting.data(), count, milliseconds_until(deadline));
    // The socket first: an answer that has arrived is taken even when a cancel is pending.
    if (result > 0 && waiting[0].revents != 0) return ok_status();  // Or an error to report.
    if (result > 0) return fail(Error::client_shutdown);
    if (result == 0) return fail(Error::task_timeout);
    if (errno != EINTR) return fail(Error::disconnected);
  }
}

Status Connection::send_all(std::span<const std::byte> frame, Instant deadline) {
  if (fd_ < 0) return Error::not_connected;
  if (tls_ != nullptr) return send_tls(frame, deadline);
  while (!frame.empty()) {
    const ssize_t sent = ::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL);
    if (sent > 0) {
      frame = frame.subspan(static_cast<size_t>(sent));
    } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      HARK_TRY(wait_for(POLLOUT, deadline));
    } else if (sent < 0 && errno == EINTR) {
      continue;
    } else {
      return fail(Error::disconnected);
    }
  }
  return ok_status();
}

Status Connection::read_exact(std::span<std::byte> buffer, Instant deadline) {
  if (tls_ != nullptr) return read_tls(buffer, deadline);
  while (!buffer.empty()) {
    const ssize_t received = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (received > 0) {
      buffer = buffer.subspan(static_cast<size_t>(received));
    } else if (received == 0) {
      return fail(Error::disconnected);  // The peer closed, possibly mid-frame.
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      HARK_TRY(wait_for(POLLIN, deadline));
    } else if (errno != EINTR) {
      return fail(Error::disconnected);
    }
  }
  return ok_status();
}

Result<protocol::Bytes> Connection::read_response(Instant deadline, uint32_t payload_max) {
  if (fd_ < 0) return Error::not_connected;
  // An answer is never there the moment its request left: wait first, then take the header
  // and what has arrived of the payload in one readv (usually all of it). Two system calls
  // per small response instead of four: a parked poll's wake-up is measured through this.
  std::array<std::byte, protocol::response_header_size> header;
  protocol::Bytes payload(first_read_bytes);
  size_t received = 0;
  if (tls_ != nullptr) {
    // The session may hold decrypted bytes already: no wait on the socket first.
    HARK_TRY(read_tls(header, deadline));
    received = header.size();
  } else {
    HARK_TRY(wait_for(POLLIN, deadline));
  }
  while (received < header.size()) {
    std::array<iovec, 2> parts{iovec{header.data() + received, header.size() - received},
                               iovec{payload.data(), payload.size()}};
    const ssize_t got = ::readv(fd_, parts.data(), static_cast<int>(parts.size()));
    if (got > 0) {
      received += static_cast<size_t>(got);
    } else if (got == 0) {
      return fail(Error::disconnected).error();
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      HARK_TRY(wait_for(POLLIN, deadline));
    } else if (errno != EINTR) {
      return fail(Error::disconnected).error();
    }
  }
  const protocol::FrameScan scan = protocol::scan_response(header, payload_max);
  if (scan.state == protocol::FrameState::rejected) return fail(scan.error).error();
  const uint32_t status = protocol::load_u32(header, 0);
  const uint32_t length = protocol::load_u32(header, 4);
  const size_t payload_received = received - header.size();
  if (payload_received > length) {
    // Bytes past this response although only one request was outstanding: out of step.
    return fail(Error::invalid_bytes_response).error();
  }
  payload.resize(length);
  HARK_TRY(read_exact(std::span(payload).subspan(payload_received), deadline));
  if (status != 0) return static_cast<Error>(status);
  return payload;
}

}  // namespace hark::client
