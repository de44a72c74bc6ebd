#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "hark/io/reactor.h"

namespace hark::server {

// A piece of authentication work: work() runs on an AuthPool thread (slow hashes, the users
// log's write and fdatasync), then the job is posted back to `home` and run() (io::Task) runs
// there, on the shard that submitted it. A job belongs to its submitter, which keeps it alive
// until run(). `abandoned` is true in run() when the pool stopped before work() ran.
class AuthJob : public io::Task {
 public:
  virtual void work() = 0;

  io::Reactor* home = nullptr;
  bool abandoned = false;

 protected:
  AuthJob() = default;
  ~AuthJob() = default;
};

// The few threads harkd hashes passwords and tokens on, so a login (a deliberately
// expensive yescrypt hash) never stalls the other connections of its shard. Jobs run in submission
// order on `threads_count` threads; at most `queue_max` wait, so a flood of logins cannot make the
// next one wait without bound. Owned by the Server; submit() from any shard; stop() before the
// broker (and so the reactors) goes: queued jobs are posted back abandoned, running ones finish and
// post back, then the threads are joined. Control plane.
class AuthPool {
 public:
  AuthPool(uint32_t threads_count, uint32_t queue_max);
  ~AuthPool();
  AuthPool(const AuthPool&) = delete;
  AuthPool& operator=(const AuthPool&) = delete;

  // Requires: job.home is set. False if `queue_max` jobs already wait: the job is not taken
  // (the caller answers it). After stop(), the job comes back abandoned at once.
  [[nodiscard]] bool submit(AuthJob& job);
  // Idempotent.
  void stop();

 private:
  void run_thread();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<AuthJob*> queue_;
  std::vector<std::thread> threads_;
  const size_t queue_max_;
  bool stopping_ = false;
};

}  // namespace hark::server
