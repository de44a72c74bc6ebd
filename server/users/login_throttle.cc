#include "hark/server/users/login_throttle.h"

#include <algorithm>
#include <functional>

#include "hark/core/base/assert.h"

namespace hark::server {
namespace {

uint64_t username_key(std::string_view username) { return std::hash<std::string_view>{}(username); }

}  // namespace

LoginThrottle::LoginThrottle(uint32_t failures_max, Duration lockout, size_t addresses_max)
    : failures_max_(failures_max), lockout_(lockout), addresses_max_(addresses_max) {
  HARK_ASSERT(addresses_max_ > 0);
}

bool LoginThrottle::allowed(std::string_view address, Instant now) {
  if (failures_max_ == 0) return true;
  std::lock_guard lock(mutex_);
  // absl's string_view is not std's here (docs/style.md §4): look up by std::string.
  const auto found = entries_.find(std::string(address));
  return found == entries_.end() || !found->second.locked || found->second.locked_until <= now;
}

bool LoginThrottle::reserve(std::string_view address, Instant now) {
  if (failures_max_ == 0) return true;
  std::lock_guard lock(mutex_);
  Entry& entry = touch(address, now);
  if (entry.locked || entry.failures + entry.in_flight >= failures_max_) return false;
  entry.in_flight++;
  return true;
}

bool LoginThrottle::finish(std::string_view address, std::string_view username, Outcome outcome,
                           Instant now) {
  if (failures_max_ == 0) return false;
  std::lock_guard lock(mutex_);
  Entry& entry = touch(address, now);  // Recreated if it was evicted meanwhile.
  if (entry.in_flight > 0) entry.in_flight--;
  bool locked_now = false;
  if (entry.locked) {
    // Locked out by the attempts in flight beside this one: nothing more to count.
  } else if (outcome == Outcome::failure) {
    count_failure(entry, username_key(username));
    if (entry.failures >= failures_max_) {
      lock_out(entry, now);
      locked_now = true;
    }
  } else if (outcome == Outcome::success) {
    clear_failures(entry, username_key(username));
  }
  drop_if_idle(entries_.find(std::string(address)));
  return locked_now;
}

size_t LoginThrottle::addresses_count() {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

LoginThrottle::Entry& LoginThrottle::touch(std::string_view address, Instant now) {
  std::string key(address);
  auto found = entries_.find(key);
  if (found == entries_.end()) {
    if (entries_.size() >= addresses_max_) evict_one();
    unlocked_.push_back(key);
    found = entries_.emplace(std::move(key), Entry{}).first;
    found->second.age = std::prev(unlocked_.end());
    return found->second;
  }
  Entry& entry = found->second;
  if (entry.locked && entry.locked_until <= now) {
    // The lockout is over: counting starts over (failures were cleared when it began).
    entry.locked = false;
    unlocked_.splice(unlocked_.end(), locked_, entry.age);
  } else if (!entry.locked) {
    unlocked_.splice(unlocked_.end(), unlocked_, entry.age);
  }
  return entry;
}

void LoginThrottle::evict_one() {
  std::list<std::string>& oldest = unlocked_.empty() ? locked_ : unlocked_;
  HARK_ASSERT(!oldest.empty());
  entries_.erase(oldest.front());
  oldest.pop_front();
}

void LoginThrottle::lock_out(Entry& entry, Instant now) {
  entry.failures = 0;
  entry.by_username.clear();
  entry.locked = true;
  entry.locked_until = now + lockout_;
  locked_.splice(locked_.end(), unlocked_, entry.age);
}

void LoginThrottle::count_failure(Entry& entry, uint64_t username) {
  entry.failures++;
  auto& by_username = entry.by_username;
  const auto found = std::find_if(by_username.begin(), by_username.end(),
                                  [username](const auto& pair) { return pair.first == username; });
  if (found != by_username.end()) {
    found->second++;
  } else if (by_username.size() < usernames_max) {
    by_username.emplace_back(username, 1);
  }
}

void LoginThrottle::clear_failures(Entry& entry, uint64_t username) {
  auto& by_username = entry.by_username;
  const auto found = std::find_if(by_username.begin(), by_username.end(),
                                  [username](const auto& pair) { return pair.first == username; });
  if (found == by_username.end()) return;
  entry.failures -= std::min(entry.failures, found->second);
  by_username.erase(found);
}

void LoginThrottle::drop_if_idle(Entries::iterator found) {
  if (found == entries_.end()) return;
  const Entry& entry = found->second;
  if (entry.failures > 0 || entry.in_flight > 0 || entry.locked) return;
  unlocked_.erase(entry.age);
  entries_.erase(found);
}

std::string_view host_of(std::string_view peer) {
  const size_t colon = peer.rfind(':');
  std::string_view host = colon == std::string_view::npos ? peer : peer.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace hark::server
