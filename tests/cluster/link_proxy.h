#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hark/tests/support/prng.h"

namespace hark::test {

// A userspace TCP proxy in front of one node's link listener, for the tests labelled cluster
// (the CI kernel has no `tc netem`): the node is started with --advertised-link-address
// pointing here, so every other node's links to it pass through the proxy, which can cut them
// at a chosen byte, hold what flows one way, or cut at random. Every accepted connection is
// relayed to the upstream set last (the node's bound link address, which changes when it
// restarts). One thread relays every connection with poll(); the controls below are called
// from the test's thread.
//
// Directions: to_owner is dialer → node behind the proxy (hello, proof, requests, cancels);
// to_entry is the way back (challenge, responses).
class LinkProxy {
 public:
  enum class Direction : uint8_t { to_owner = 0, to_entry = 1 };

  LinkProxy() = default;
  ~LinkProxy();
  LinkProxy(const LinkProxy&) = delete;
  LinkProxy& operator=(const LinkProxy&) = delete;

  // Listens on 127.0.0.1, any port, and starts relaying; false if it cannot listen.
  bool start();
  // "127.0.0.1:PORT".
  std::string address() const { return address_; }
  void set_upstream(const std::string& address);

  // Once `bytes` more have gone `direction` (over every connection), relays up to that byte
  // and closes the connection it was on, both ways. One-shot.
  void cut_after(Direction direction, uint64_t bytes);
  // Stops relaying `direction`: what arrives is held (and dropped with its connection), and
  // a close from the node behind the proxy is not passed on while anything is held.
  void hold(Direction direction);
  // Closes every connection now and relays normally again (holds and rules cleared).
  void drop_all();
  // From now on every new connection is cut after a random number of bytes (1..max_bytes,
  // from `seed`) in a random direction. calm() stops it.
  void chaos(uint64_t seed, uint64_t max_bytes);
  void calm();

  uint64_t accepted() const { return accepted_.load(); }
  uint64_t cuts() const { return cuts_.load(); }
  uint64_t held(Direction direction) const { return held_[index(direction)].load(); }
  uint64_t relayed(Direction direction) const { return relayed_[index(direction)].load(); }

 private:
  struct Pair {
    int entry = -1;  // The dialer's side (accepted here).
    int owner = -1;  // Upstream.
    std::optional<Direction> cut_direction;
    uint64_t cut_budget = 0;  // Bytes left before the cut (chaos).
  };
  static size_t index(Direction direction) { return static_cast<size_t>(direction); }

  void run();
  void accept_one();
  // Reads one side of `pair`; false once the pair is closed.
  bool pump(Pair& pair, Direction direction);
  // How many of `n` bytes may pass before a cut; sets `cut` when they end in one.
  size_t allowed(Pair& pair, Direction direction, size_t n, bool& cut);
  void close_pair(Pair& pair);

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // A pipe: a control call wakes the relay thread.
  std::string address_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  std::mutex mutex_;  // Guards what follows (the relay thread and the controls share it).
  std::string upstream_;
  std::vector<Pair> pairs_;
  std::optional<Direction> rule_direction_;
  uint64_t rule_budget_ = 0;
  bool holding_[2] = {false, false};
  bool drop_requested_ = false;
  std::condition_variable dropped_;  // drop_all() waits for the relay thread to drop them.
  std::optional<Prng> chaos_;
  uint64_t chaos_max_ = 0;

  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> cuts_{0};
  std::atomic<uint64_t> held_[2] = {0, 0};
  std::atomic<uint64_t> relayed_[2] = {0, 0};
};

}  // namespace hark::test
