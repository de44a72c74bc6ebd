#include "hark/server/admission.h"

#include <absl/strings/str_format.h>

#include "hark/core/base/assert.h"

namespace hark::server {

std::string ConnectionCounters::format() const {
  return absl::StrFormat(
      "refused_per_address=%u evicted=%u login_timeouts=%u write_timeouts=%u "
      "refused_no_files=%u heartbeat_evictions=%u receive_paused=%u tls_failures=%u",
      count(Refusal::per_address), count(Refusal::evicted), count(Refusal::login_timeout),
      count(Refusal::write_timeout), count(Refusal::no_files), count(Refusal::heartbeat),
      receive_paused_.load(std::memory_order_relaxed), count(Refusal::tls_failure));
}

bool UnauthenticatedHosts::add_within(std::string_view host, uint32_t limit) {
  // absl's string_view is not std's here: keys are looked up as strings (control plane).
  const std::string key(host);
  const std::lock_guard lock(mutex_);
  uint32_t& count = counts_[key];
  if (count >= limit) {
    if (count == 0) counts_.erase(key);
    return false;
  }
  count++;
  return true;
}

void UnauthenticatedHosts::remove(std::string_view host) {
  const std::string key(host);
  const std::lock_guard lock(mutex_);
  const auto it = counts_.find(key);
  HARK_ASSERT(it != counts_.end() && it->second > 0);
  if (--it->second == 0) counts_.erase(it);
}

uint32_t UnauthenticatedHosts::count(std::string_view host) const {
  const std::string key(host);
  const std::lock_guard lock(mutex_);
  const auto it = counts_.find(key);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace hark::server
