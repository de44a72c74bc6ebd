#include "hark/bench/peers/redis.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/socket.h>

#include "hark/bench/suite/net.h"

namespace hark::bench {
namespace {

ptrdiff_t parse_at(std::span<const std::byte> bytes, Resp& out, int depth) {
  if (depth > 8) return -1;
  std::string_view line;
  const size_t head = line_end(bytes, line);
  if (head == 0) return 0;
  if (line.empty()) return -1;
  const char type = line[0];
  const std::string rest(line.substr(1));
  switch (type) {
    case '+':
    case '-':
      out.kind = type == '+' ? Resp::Kind::simple : Resp::Kind::error;
      out.text = rest;
      return static_cast<ptrdiff_t>(head);
    case ':':
      out.kind = Resp::Kind::integer;
      out.integer = std::strtoll(rest.c_str(), nullptr, 10);
      return static_cast<ptrdiff_t>(head);
    case '$': {
      const long long size = std::strtoll(rest.c_str(), nullptr, 10);
      if (size < 0) {
        out.kind = Resp::Kind::nil;
        return static_cast<ptrdiff_t>(head);
      }
      const size_t total = head + static_cast<size_t>(size) + 2;
      if (bytes.size() < total) return 0;
      out.kind = Resp::Kind::bulk;
      out.text.assign(reinterpret_cast<const char*>(bytes.data()) + head,
                      static_cast<size_t>(size));
      return static_cast<ptrdiff_t>(total);
    }
    case '*': {
      const long long count = std::strtoll(rest.c_str(), nullptr, 10);
      if (count < 0) {
        out.kind = Resp::Kind::nil;
        return static_cast<ptrdiff_t>(head);
      }
      out.kind = Resp::Kind::array;
      out.items.assign(static_cast<size_t>(count), Resp{});
      size_t at = head;
      for (Resp& item : out.items) {
        const ptrdiff_t size = parse_at(bytes.subspan(at), item, depth + 1);
        if (size <= 0) return size;
        at += static_cast<size_t>(size);
      }
      return static_cast<ptrdiff_t>(at);
    }
    default: return -1;
  }
}

}  // namespace

ptrdiff_t parse_resp(std::span<const std::byte> bytes, Resp& out) {
  out = Resp{};
  return parse_at(bytes, out, 0);
}

std::string resp_command(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string_view arg : args) {
    out += "$" + std::to_string(arg.size()) + "\r\n";
    out += arg;
    out += "\r\n";
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> xread_entries(const Resp& reply) {
  std::vector<std::pair<std::string, std::string>> entries;
  // [[stream, [[id, [field, value, ...]], ...]]]
  if (reply.kind != Resp::Kind::array || reply.items.empty()) return entries;
  const Resp& stream = reply.items[0];
  if (stream.items.size() != 2) return entries;
  for (const Resp& entry : stream.items[1].items) {
    if (entry.items.size() != 2 || entry.items[1].items.size() < 2) continue;
    entries.emplace_back(entry.items[0].text, entry.items[1].items[1].text);
  }
  return entries;
}

RedisClient::~RedisClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RedisClient::connect(const std::string& address) {
  fd_ = connect_tcp(address);
  return fd_ >= 0;
}

bool RedisClient::send(std::string_view commands) {
  return write_all(fd_, std::as_bytes(std::span(commands.data(), commands.size())));
}

bool RedisClient::read(Resp& reply) {
  while (true) {
    if (used_ > 0) {
      const ptrdiff_t size = parse_resp(std::span(in_.data(), used_), reply);
      if (size < 0) return false;
      if (size > 0) {
        std::memmove(in_.data(), in_.data() + size, used_ - static_cast<size_t>(size));
        used_ -= static_cast<size_t>(size);
        return true;
      }
    }
    if (in_.size() - used_ < 64 * 1024) in_.resize(used_ + 256 * 1024);
    const ssize_t got = ::recv(fd_, in_.data() + used_, in_.size() - used_, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    used_ += static_cast<size_t>(got);
  }
}

bool RedisClient::call(std::string_view command, Resp& reply) {
  if (!send(command) || !read(reply)) {
    std::fprintf(stderr, "redis: connection failed\n");
    return false;
  }
  if (reply.kind == Resp::Kind::error) {
    std::fprintf(stderr, "redis: %s\n", reply.text.c_str());
    return false;
  }
  return true;
}

}  // namespace hark::bench
