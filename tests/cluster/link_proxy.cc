#include "link_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <array>

#include <sys/socket.h>

#include "hark/io/socket.h"

namespace hark::test {
namespace {

// A blocking socket connected to `address`; -1 on failure.
int dial(const std::string& address) {
  const auto parsed = io::parse_address(address);
  if (!parsed.ok()) return -1;
  const int fd = ::socket(parsed->storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&parsed->storage), parsed->length) != 0) {
    ::close(fd);
    return -1;
  }
  io::set_no_delay(fd);
  return fd;
}

bool send_all(int fd, const std::byte* data, size_t size) {
  while (size > 0) {
    const ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    data += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

}  // namespace

LinkProxy::~LinkProxy() {
  stopping_.store(true);
  if (wake_[1] >= 0) (void)::write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (Pair& pair : pairs_) close_pair(pair);
  for (const int fd : {listen_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

bool LinkProxy::start() {
  const auto address = io::parse_address("127.0.0.1:0");
  const auto listener = io::listen_tcp(*address, false, 64);
  if (!listener.ok() || ::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  listen_fd_ = *listener;
  address_ = io::local_address(listen_fd_)->to_string();
  thread_ = std::thread([this] { run(); });
  return true;
}

void LinkProxy::set_upstream(const std::string& address) {
  const std::lock_guard lock(mutex_);
  upstream_ = address;
}

void LinkProxy::cut_after(Direction direction, uint64_t bytes) {
  const std::lock_guard lock(mutex_);
  rule_direction_ = direction;
  rule_budget_ = bytes;
}

void LinkProxy::hold(Direction direction) {
  const std::lock_guard lock(mutex_);
  holding_[index(direction)] = true;
}

void LinkProxy::drop_all() {
  std::unique_lock lock(mutex_);
  drop_requested_ = true;
  (void)::write(wake_[1], "x", 1);
  dropped_.wait(lock, [this] { return !drop_requested_; });
}

void LinkProxy::chaos(uint64_t seed, uint64_t max_bytes) {
  const std::lock_guard lock(mutex_);
  chaos_.emplace(seed);
  chaos_max_ = max_bytes;
}

void LinkProxy::calm() {
  const std::lock_guard lock(mutex_);
  chaos_.reset();
  for (Pair& pair : pairs_) pair.cut_direction.reset();
}

void LinkProxy::run() {
  std::vector<pollfd> fds;
  while (!stopping_.load()) {
    fds.clear();
    fds.push_back({.fd = wake_[0], .events = POLLIN, .revents = 0});
    fds.push_back({.fd = listen_fd_, .events = POLLIN, .revents = 0});
    {
      const std::lock_guard lock(mutex_);
      for (const Pair& pair : pairs_) {
        fds.push_back({.fd = pair.entry, .events = POLLIN, .revents = 0});
        fds.push_back({.fd = pair.owner, .events = POLLIN, .revents = 0});  // -1: ignored.
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    std::array<char, 64> drain{};
    while (::read(wake_[0], drain.data(), drain.size()) > 0) {
    }
    const std::lock_guard lock(mutex_);
    // The pairs polled are the first fds.size() / 2 - 1 of pairs_ (accepts append).
    for (size_t i = 0; i + 2 < fds.size(); i += 2) {
      Pair& pair = pairs_[i / 2];
      if (fds[i + 2].revents != 0 && pair.entry >= 0) pump(pair, Direction::to_owner);
      if (fds[i + 3].revents != 0 && pair.owner >= 0) pump(pair, Direction::to_entry);
    }
    if (drop_requested_) {
      for (Pair& pair : pairs_) close_pair(pair);
      holding_[0] = holding_[1] = false;
      rule_direction_.reset();
      drop_requested_ = false;
      dropped_.notify_all();
    }
    std::erase_if(pairs_, [](const Pair& pair) { return pair.entry < 0; });
    if (fds[1].revents != 0) accept_one();
  }
}

void LinkProxy::accept_one() {
  const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  accepted_.fetch_add(1);
  Pair pair{.entry = fd, .owner = dial(upstream_)};
  if (pair.owner < 0) {
    ::close(fd);  // The node behind is unreachable: the dialer sees its link close.
    return;
  }
  io::set_no_delay(fd);
  if (chaos_) {
    pair.cut_direction = chaos_->chance(50) ? Direction::to_owner : Direction::to_entry;
    pair.cut_budget = 1 + chaos_->below(chaos_max_);
  }
  pairs_.push_back(pair);
}

bool LinkProxy::pump(Pair& pair, Direction direction) {
  const bool to_owner = direction == Direction::to_owner;
  const int from = to_owner ? pair.entry : pair.owner;
  const int to = to_owner ? pair.owner : pair.entry;
  std::array<std::byte, 64 * 1024> buffer{};
  const ssize_t got = ::recv(from, buffer.data(), buffer.size(), 0);
  if (got <= 0) {
    if (!to_owner && (holding_[0] || holding_[1])) {
      ::close(pair.owner);  // Kept from the dialer while something is held.
      pair.owner = -1;
      return true;
    }
    close_pair(pair);
    return false;
  }
  const auto n = static_cast<size_t>(got);
  if (holding_[index(direction)]) {
    held_[index(direction)].fetch_add(n);
    return true;
  }
  bool cut = false;
  const size_t pass = allowed(pair, direction, n, cut);
  if (to >= 0 && pass > 0) {
    if (!send_all(to, buffer.data(), pass)) cut = true;
    relayed_[index(direction)].fetch_add(pass);
  }
  if (cut) {
    cuts_.fetch_add(1);
    close_pair(pair);
    return false;
  }
  return true;
}

size_t LinkProxy::allowed(Pair& pair, Direction direction, size_t n, bool& cut) {
  size_t pass = n;
  if (rule_direction_ == direction) {
    if (pass >= rule_budget_) {
      pass = rule_budget_;
      cut = true;
      rule_direction_.reset();
    } else {
      rule_budget_ -= pass;
    }
  }
  if (pair.cut_direction == direction) {
    if (pass >= pair.cut_budget) {
      pass = pair.cut_budget;
      cut = true;
    } else {
      pair.cut_budget -= pass;
    }
  }
  return pass;
}

void LinkProxy::close_pair(Pair& pair) {
  for (int* fd : {&pair.entry, &pair.owner}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

}  // namespace hark::test
