// The loopback ceilings of the `throughput` scenario (wire_ceiling.h).
#include "hark/bench/suite/wire_ceiling.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "hark/bench/peers/peer_process.h"
#include "hark/bench/suite/net.h"

namespace hark::bench {
namespace {

constexpr size_t chunk_max = 256 * 1024;

// A connected pair of loopback TCP sockets (blocking, TCP_NODELAY): {client, accepted}.
bool socket_pair(int (&fds)[2]) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool listening =
      listener >= 0 &&
      ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::listen(listener, 1) == 0 &&
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  fds[0] = listening ? connect_tcp("127.0.0.1:" + std::to_string(ntohs(address.sin_port))) : -1;
  fds[1] = fds[0] >= 0 ? ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) : -1;
  if (listener >= 0) ::close(listener);
  if (fds[1] >= 0) set_nodelay(fds[1]);
  return fds[0] >= 0 && fds[1] >= 0;
}

// Reads until end of stream; the bytes read.
uint64_t drain(int fd) {
  std::vector<std::byte> buffer(chunk_max);
  uint64_t total = 0;
  for (ssize_t got; (got = ::read(fd, buffer.data(), buffer.size())) > 0;) {
    total += static_cast<uint64_t>(got);
  }
  return total;
}

// The relay: what arrives on `from` goes out on `to` until `from` ends. `acknowledged`: it
// reads whole batches (the producer sends only those) the size of `buffer`, and answers each
// on `from` with 8 bytes once written on. It allocates nothing: it runs in a forked child of a
// process with threads.
void relay_loop(int from, int to, std::span<std::byte> buffer, bool acknowledged) {
  const std::array<std::byte, 8> ack{};
  for (;;) {
    const ssize_t got = acknowledged ? (read_all(from, buffer) ? std::ssize(buffer) : 0)
                                     : ::read(from, buffer.data(), buffer.size());
    if (got <= 0 || !write_all(to, {buffer.data(), static_cast<size_t>(got)})) break;
    if (acknowledged && !write_all(from, ack)) break;
  }
  ::shutdown(to, SHUT_WR);
}

double mb_per_s(uint64_t bytes, SteadyClock::duration elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : -1;
}

}  // namespace

double iperf3_mb_per_s(int seconds) {
  const std::string iperf3 = PeerProcess::find_program("iperf3");
  if (iperf3.empty()) return -1;
  const std::string port = std::to_string(free_loopback_port());
  // The server serves one client (-1) and exits; the client retries until it listens (iperf3
  // 3.12 exits 0 with -J even when the connection was refused, so a try counts only once its
  // JSON has the received sum). Each is bounded by `timeout`: a server no client reached (it
  // started late on a busy machine, or the port was taken) would wait for one forever, and an
  // iperf3 run once hung on a loaded machine (the smoke test's 180 s ran out in 1 of 6 runs); a
  // run cut short reads as "iperf3 failed" and the blast row stands in.
  const std::string client = "timeout " + std::to_string(seconds + 10) + " " + iperf3 +
                             " -c 127.0.0.1 -p " + port + " -t " + std::to_string(seconds) +
                             " -l 128K -J 2>/dev/null";
  const std::string command = "timeout " + std::to_string(seconds + 20) + " " + iperf3 +
                              " -s -1 -B 127.0.0.1 -p " + port +
                              " >/dev/null 2>&1 & for i in $(seq 50); do out=$(" + client +
                              "); case $out in *sum_received*) echo \"$out\"; break;; esac; " +
                              "sleep 0.1; done; kill $! 2>/dev/null; wait";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string json;
  char buffer[4096];
  for (size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    json.append(buffer, got);
  ::pclose(pipe);
  const size_t sum = json.rfind("\"sum_received\"");
  const size_t field = sum == std::string::npos ? sum : json.find("\"bits_per_second\":", sum);
  if (field == std::string::npos) return -1;
  return std::strtod(json.c_str() + field + 18, nullptr) / 8 / 1e6;
}

double loopback_blast_mb_per_s(size_t write_size, std::chrono::milliseconds duration) {
  int fds[2];
  if (!socket_pair(fds)) return -1;
  uint64_t read = 0;
  const auto start = SteadyClock::now();
  std::thread reader([&] { read = drain(fds[1]); });
  const std::vector<std::byte> chunk(write_size, std::byte{0x42});
  while (SteadyClock::now() - start < duration && write_all(fds[0], chunk)) {
  }
  ::shutdown(fds[0], SHUT_WR);
  reader.join();
  const auto elapsed = SteadyClock::now() - start;
  ::close(fds[0]);
  ::close(fds[1]);
  return mb_per_s(read, elapsed);
}

double relay_mb_per_s(size_t batch_bytes, size_t count, bool acknowledged) {
  int in[2];
  int out[2];
  if (!socket_pair(in)) return -1;
  if (!socket_pair(out)) {
    ::close(in[0]);
    ::close(in[1]);
    return -1;
  }
  // The relay is a process of its own, as a broker is: on a VM, switching between processes
  // costs more than between threads of one, and the producer and consumer threads here wait
  // on it as hark-bench's clients wait on harkd.
  std::vector<std::byte> relay_buffer(acknowledged ? batch_bytes : chunk_max);
  const pid_t relay = ::fork();
  if (relay == 0) {
    ::close(in[0]);
    ::close(out[1]);
    relay_loop(in[1], out[0], relay_buffer, acknowledged);
    ::_exit(0);
  }
  ::close(in[1]);
  ::close(out[0]);
  uint64_t read = 0;
  const auto start = SteadyClock::now();
  if (relay > 0) {
    std::thread consumer([&] { read = drain(out[1]); });
    const std::vector<std::byte> batch(batch_bytes, std::byte{0x42});
    std::array<std::byte, 8> answer{};
    for (size_t sent = 0; sent < count && write_all(in[0], batch); sent += batch_bytes) {
      if (acknowledged && !read_all(in[0], answer)) break;
    }
    ::shutdown(in[0], SHUT_WR);
    consumer.join();
  }
  const auto elapsed = SteadyClock::now() - start;
  ::close(in[0]);
  ::close(out[1]);
  if (relay < 0) return -1;
  int status = 0;
  ::waitpid(relay, &status, 0);
  return mb_per_s(read, elapsed);
}

}  // namespace hark::bench
