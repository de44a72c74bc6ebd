#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "hark/bench/suite/net.h"

namespace hark::bench {

// Reads replies of one protocol (hark's frames, RESP, NATS lines) for a Fleet.
class ReplyParser {
 public:
  virtual ~ReplyParser() = default;
  // Handles one whole reply at the front of `received` (read from connection `link` at `at`)
  // and returns its size; 0 when more bytes are needed; -1 on bytes the protocol forbids.
  virtual ptrdiff_t parse(size_t link, std::span<const std::byte> received,
                          SteadyClock::time_point at) = 0;
};

// Something a Fleet's loop runs at given times (busy polls on a schedule).
class FleetTimer {
 public:
  virtual ~FleetTimer() = default;
  virtual SteadyClock::time_point due() const = 0;  // time_point::max(): nothing scheduled.
  // Does what is due by `now`, at most a bounded amount per call.
  virtual void fire(SteadyClock::time_point now) = 0;
};

// What the client's own loop cost during its last run(): its thread's CPU, the run's wall time
// and how much of it the thread spent blocked in epoll (idle, waiting for the server).
struct LoopCost {
  int64_t cpu_ns = 0;
  int64_t wall_ns = 0;
  int64_t waited_ns = 0;
};

// Many non-blocking loopback connections driven by one epoll loop in the calling thread: how
// the bench parks 10 000 polls without 10 000 threads. Requests are queued per connection and
// written as the socket takes them; replies go to the parser as they complete. Owns the
// sockets (closed by the destructor). One thread at a time (FleetPool runs several).
class Fleet {
 public:
  // `first_link`: added to every link number handed to the parser (a FleetPool's numbering).
  explicit Fleet(ReplyParser& parser, size_t first_link = 0);
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Takes a connected socket; returns its link number (0, 1, ...). -1 if epoll refused it.
  ptrdiff_t add(int fd);
  size_t size() const { return links_.size(); }
  // Queues `bytes` on `link` and writes what the socket takes now. False if the link failed.
  bool send(size_t link, std::span<const std::byte> bytes);
  // Runs until `done()` (true), or the deadline, a closed connection or a protocol error
  // (false, with a message on stderr). `timer` may be null.
  bool run(const std::function<bool()>& done, SteadyClock::time_point deadline,
           FleetTimer* timer = nullptr);
  // Serves replies and the timer until `until` (true), or a failure as above (false).
  bool run_until(SteadyClock::time_point until, FleetTimer* timer = nullptr);
  // Whole replies parsed since the fleet was made.
  uint64_t replies() const { return replies_; }
  const LoopCost& last_cost() const { return last_cost_; }

 private:
  struct Link {
    int fd = -1;
    std::vector<std::byte> in;  // The start of a reply not yet whole.
    std::vector<std::byte> out;
    size_t out_sent = 0;
    bool want_write = false;
  };
  enum class Ended { done, deadline, failed };
  Ended loop(const std::function<bool()>& done, SteadyClock::time_point deadline,
             FleetTimer* timer);
  Ended serve(const std::function<bool()>& done, SteadyClock::time_point deadline,
              FleetTimer* timer);
  bool flush(size_t link);
  bool receive(size_t link, SteadyClock::time_point at);

  ReplyParser& parser_;
  size_t first_link_ = 0;
  int epoll_fd_ = -1;
  std::vector<Link> links_;
  std::vector<std::byte> scratch_;  // Every recv lands here first.
  uint64_t replies_ = 0;
  LoopCost last_cost_;
};

// `links` connections spread over `fleets` Fleets (fleet f holds a contiguous range of link
// numbers, the last fleet the last ones), each served by a thread of its own during
// run_round(): how the bench reads 10 000 woken polls at once without one thread's loop being
// what it measures. Between rounds the caller's thread owns every fleet. The parser is shared
// and called from several threads at once, for distinct links.
class FleetPool {
 public:
  FleetPool(ReplyParser& parser, size_t links, size_t fleets);
  size_t fleets() const { return fleets_.size(); }
  Fleet& fleet(size_t index) { return *fleets_[index]; }
  // The fleet holding `link`, and how many links it holds.
  size_t fleet_of(size_t link) const;
  size_t links_of(size_t fleet) const { return firsts_[fleet + 1] - firsts_[fleet]; }
  // Adds the next link (links are added in order, 0 first). -1 if epoll refused it.
  ptrdiff_t add(int fd);
  bool send(size_t link, std::span<const std::byte> bytes);
  // Every fleet in a thread of its own (the last in the caller's, after `start`, which runs
  // once the other threads are serving) until fleet f parsed `replies[f]` more replies; false
  // on the deadline or a failure, as Fleet::run.
  bool run_round(std::span<const uint64_t> replies, const std::function<bool()>& start,
                 SteadyClock::time_point deadline);
  // The client over the last round: CPU of all its threads, and the busiest thread's share of
  // the round not spent waiting in epoll.
  int64_t round_cpu_ns() const;
  double round_busiest_fraction() const;

 private:
  std::vector<std::unique_ptr<Fleet>> fleets_;
  std::vector<size_t> firsts_;  // fleets() + 1 entries: fleet f holds [firsts_[f], firsts_[f+1]).
  size_t added_ = 0;
};

}  // namespace hark::bench
