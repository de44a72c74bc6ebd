#include "hark/bench/suite/fleet.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

#include <sys/epoll.h>
#include <sys/socket.h>

namespace hark::bench {
namespace {

constexpr size_t read_chunk = 64 * 1024;

uint64_t key_of(size_t link) { return static_cast<uint64_t>(link); }

int64_t clock_ns(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

Fleet::Fleet(ReplyParser& parser, size_t first_link)
    : parser_(parser), first_link_(first_link), epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {}

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
      const ptrdiff_t size = parser_.parse(first_link_ + index, bytes.subspan(consumed), at);
      if (size < 0) {
        std::fprintf(stderr, "fleet: malformed reply on connection %zu\n", first_link_ + index);
        return false;
      }
      if (size == 0) break;
      consumed += static_cast<size_t>(size);
      replies_++;
    }
    if (bytes.data() == link.in.data()) {
      link.in.erase(link.in.begin(), link.in.begin() + static_cast<ptrdiff_t>(consumed));
    } else {
      link.in.assign(bytes.begin() + static_cast<ptrdiff_t>(consumed), bytes.end());
    }
    // A short read emptied the socket: epoll (level-triggered) reports what comes later, so
    // the recv that would only say EAGAIN is saved (one syscall per woken poll, not two).
    if (static_cast<size_t>(got) < scratch_.size()) return true;
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
  const int64_t cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  const auto wall_start = SteadyClock::now();
  last_cost_ = LoopCost{};
  const Ended ended = serve(done, deadline, timer);
  last_cost_.cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
  last_cost_.wall_ns = std::chrono::nanoseconds(SteadyClock::now() - wall_start).count();
  return ended;
}

Fleet::Ended Fleet::serve(const std::function<bool()>& done, SteadyClock::time_point deadline,
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
    const auto at = SteadyClock::now();
    last_cost_.waited_ns += std::chrono::nanoseconds(at - now).count();
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      std::fprintf(stderr, "epoll_pwait2: %s\n", std::strerror(errno));
      return Ended::failed;
    }
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

FleetPool::FleetPool(ReplyParser& parser, size_t links, size_t fleets) {
  fleets = std::clamp<size_t>(fleets, 1, std::max<size_t>(links, 1));
  for (size_t f = 0; f <= fleets; f++) firsts_.push_back(links * f / fleets);
  for (size_t f = 0; f < fleets; f++)
    fleets_.push_back(std::make_unique<Fleet>(parser, firsts_[f]));
}

size_t FleetPool::fleet_of(size_t link) const {
  size_t f = 0;
  while (f + 1 < fleets_.size() && link >= firsts_[f + 1]) f++;
  return f;
}

ptrdiff_t FleetPool::add(int fd) {
  const size_t link = added_;
  if (fleets_[fleet_of(link)]->add(fd) < 0) return -1;  // Its local number: link - first.
  added_++;
  return static_cast<ptrdiff_t>(link);
}

bool FleetPool::send(size_t link, std::span<const std::byte> bytes) {
  const size_t f = fleet_of(link);
  return fleets_[f]->send(link - firsts_[f], bytes);
}

bool FleetPool::run_round(std::span<const uint64_t> replies, const std::function<bool()>& start,
                          SteadyClock::time_point deadline) {
  const size_t last = fleets_.size() - 1;
  std::atomic<size_t> serving{0};
  std::atomic<bool> failed{false};
  auto serve = [&](size_t f) {
    Fleet& fleet = *fleets_[f];
    const uint64_t until = fleet.replies() + replies[f];
    if (!fleet.run([&] { return fleet.replies() >= until; }, deadline)) failed.store(true);
  };
  std::vector<std::thread> threads;
  for (size_t f = 0; f < last; f++) {
    threads.emplace_back([&, f] {
      serving.fetch_add(1);
      serving.notify_one();
      serve(f);
    });
  }
  for (size_t n = serving.load(); n < last; n = serving.load()) serving.wait(n);
  if (start()) {
    serve(last);
  } else {
    failed.store(true);
  }
  for (std::thread& thread : threads) thread.join();
  return !failed.load();
}

int64_t FleetPool::round_cpu_ns() const {
  int64_t total = 0;
  for (const auto& fleet : fleets_) total += fleet->last_cost().cpu_ns;
  return total;
}

double FleetPool::round_busiest_fraction() const {
  double busiest = 0;
  for (const auto& fleet : fleets_) {
    const LoopCost& cost = fleet->last_cost();
    if (cost.wall_ns <= 0) continue;
    busiest = std::max(busiest, static_cast<double>(cost.wall_ns - cost.waited_ns) /
                                    static_cast<double>(cost.wall_ns));
  }
  return busiest;
}

}  // namespace hark::bench
