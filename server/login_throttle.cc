#include "server/login_throttle.h"

namespace hark::server {

bool LoginThrottle::allowed(std::string_view address, Instant now) {
  if (failures_max_ == 0) return true;
  std::lock_guard lock(mutex_);
  // absl's string_view is not std's here (docs/style.md §4): look up by std::string.
  const auto found = entries_.find(std::string(address));
  return found == entries_.end() || found->second.locked_until <= now;
}

bool LoginThrottle::failed(std::string_view address, Instant now) {
  if (failures_max_ == 0) return false;
  const std::string key(address);
  std::lock_guard lock(mutex_);
  if (entries_.size() >= addresses_max && !entries_.contains(key)) {
    absl::erase_if(entries_, [now](const auto& entry) { return entry.second.locked_until <= now; });
    if (entries_.size() >= addresses_max) entries_.clear();
  }
  Entry& entry = entries_[key];
  if (entry.locked_until > now) return false;
  entry.failures++;
  if (entry.failures < failures_max_) return false;
  entry.failures = 0;
  entry.locked_until = now + lockout_;
  return true;
}

void LoginThrottle::succeeded(std::string_view address) {
  if (failures_max_ == 0) return;
  std::lock_guard lock(mutex_);
  entries_.erase(std::string(address));
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
