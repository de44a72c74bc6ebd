#include "hark/bench/suite/fleet.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <sys/epoll.h>
#include <sys/socket.h>

namespace hark::bench {
namespace {

constexpr size_t read_chunk = 64 * 1024;

uint64_t key_of(size_t link) { return static_cast<uint64_t>(link); }

}  // namespace

Fleet::Fleet(ReplyParser& parser) : parser_(parser), epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {}

Fleet::~Fleet() {
  for (const Link& link : links_) ::close(link.fd);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

ptrdiff_t Fleet::add(int fd) {
  set_nonblocking(fd);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = key_of(links_.size());
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    std::fprintf(stderr, "epoll_ctl: %s\n", std::strerror(errno));
    ::close(fd);
    return -1;
  }
  links_.push_back(Link{.fd = fd});
  return static_cast<ptrdiff_t>(links_.size() - 1);
}

bool Fleet::send(size_t index, std::span<const std::byte> bytes) {
  Link& link = links_[index];
  link.out.insert(link.out.end(), bytes.begin(), bytes.end());
  return flush(index);
}

bool Fleet::flush(size_t index) {
  Link& link = links_[index];
  while (link.out_sent < link.out.size()) {
    const ssize_t sent = ::send(link.fd, link.out.data() + link.out_sent,
                                link.out.size() - link.out_sent, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && errno == EAGAIN) break;
    if (sent <= 0) {
      std::fprintf(stderr, "fleet: send on connection %zu: %s\n", index, std::strerror(errno));
      return false;
    }
    link.out_sent += static_cast<size_t>(sent);
  }
  if (link.out_sent == link.out.size()) {
    link.out.clear();
    link.out_sent = 0;
  }
  const bool want_write = !link.out.empty();
  if (want_write != link.want_write) {
    epoll_event event{};
    event.events = EPOLLIN | (want_write ? EPOLLOUT : 0u);
    event.data.u64 = key_of(index);
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, link.fd, &event);
    link.want_write = want_write;
  }
  return true;
}

bool Fleet::receive(size_t index, SteadyClock::time_point at) {
  Link& link = links_[index];
  if (scratch_.empty()) scratch_.resize(read_chunk);
  while (true) {
    const ssize_t got = ::recv(link.fd, scratch_.data(), scratch_.size(), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return true;
    if (got <= 0) {
      std::fprintf(stderr, "fleet: connection %zu closed by the server%s%s\n", index,
                   got < 0 ? ": " : "", got < 0 ? std::strerror(errno) : "");
      return false;
    }
    // Replies are parsed straight from the shared buffer; only a reply cut in two is kept on
    // the link (10 000 idle links then cost no buffers).
    std::span<const std::byte> bytes(scratch_.data(), static_cast<size_t>(got));
    if (!link.in.empty()) {
      link.in.insert(link.in.end(), bytes.begin(), bytes.end());
      bytes = link.in;
    }
    size_t consumed = 0;
    while (consumed < bytes.size()) {
      const ptrdiff_t size = parser_.parse(index, bytes.subspan(consumed), at);
      if (size < 0) {
        std::fprintf(stderr, "fleet: malformed reply on connection %zu\n", index);
        return false;
      }
      if (size == 0) break;
      consumed += static_cast<size_t>(size);
    }
    if (bytes.data() == link.in.data()) {
      link.in.erase(link.in.begin(), link.in.begin() + static_cast<ptrdiff_t>(consumed));
    } else {
      link.in.assign(bytes.begin() + static_cast<ptrdiff_t>(consumed), bytes.end());
    }
  }
}

bool Fleet::run(const std::function<bool()>& done, SteadyClock::time_point deadline,
                FleetTimer* timer) {
  const Ended ended = loop(done, deadline, timer);
  if (ended == Ended::deadline) std::fprintf(stderr, "fleet: gave up waiting (deadline)\n");
  return ended == Ended::done;
}

bool Fleet::run_until(SteadyClock::time_point until, FleetTimer* timer) {
  return loop([] { return false; }, until, timer) == Ended::deadline;
}

Fleet::Ended Fleet::loop(const std::function<bool()>& done, SteadyClock::time_point deadline,
                         FleetTimer* timer) {
  std::vector<epoll_event> events(256);
  while (!done()) {
    auto now = SteadyClock::now();
    // One firing per turn (the timer bounds how much it does), so replies are read between
    // firings even when the schedule cannot be kept.
    if (timer != nullptr && timer->due() <= now) {
      timer->fire(now);
      now = SteadyClock::now();
    }
    if (now >= deadline) return Ended::deadline;
    auto until = deadline;
    if (timer != nullptr && timer->due() < until) until = timer->due();
    const auto wait = std::max(std::chrono::nanoseconds(0),
                               std::chrono::duration_cast<std::chrono::nanoseconds>(until - now));
    const timespec timeout{.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000),
                           .tv_nsec = static_cast<long>(wait.count() % 1'000'000'000)};
    const int ready = ::epoll_pwait2(epoll_fd_, events.data(), static_cast<int>(events.size()),
                                     &timeout, nullptr);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      std::fprintf(stderr, "epoll_pwait2: %s\n", std::strerror(errno));
      return Ended::failed;
    }
    const auto at = SteadyClock::now();
    for (int i = 0; i < ready; i++) {
      const auto index = static_cast<size_t>(events[static_cast<size_t>(i)].data.u64);
      const uint32_t flags = events[static_cast<size_t>(i)].events;
      if ((flags & EPOLLOUT) != 0 && !flush(index)) return Ended::failed;
      if ((flags & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0 && !receive(index, at)) {
        return Ended::failed;
      }
    }
  }
  return Ended::done;
}

}  // namespace hark::bench
