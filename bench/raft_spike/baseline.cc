#include "baseline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>

namespace spike {
namespace {

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

sockaddr_in loopback(const char* ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

bool io_exact(int fd, char* data, std::size_t n, bool reading) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r =
        reading ? ::read(fd, data + done, n - done) : ::write(fd, data + done, n - done);
    if (r <= 0) return false;
    done += static_cast<std::size_t>(r);
  }
  return true;
}

void no_delay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

[[noreturn]] void serve_echo(int listener, std::size_t bytes) {
  const int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) die("accept");
  no_delay(fd);
  std::vector<char> buf(bytes);
  while (io_exact(fd, buf.data(), bytes, true) && io_exact(fd, buf.data(), bytes, false)) {
  }
  _exit(0);
}

int listen_on(const char* ip, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in a = loopback(ip, port);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) die("bind echo");
  if (listen(fd, 1) != 0) die("listen echo");
  return fd;
}

}  // namespace

std::vector<std::uint64_t> measure_echo(std::size_t bytes, int port, int count) {
  const int listener = listen_on("127.0.0.12", port);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) serve_echo(listener, bytes);
  close(listener);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in self = loopback("127.0.0.11", 0);
  const sockaddr_in peer = loopback("127.0.0.12", port);
  bind(fd, reinterpret_cast<const sockaddr*>(&self), sizeof self);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) != 0) die("connect");
  no_delay(fd);
  std::vector<char> buf(bytes, 'e');
  std::vector<std::uint64_t> samples;
  samples.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count + count / 10; ++i) {  // the first tenth is warm-up
    const std::uint64_t t0 = now_ns();
    if (!io_exact(fd, buf.data(), bytes, false) || !io_exact(fd, buf.data(), bytes, true)) {
      die("echo");
    }
    if (i >= count / 10) samples.push_back(now_ns() - t0);
  }
  close(fd);
  waitpid(child, nullptr, 0);
  return samples;
}

std::vector<std::uint64_t> measure_block_sync(const std::string& dir, bool prewritten, int count) {
  const std::string path = dir + (prewritten ? "/floor-prewritten" : "/floor-fallocated");
  const std::size_t block = 4096;
  const std::size_t blocks = static_cast<std::size_t>(count) / 4 + 2;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open floor file");
  std::vector<char> zeros(block * blocks, 0);
  if (prewritten) {
    if (::write(fd, zeros.data(), zeros.size()) != static_cast<ssize_t>(zeros.size())) die("zero");
  } else if (posix_fallocate(fd, 0, static_cast<off_t>(zeros.size())) != 0) {
    die("fallocate");
  }
  fdatasync(fd);
  close(fd);
  fd = open(path.c_str(), O_WRONLY | O_DIRECT | O_DSYNC);
  if (fd < 0) die("open O_DIRECT|O_DSYNC");
  void* buf = std::aligned_alloc(block, block);
  std::memset(buf, 0, block);
  std::vector<std::uint64_t> samples;
  for (int i = 0; i < count; ++i) {
    const auto slot = static_cast<std::size_t>(i);
    std::memset(static_cast<char*>(buf) + (slot % 4) * 1024, 'h', 1024);
    const std::uint64_t t0 = now_ns();
    const off_t at = static_cast<off_t>((slot / 4) * block);
    if (pwrite(fd, buf, block, at) != static_cast<ssize_t>(block)) die("pwrite");
    samples.push_back(now_ns() - t0);
    if (slot % 4 == 3) std::memset(buf, 0, block);
  }
  std::free(buf);
  close(fd);
  unlink(path.c_str());
  return samples;
}

}  // namespace spike
