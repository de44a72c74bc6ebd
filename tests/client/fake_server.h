#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "hark/core/base/error.h"
#include "hark/protocol/writer.h"

namespace hark::client::test {

// One accepted connection of a FakeServer, used by the script on the server thread.
class FakeConnection {
 public:
  explicit FakeConnection(int fd) : fd_(fd) {}
  ~FakeConnection();
  FakeConnection(const FakeConnection&) = delete;
  FakeConnection& operator=(const FakeConnection&) = delete;

  struct Received {
    uint32_t code = 0;
    protocol::Bytes payload;
  };

  // The next whole request frame, or nullopt when the client closed the connection.
  std::optional<Received> read_request();
  void send(std::span<const std::byte> bytes);
  void send_ok(std::span<const std::byte> payload);
  void send_error(Error error);
  void close();

 private:
  int fd_;
};

// A scripted server on 127.0.0.1 and an ephemeral port, for client tests: it accepts
// connections one at a time on its own thread and runs `script` on each. Stops (and joins)
// in its destructor.
class FakeServer {
 public:
  using Script = std::function<void(FakeConnection&)>;

  explicit FakeServer(Script script);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  // "127.0.0.1:<port>".
  std::string address() const;

 private:
  void run();

  Script script_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hark::client::test
