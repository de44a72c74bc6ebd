#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hark::bench {

// A RESP2 value: what redis-server answers.
struct Resp {
  enum class Kind { simple, error, integer, bulk, nil, array } kind = Kind::nil;
  std::string text;  // simple, error, bulk.
  int64_t integer = 0;
  std::vector<Resp> items;  // array.
};

// Parses one value at the front of `bytes`: its size, 0 if more bytes are needed, -1 if
// malformed.
ptrdiff_t parse_resp(std::span<const std::byte> bytes, Resp& out);
// A command as RESP: an array of bulk strings (binary-safe).
std::string resp_command(std::initializer_list<std::string_view> args);

// The stream entries of an XREAD reply for one stream: (entry id, the first field's value).
// Empty for a nil (timed-out) reply.
std::vector<std::pair<std::string, std::string>> xread_entries(const Resp& reply);

// A blocking RESP client on one connection (TCP_NODELAY). One thread.
class RedisClient {
 public:
  RedisClient() = default;
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  bool connect(const std::string& address);
  // Writes one or more commands (pipelined); false if the connection failed.
  bool send(std::string_view commands);
  // Reads the next reply; false if the connection failed or the bytes were not RESP.
  bool read(Resp& reply);
  // send + read, and false (with a message) for an error reply too.
  bool call(std::string_view command, Resp& reply);

 private:
  int fd_ = -1;
  std::vector<std::byte> in_;
  size_t used_ = 0;
};

}  // namespace hark::bench
