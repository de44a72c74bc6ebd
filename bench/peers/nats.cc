#include "hark/bench/peers/nats.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <sys/socket.h>

#include "hark/bench/suite/net.h"

namespace hark::bench {
namespace {

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream stream{std::string(line)};
  std::string word;
  while (stream >> word) out.push_back(word);
  return out;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.substr(0, prefix.size()) == prefix;
}

}  // namespace

ptrdiff_t parse_nats(std::span<const std::byte> bytes, NatsEvent& out) {
  std::string_view line;
  const size_t head = line_end(bytes, line);
  if (head == 0) return bytes.size() > 64 * 1024 ? -1 : 0;
  out = NatsEvent{};
  if (starts_with(line, "PING")) {
    out.kind = NatsEvent::Kind::ping;
    return static_cast<ptrdiff_t>(head);
  }
  if (starts_with(line, "PONG")) {
    out.kind = NatsEvent::Kind::pong;
    return static_cast<ptrdiff_t>(head);
  }
  if (starts_with(line, "+OK")) return static_cast<ptrdiff_t>(head);
  if (starts_with(line, "INFO")) {
    out.kind = NatsEvent::Kind::info;
    return static_cast<ptrdiff_t>(head);
  }
  if (starts_with(line, "-ERR")) {
    out.kind = NatsEvent::Kind::err;
    out.payload = std::string(line);
    return static_cast<ptrdiff_t>(head);
  }
  const bool headers = starts_with(line, "HMSG ");
  if (!headers && !starts_with(line, "MSG ")) return -1;
  // MSG subject sid [reply] size | HMSG subject sid [reply] header_size total_size
  const std::vector<std::string> w = words(line);
  const size_t numbers = headers ? 2 : 1;
  if (w.size() != 3 + numbers && w.size() != 4 + numbers) return -1;
  const bool has_reply = w.size() == 4 + numbers;
  const size_t total = std::strtoull(w.back().c_str(), nullptr, 10);
  const size_t header_size = headers ? std::strtoull(w[w.size() - 2].c_str(), nullptr, 10) : 0;
  if (header_size > total) return -1;
  if (bytes.size() < head + total + 2) return 0;
  out.kind = NatsEvent::Kind::msg;
  out.subject = w[1];
  if (has_reply) out.reply = w[3];
  const char* body = reinterpret_cast<const char*>(bytes.data()) + head;
  if (headers) {  // "NATS/1.0 408 Request Timeout\r\n..."
    const std::string_view block(body, header_size);
    if (starts_with(block, "NATS/1.0 ") && block.size() >= 12) {
      out.status = std::atoi(std::string(block.substr(9, 3)).c_str());
    }
  }
  out.payload.assign(body + header_size, total - header_size);
  return static_cast<ptrdiff_t>(head + total + 2);
}

std::string nats_handshake(const std::string& inbox_prefix) {
  return "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,"
         "\"lang\":\"c++\",\"version\":\"hark-bench\",\"protocol\":1}\r\nSUB _INBOX." +
         inbox_prefix + ".> 1\r\nPING\r\n";
}

std::string nats_pub(std::string_view subject, std::string_view reply, std::string_view payload) {
  std::string out = "PUB ";
  out += subject;
  if (!reply.empty()) {
    out += ' ';
    out += reply;
  }
  out += ' ' + std::to_string(payload.size()) + "\r\n";
  out += payload;
  out += "\r\n";
  return out;
}

std::string nats_pull(const std::string& stream, const std::string& consumer,
                      const std::string& reply, size_t batch, long long expires_ns) {
  return nats_pub(
      "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer, reply,
      "{\"batch\":" + std::to_string(batch) + ",\"expires\":" + std::to_string(expires_ns) + "}");
}

std::string nats_inbox_prefix() {
  static std::atomic<unsigned> next{0};
  return std::to_string(::getpid()) + "x" + std::to_string(next.fetch_add(1));
}

NatsClient::~NatsClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool NatsClient::connect(const std::string& address) {
  fd_ = connect_tcp(address);
  if (fd_ < 0) return false;
  prefix_ = nats_inbox_prefix();
  if (!send(nats_handshake(prefix_))) return false;
  NatsEvent event;
  while (read_event(event)) {
    if (event.kind == NatsEvent::Kind::pong) return true;
  }
  std::fprintf(stderr, "nats: no PONG after CONNECT\n");
  return false;
}

bool NatsClient::send(std::string_view bytes) {
  return write_all(fd_, std::as_bytes(std::span(bytes.data(), bytes.size())));
}

bool NatsClient::read_event(NatsEvent& event) {
  while (true) {
    if (used_ > 0) {
      const ptrdiff_t size = parse_nats(std::span(in_.data(), used_), event);
      if (size < 0) {
        std::fprintf(stderr, "nats: malformed bytes from the server\n");
        return false;
      }
      if (size > 0) {
        std::memmove(in_.data(), in_.data() + size, used_ - static_cast<size_t>(size));
        used_ -= static_cast<size_t>(size);
        if (event.kind == NatsEvent::Kind::ping && !send("PONG\r\n")) return false;
        if (event.kind == NatsEvent::Kind::err) {
          std::fprintf(stderr, "nats: %s\n", event.payload.c_str());
          return false;
        }
        return true;
      }
    }
    if (in_.size() - used_ < 64 * 1024) in_.resize(used_ + 256 * 1024);
    const ssize_t got = ::recv(fd_, in_.data() + used_, in_.size() - used_, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      std::fprintf(stderr, "nats: connection closed\n");
      return false;
    }
    used_ += static_cast<size_t>(got);
  }
}

bool NatsClient::next(NatsEvent& event) {
  while (read_event(event)) {
    if (event.kind == NatsEvent::Kind::msg) return true;
  }
  return false;
}

bool NatsClient::request(const std::string& subject, const std::string& payload,
                         std::string& reply) {
  const std::string inbox_subject = inbox("r" + std::to_string(requests_++));
  if (!send(nats_pub(subject, inbox_subject, payload))) return false;
  NatsEvent event;
  while (next(event)) {
    if (event.subject != inbox_subject) continue;
    reply = event.payload;
    if (event.status >= 400 || reply.find("\"error\"") != std::string::npos) {
      std::fprintf(stderr, "nats: %s -> %d %s\n", subject.c_str(), event.status, reply.c_str());
      return false;
    }
    return true;
  }
  return false;
}

bool nats_create_stream(NatsClient& admin, const std::string& stream, const std::string& subject) {
  std::string reply;
  return admin.request("$JS.API.STREAM.CREATE." + stream,
                       "{\"name\":\"" + stream + "\",\"subjects\":[\"" + subject +
                           "\"],\"storage\":\"file\",\"retention\":\"limits\",\"discard\":"
                           "\"old\",\"num_replicas\":1}",
                       reply);
}

bool nats_create_consumer(NatsClient& admin, const std::string& stream, const std::string& name) {
  std::string reply;
  return admin.request("$JS.API.CONSUMER.DURABLE.CREATE." + stream + "." + name,
                       "{\"stream_name\":\"" + stream + "\",\"config\":{\"durable_name\":\"" +
                           name +
                           "\",\"deliver_policy\":\"all\",\"ack_policy\":\"all\","
                           "\"max_waiting\":512,\"max_ack_pending\":-1}}",
                       reply);
}

}  // namespace hark::bench
