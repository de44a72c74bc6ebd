#pragma once

#include <array>
#include <string>
#include <thread>

#include "hark/core/base/units.h"
#include "hark/server/metrics.h"

namespace hark::server {

// The /metrics listener (docs/operations.md §Metrics): one thread, `hark-metrics`, off the
// shards, serving HTTP/1.x on its own socket. `GET /metrics` is answered 200 with what
// `render` returns (main() renders one core::GetStats tour, which visits each shard once
// through its Inbox: a scrape never holds a shard); any other path 404, any other method 405.
// Every answer closes the connection.
//
// Hostile scrapers are bounded: a request's head may hold at most `request_bytes_max` bytes
// (past it: 431); each connection has `timeout` for its whole exchange, request and answer
// (past it: closed without an answer), so a slowloris holds a slot for that long at most;
// at most `scrapers_max` connections are served at once, and a newcomer past that closes the
// oldest (a scraper that keeps connecting cannot lock Prometheus out). Memory: per slot the
// request head and one rendered answer.
class MetricsServer {
 public:
  // What a scrape answers: the text format of one snapshot (render_metrics()).
  class Source {
   public:
    virtual std::string render(const MetricsHttpCounts& counts) = 0;

   protected:
    ~Source() = default;
  };
  static constexpr size_t request_bytes_max = 8192;
  static constexpr size_t scrapers_max = 4;

  // Takes `listener` (a non-blocking listening socket); `source` must outlive this. Starts the
  // thread at once.
  MetricsServer(int listener, Duration timeout, Source& source);
  // Stops the thread (it is woken at once) and closes every socket.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

 private:
  // One connection: its request head as it arrives, then its answer as it leaves.
  struct Scraper {
    int fd = -1;
    Instant deadline{};
    std::string in;
    std::string out;
    size_t sent = 0;

    bool open() const { return fd >= 0; }
    bool answering() const { return !out.empty(); }
    void close();
  };

  void run();
  // Waits for the sockets or the next deadline; false once the destructor asked to stop.
  bool wait();
  void serve(Scraper& scraper);
  void answer(Scraper& scraper);
  bool accept_one();

  // Only the thread touches these.
  std::array<Scraper, scrapers_max> slots_;
  std::array<short, scrapers_max> events_{};
  bool listener_ready_ = false;
  MetricsHttpCounts counts_;

  int listener_;
  int wake_fd_;  // An eventfd the destructor writes to stop run().
  Duration timeout_;
  Source& source_;
  std::thread thread_;
};

}  // namespace hark::server
