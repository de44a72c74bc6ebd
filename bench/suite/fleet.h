#pragma once

#include <cstddef>
#include <functional>
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

// Many non-blocking loopback connections driven by one epoll loop in the calling thread: how
// the bench parks 10 000 polls without 10 000 threads. Requests are queued per connection and
// written as the socket takes them; replies go to the parser as they complete. Owns the
// sockets (closed by the destructor). One thread.
class Fleet {
 public:
  explicit Fleet(ReplyParser& parser);
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
  bool flush(size_t link);
  bool receive(size_t link, SteadyClock::time_point at);

  ReplyParser& parser_;
  int epoll_fd_ = -1;
  std::vector<Link> links_;
  std::vector<std::byte> scratch_;  // Every recv lands here first.
};

}  // namespace hark::bench
