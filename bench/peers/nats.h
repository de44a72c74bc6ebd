#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hark::bench {

// A minimal NATS client protocol (core NATS plus the JetStream API subjects the bench uses):
// CONNECT / PING / PONG / PUB / SUB / MSG / HMSG. Every connection subscribes once to its own
// inbox wildcard `_INBOX.<prefix>.>` (sid 1); JetStream API replies, pulled messages and
// publish acks all arrive there.

// One thing the server sent.
struct NatsEvent {
  enum class Kind { msg, ping, pong, ok, err, info } kind = Kind::ok;
  std::string subject;
  std::string reply;    // A pulled message's $JS.ACK subject.
  int status = 0;       // HMSG status line: 408 (pull expired), 404, 409, 100; 0 for MSG.
  std::string payload;  // MSG/HMSG payload (headers stripped); -ERR text.
};

// Parses one event at the front of `bytes`: its size, 0 if more bytes are needed, -1 if
// malformed.
ptrdiff_t parse_nats(std::span<const std::byte> bytes, NatsEvent& out);

// CONNECT (headers on, so pull status comes as HMSG), SUB to the inbox wildcard, PING.
std::string nats_handshake(const std::string& inbox_prefix);
std::string nats_pub(std::string_view subject, std::string_view reply, std::string_view payload);
// A JetStream pull of up to `batch` messages waiting at most `expires_ns` (MSG.NEXT).
std::string nats_pull(const std::string& stream, const std::string& consumer,
                      const std::string& reply, size_t batch, long long expires_ns);
// A unique inbox prefix for a connection.
std::string nats_inbox_prefix();

// A blocking client on one connection (TCP_NODELAY); answers the server's PINGs. One thread.
class NatsClient {
 public:
  NatsClient() = default;
  ~NatsClient();
  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  // Connects and completes the handshake (waits for the PONG).
  bool connect(const std::string& address);
  bool send(std::string_view bytes);
  // The next MSG or HMSG (errors from the server fail it, with a message).
  bool next(NatsEvent& event);
  // A request on `subject` answered on a fresh inbox subject: the reply's payload, false if
  // none came or it carries a JetStream "error".
  bool request(const std::string& subject, const std::string& payload, std::string& reply);
  // A subject under this connection's inbox.
  std::string inbox(const std::string& leaf) const { return "_INBOX." + prefix_ + "." + leaf; }

 private:
  bool read_event(NatsEvent& event);

  int fd_ = -1;
  std::string prefix_;
  std::vector<std::byte> in_;
  size_t used_ = 0;
  unsigned requests_ = 0;
};

// JetStream setup through `admin`: a file-backed stream of `subject` and durable pull
// consumers on it (ack policy "all": acking a message acks all before it, as a committed
// offset does).
bool nats_create_stream(NatsClient& admin, const std::string& stream, const std::string& subject);
bool nats_create_consumer(NatsClient& admin, const std::string& stream, const std::string& name);

}  // namespace hark::bench
