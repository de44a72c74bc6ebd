#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "hark/core/base/units.h"

namespace hark::server {

// Slows down password guessing from one source address (docs/operations.md §Users and
// security). Every login reserves an attempt right before its hash (reserve()) and ends it
// (finish()): an address may have at most `failures_max` failures and attempts in flight
// together, so logins sent at once cannot all be evaluated before the first failures are
// counted. Once failures_max failures are counted, the address is locked out for `lockout`:
// reserve() refuses it (answered Unauthorized, 41) without checking the credentials.
//
// Failures are counted per address and remembered per username: a success clears only the
// failures of the username it logged in as, so a valid login between guesses at another
// username does not reset them. The table is bounded (addresses_max): a new address evicts the
// least recently seen address that is not locked out, else the lockout that ends first.
// Thread-safe (one mutex, taken a few times per login); control plane. failures_max 0 turns
// throttling off.
class LoginThrottle {
 public:
  static constexpr size_t addresses_max_default = 65536;
  // Usernames an address's failures are remembered for; further ones count for the address
  // only, and no success clears them.
  static constexpr size_t usernames_max = 8;

  enum class Outcome : uint8_t {
    success,  // Clears the failures counted against the username.
    failure,  // A guess: wrong credentials, an unknown user or token.
    other,    // Neither (a right password for an inactive user, an expired token, an error).
  };

  LoginThrottle(uint32_t failures_max, Duration lockout,
                size_t addresses_max = addresses_max_default);

  // True unless `address` is locked out at `now` (a cheap check before a login is queued).
  bool allowed(std::string_view address, Instant now);
  // Reserves an attempt: false if `address` is locked out or its failures and attempts in
  // flight already reach failures_max. A true must be followed by one finish().
  bool reserve(std::string_view address, Instant now);
  // Ends a reservation of `address` for a login as `username` (empty for a token). Returns
  // true if this failure started a lockout (for the log).
  bool finish(std::string_view address, std::string_view username, Outcome outcome, Instant now);

  // Addresses tracked (for tests).
  size_t addresses_count();

 private:
  struct Entry {
    uint32_t failures = 0;   // Against every username since the last lockout.
    uint32_t in_flight = 0;  // Reserved, not finished.
    Instant locked_until{};
    bool locked = false;  // In locked_ rather than unlocked_.
    // Hash of a username (std::hash) and the failures counted against it.
    std::vector<std::pair<uint64_t, uint32_t>> by_username;
    std::list<std::string>::iterator age;
  };
  using Entries = absl::flat_hash_map<std::string, Entry>;

  // The entry of `address`, created (evicting if the table is full) if need be, made the
  // newest of its list; a lockout over at `now` is lifted.
  Entry& touch(std::string_view address, Instant now);
  void evict_one();
  void lock_out(Entry& entry, Instant now);
  void count_failure(Entry& entry, uint64_t username);
  void clear_failures(Entry& entry, uint64_t username);
  // Drops `found` if it holds nothing (no failures, nothing in flight, no lockout).
  void drop_if_idle(Entries::iterator found);

  const uint32_t failures_max_;
  const Duration lockout_;
  const size_t addresses_max_;
  std::mutex mutex_;
  Entries entries_;
  // Keys, oldest first: addresses not locked out (by last use), and locked out (by lockout).
  std::list<std::string> unlocked_;
  std::list<std::string> locked_;
};

// The host part of "ip:port" or "[v6]:port" (what a throttle counts by).
std::string_view host_of(std::string_view peer);

}  // namespace hark::server
