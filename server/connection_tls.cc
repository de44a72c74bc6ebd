// TLS around a connection's receive and send (docs/operations.md §TLS): the connection's
// io_uring recv and Sender stay as they are; only the bytes pass through its TlsSession.

#include <array>
#include <utility>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/protocol/command.h"
#include "hark/server/connection.h"
#include "hark/server/shard_server.h"

namespace hark::server {

void Connection::received_tls(std::span<const std::byte> ciphertext) {
  // As received(): after a rejected frame, or once closing, nothing more is read.
  if (ending() || request_ == RequestState::answering_last) return;
  tls_->feed(ciphertext);
  const std::span<std::byte> plaintext = shard_.tls_plaintext();
  for (;;) {
    const TlsSession::ReadResult read = tls_->read(plaintext);
    switch (read.state) {
      case TlsSession::ReadState::data:
        received(plaintext.first(read.bytes));
        if (ending()) return;
        continue;
      case TlsSession::ReadState::more: break;
      case TlsSession::ReadState::closed:
        HARK_LOG_DEBUG("connection %s: TLS close_notify", peer_);
        drop();
        return;
      case TlsSession::ReadState::failed:
        shard_.note_refusal(Refusal::tls_failure, peer_);
        HARK_LOG_INFO("connection %s: %s; closing", peer_, tls_->failure());
        drop();
        return;
    }
    break;
  }
  if (tls_->output_overflow()) {
    shard_.note_refusal(Refusal::tls_failure, peer_);
    HARK_LOG_INFO("connection %s: over %u bytes of TLS answers it does not read; closing", peer_,
                  TlsSession::output_pending_max);
    drop();
    return;
  }
  flush_tls();
}

void Connection::flush_tls() {
  // While a response is written, the session's own output goes out ahead of the next one
  // (encrypt() takes it first).
  if (sender_.busy() || tls_->output_pending() == 0 || phase_ == Phase::dropping ||
      phase_ == Phase::closed) {
    return;
  }
  tls_out_.clear();
  tls_->take_output(tls_out_);
  tls_flushing_ = true;
  const std::array<std::span<const std::byte>, 1> records{tls_out_};
  sender_.send(fd_, records, *this);
}

void Connection::tls_flushed() {
  if (tls_waiting_parts_ != 0) {
    send_tls(std::exchange(tls_waiting_parts_, 0));
    return;
  }
  flush_tls();
  close_if_idle();
  migrate_if_ready();
}

void Connection::send_tls(size_t parts_count) {
  if (sender_.busy()) {
    // The handshake's last answer is still being written: the response follows it.
    HARK_ASSERT(tls_flushing_ && tls_waiting_parts_ == 0);
    tls_waiting_parts_ = parts_count;
    return;
  }
  // A copy, unlike plain TCP: the records are built from the parts (a poll's messages too).
  tls_out_.clear();
  if (!tls_->encrypt(std::span<const std::span<const std::byte>>(parts_.data(), parts_count),
                     tls_out_)) {
    HARK_LOG_WARN("connection %s: response to %s not encrypted: %s; closing", peer_,
                  protocol::command_name(code_), tls_->failure());
    drop();
    return;
  }
  const std::array<std::span<const std::byte>, 1> records{tls_out_};
  sender_.send(fd_, records, *this);
}

}  // namespace hark::server
