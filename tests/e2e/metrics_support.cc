#include "hark/tests/e2e/metrics_support.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

namespace hark::test {

int connect_loopback(uint16_t port) {
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(port);
  target.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
    ADD_FAILURE() << "connect to metrics port " << port << ": " << std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

std::optional<std::string> read_until_closed(int fd,
                                             std::chrono::steady_clock::time_point deadline) {
  std::string text;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd one{.fd = fd, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&one, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char buffer[65536];
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return text;  // Closed (or reset after the answer).
    text.append(buffer, static_cast<size_t>(got));
  }
}

std::optional<std::string> http_exchange(uint16_t port, std::string_view request) {
  const int fd = connect_loopback(port);
  if (fd < 0) return std::nullopt;
  const bool sent = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                    static_cast<ssize_t>(request.size());
  std::optional<std::string> answer;
  if (sent)
    answer = read_until_closed(fd, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  ::close(fd);
  return answer;
}

double Scrape::operator[](const std::string& key) const {
  const auto found = samples.find(key);
  return found == samples.end() ? std::nan("") : found->second;
}

std::optional<Scrape> scrape(uint16_t port) {
  const std::optional<std::string> answer =
      http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
  if (!answer) return std::nullopt;
  const size_t head_end = answer->find("\r\n\r\n");
  if (head_end == std::string::npos) return std::nullopt;
  Scrape result;
  result.status_line = answer->substr(0, answer->find("\r\n"));
  result.body = answer->substr(head_end + 4);
  std::istringstream lines(result.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    result.samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return result;
}

int promtool_check(const std::string& what, const std::string& text, std::string& output) {
  // One file per process: ctest runs the tests of this file in parallel, each in its own.
  const std::string path =
      testing::TempDir() + "hark_metrics_promtool_input." + std::to_string(::getpid());
  std::ofstream(path) << text;
  const std::string command = what == "metrics" ? "promtool check metrics < " + path
                                                : "promtool check " + what + " " + path;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace hark::test
