#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include <absl/container/flat_hash_map.h>

#include "core/base/units.h"

namespace hark::server {

// Slows down password guessing: after `failures_max` failed logins in a row from one source
// address, logins from it are refused with Unauthorized (41) for `lockout`, without checking
// the credentials (so a locked-out guesser costs no hashing either). A success resets the
// address. The table is bounded: past addresses_max entries, entries whose lockout is over
// are dropped, then (a flood of distinct addresses) all. Thread-safe (one mutex, taken per
// login only); control plane. failures_max 0 turns throttling off.
class LoginThrottle {
 public:
  static constexpr size_t addresses_max = 65536;

  LoginThrottle(uint32_t failures_max, Duration lockout)
      : failures_max_(failures_max), lockout_(lockout) {}

  // True if `address` may try now.
  bool allowed(std::string_view address, Instant now);
  // Records the outcome of a login from `address`; returns true if this failure started a
  // lockout (for the log).
  bool failed(std::string_view address, Instant now);
  void succeeded(std::string_view address);

 private:
  struct Entry {
    uint32_t failures = 0;
    Instant locked_until{};
  };

  const uint32_t failures_max_;
  const Duration lockout_;
  std::mutex mutex_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

// The host part of "ip:port" or "[v6]:port" (what a throttle counts by).
std::string_view host_of(std::string_view peer);

}  // namespace hark::server
