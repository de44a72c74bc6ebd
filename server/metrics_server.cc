#include "hark/server/metrics_server.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>

#include <absl/strings/str_format.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/clock.h"
#include "hark/core/base/log.h"
#include "hark/server/config.h"

namespace hark::server {
namespace {

Instant now() { return SystemClock().monotonic_now(); }

std::string http_answer(std::string_view status, std::string_view content_type,
                        std::string_view body) {
  return absl::StrFormat(
      "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %u\r\nConnection: close\r\n\r\n%s",
      status, content_type, body.size(), body);
}

// The request line's method and path (the query left off); empty views if there is none.
std::pair<std::string_view, std::string_view> request_line(std::string_view head) {
  const std::string_view line = head.substr(0, head.find_first_of("\r\n"));
  const size_t method_end = line.find(' ');
  if (method_end == std::string_view::npos) return {};
  const std::string_view rest = line.substr(method_end + 1);
  const std::string_view target = rest.substr(0, rest.find(' '));
  return {line.substr(0, method_end), target.substr(0, target.find('?'))};
}

// Reads what arrived. True once the head is whole, or past request_bytes_max (at most one byte
// past it is kept); `gone` when the peer closed or failed.
bool read_request(int fd, std::string& in, bool& gone) {
  char buffer[2048];
  const size_t room = MetricsServer::request_bytes_max + 1 - in.size();
  const ssize_t got = ::recv(fd, buffer, std::min(room, sizeof buffer), 0);
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (got <= 0) {
    gone = true;
    return false;
  }
  in.append(buffer, static_cast<size_t>(got));
  return in.find("\r\n\r\n") != std::string::npos || in.find("\n\n") != std::string::npos ||
         in.size() > MetricsServer::request_bytes_max;
}

// Sends what the socket takes; closes the connection once all of it is sent, or on an error.
void write_answer(int fd, const std::string& out, size_t& sent, bool& done) {
  const ssize_t wrote = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
  if (wrote < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (wrote >= 0) sent += static_cast<size_t>(wrote);
  done = wrote < 0 || sent == out.size();
}

}  // namespace

void MetricsServer::Scraper::close() {
  if (fd >= 0) ::close(fd);
  *this = Scraper{};
}

MetricsServer::MetricsServer(int listener, Duration timeout, Source& source)
    : listener_(listener),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      timeout_(timeout),
      source_(source) {
  HARK_ASSERT(wake_fd_ >= 0);
  thread_ = std::thread([this] { run(); });
}

MetricsServer::~MetricsServer() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  ::close(wake_fd_);
  ::close(listener_);
}

void MetricsServer::run() {
  log::set_thread_name("hark-metrics");
  while (wait()) {
    const Instant at = now();
    for (size_t i = 0; i < scrapers_max; ++i) {
      Scraper& scraper = slots_[i];
      if (!scraper.open()) continue;
      if (at >= scraper.deadline) {
        counts_.timed_out++;
        HARK_LOG_WARN("metrics: a scraper took over %s for its request and answer; closed",
                      format_duration(timeout_));
        scraper.close();
        continue;
      }
      if (events_[i] != 0) serve(scraper);
    }
    if (listener_ready_) {
      while (accept_one()) {
      }
    }
  }
  for (Scraper& scraper : slots_) scraper.close();
}

bool MetricsServer::wait() {
  std::array<pollfd, 2 + scrapers_max> fds{};
  fds[0] = {.fd = wake_fd_, .events = POLLIN, .revents = 0};
  fds[1] = {.fd = listener_, .events = POLLIN, .revents = 0};
  Instant next = Instant::max();
  for (size_t i = 0; i < scrapers_max; ++i) {
    const Scraper& scraper = slots_[i];
    const short events = scraper.answering() ? POLLOUT : POLLIN;
    fds[2 + i] = {.fd = scraper.fd, .events = events, .revents = 0};  // fd -1: ignored.
    if (scraper.open()) next = std::min(next, scraper.deadline);
  }
  int wait_ms = -1;
  if (next != Instant::max()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - now());
    wait_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
  }
  if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) {
    HARK_LOG_ERROR("metrics: poll failed (errno %d); the metrics listener stops", errno);
    return false;
  }
  if (fds[0].revents != 0) return false;
  listener_ready_ = fds[1].revents != 0;
  for (size_t i = 0; i < scrapers_max; ++i) events_[i] = fds[2 + i].revents;
  return true;
}

void MetricsServer::serve(Scraper& scraper) {
  bool done = false;
  if (!scraper.answering()) {
    if (!read_request(scraper.fd, scraper.in, done)) {
      if (done) scraper.close();
      return;
    }
    answer(scraper);
  }
  write_answer(scraper.fd, scraper.out, scraper.sent, done);
  if (done) scraper.close();
}

void MetricsServer::answer(Scraper& scraper) {
  if (scraper.in.size() > request_bytes_max) {
    counts_.too_large++;
    HARK_LOG_WARN("metrics: a request head over %u bytes; answered 431", request_bytes_max);
    scraper.out = http_answer("431 Request Header Fields Too Large", "text/plain", "too large\n");
    return;
  }
  const auto [method, path] = request_line(scraper.in);
  if (method != "GET") {
    counts_.not_found++;
    scraper.out = http_answer("405 Method Not Allowed", "text/plain", "only GET /metrics\n");
  } else if (path != "/metrics") {
    counts_.not_found++;
    scraper.out = http_answer("404 Not Found", "text/plain", "only GET /metrics\n");
  } else {
    counts_.scrapes++;
    scraper.out =
        http_answer("200 OK", "text/plain; version=0.0.4; charset=utf-8", source_.render(counts_));
  }
  scraper.in.clear();
  scraper.in.shrink_to_fit();
}

bool MetricsServer::accept_one() {
  const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return false;
  auto slot =
      std::find_if(slots_.begin(), slots_.end(), [](const Scraper& s) { return !s.open(); });
  if (slot == slots_.end()) {
    // Every slot taken: the oldest goes, so whoever holds slots cannot lock scrapers out.
    slot = std::min_element(slots_.begin(), slots_.end(), [](const Scraper& a, const Scraper& b) {
      return a.deadline < b.deadline;
    });
    counts_.evicted++;
    slot->close();
  }
  slot->fd = fd;
  slot->deadline = saturating_add(now(), timeout_);
  return true;
}

}  // namespace hark::server
