#include "hark/bench/suite/echo.h"

#include <unistd.h>

#include <cstdio>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "hark/bench/suite/net.h"

namespace hark::bench {

std::vector<double> measure_echo(int count, size_t size, std::chrono::microseconds gap) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("echo listener");
    if (listener >= 0) ::close(listener);
    return {};
  }
  std::thread server([listener, size] {
    const int connection = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) return;
    set_nodelay(connection);
    std::vector<std::byte> buffer(size);
    while (read_all(connection, buffer) && write_all(connection, buffer)) {
    }
    ::close(connection);
  });
  std::vector<double> samples;
  const int client = connect_tcp("127.0.0.1:" + std::to_string(ntohs(address.sin_port)));
  if (client >= 0) {
    std::vector<std::byte> message(size, std::byte{0x5a});
    std::vector<std::byte> echoed(size);
    for (int i = 0; i < count; i++) {
      if (gap.count() > 0) std::this_thread::sleep_for(gap);
      const auto sent = SteadyClock::now();
      if (!write_all(client, message) || !read_all(client, echoed)) {
        std::fprintf(stderr, "echo: connection failed\n");
        break;
      }
      samples.push_back(micros_between(sent, SteadyClock::now()));
    }
    ::close(client);  // The server reads end of stream and returns.
  } else {
    ::shutdown(listener, SHUT_RDWR);  // Unblocks the accept.
  }
  server.join();
  ::close(listener);
  return samples;
}

std::vector<double> without_warmup(std::vector<double> samples) {
  const size_t warmup = samples.size() / 20;
  samples.erase(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(warmup));
  return samples;
}

}  // namespace hark::bench
