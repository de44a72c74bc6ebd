#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include <absl/container/flat_hash_map.h>

namespace hark::server {

// Why harkd closed a connection it did not want (docs/operations.md §Connections).
enum class Refusal : uint8_t {
  per_address,    // Over limits.unauthenticated_per_address_max: closed at accept.
  evicted,        // The oldest unauthenticated connection of a shard over its share.
  login_timeout,  // Not logged in within limits.login_timeout.
  write_timeout,  // Took none of a response for limits.write_timeout.
  no_files,       // Accept failed with EMFILE/ENFILE: answered with status 9 and closed.
  heartbeat,      // Sent nothing for heartbeat.interval × 1.2 with no request being answered.
  tls_failure,    // A failed TLS handshake or record (not TLS, a bad certificate, garbage).
};
inline constexpr size_t refusals_count = static_cast<size_t>(Refusal::tls_failure) + 1;

// How often each Refusal happened, and how often a connection paused its receive (the
// client sent limits' read-ahead past the request in flight), over every shard. Relaxed
// atomics: counters for the stats line and the tests that wait on them.
class ConnectionCounters {
 public:
  void add(Refusal refusal) { counts_[index(refusal)].fetch_add(1, std::memory_order_relaxed); }
  void add_receive_paused() { receive_paused_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t receive_paused() const { return receive_paused_.load(std::memory_order_relaxed); }
  uint64_t count(Refusal refusal) const {
    return counts_[index(refusal)].load(std::memory_order_relaxed);
  }
  // "refused_per_address=0 evicted=0 login_timeouts=0 write_timeouts=0 refused_no_files=0
  // heartbeat_evictions=0 receive_paused=0 tls_failures=0", for the stats line.
  std::string format() const;

 private:
  static constexpr size_t index(Refusal refusal) { return static_cast<size_t>(refusal); }
  std::atomic<uint64_t> counts_[refusals_count] = {};
  std::atomic<uint64_t> receive_paused_{0};
};

// Unauthenticated connections per source host, over every shard: accept takes a slot within
// the per-address cap; leaving the awaiting_login phase gives it back; a logout takes one
// without the cap. Control plane: one mutex, taken on connect, login, logout and close, never
// per request. Thread-safe.
class UnauthenticatedHosts {
 public:
  // Counts one more for `host` unless it has `limit` already: false then.
  [[nodiscard]] bool add_within(std::string_view host, uint32_t limit);
  void add(std::string_view host) { (void)add_within(host, UINT32_MAX); }
  void remove(std::string_view host);
  uint32_t count(std::string_view host) const;

 private:
  mutable std::mutex mutex_;
  absl::flat_hash_map<std::string, uint32_t> counts_;
};

}  // namespace hark::server
