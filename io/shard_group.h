#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/io/reactor.h"

namespace hark::io {

// What a user of the shards does on each shard thread when it starts and stops (listeners,
// connections, partitions). Called on the shard's own thread.
class ShardSetup {
 public:
  // Runs before the loop; an error stops the whole group from starting.
  virtual Status on_start(Reactor& reactor) = 0;
  // Runs when the loop ends: cancel long-lived operations (multishot accept/recv) and close
  // what the shard owns. The group then runs the loop without blocking until it is quiet, so
  // what is about to finish (a last answer being sent) can.
  virtual void on_stop(Reactor& reactor) = 0;
  // Runs once the loop is quiet after on_stop(): cancel whatever is still open. Every shard
  // still runs its loop, completions and tasks, so what this cancels can complete through other
  // shards (a request on its way back from another shard, a cancellation posted to itself).
  virtual void on_abort(Reactor& reactor) { (void)reactor; }
  // After on_abort(): true while the shard still waits for something to complete. The group
  // keeps every shard's loop running until no shard is busy, for at most
  // ShardGroup::drain_timeout (then it logs which shard still was).
  virtual bool busy(Reactor& reactor) {
    (void)reactor;
    return false;
  }
  // Runs after every shard has drained, just before this shard's reactor is destroyed: free
  // what still refers to the reactor (pools, timers). No task runs any more on any shard, and
  // busy() may still be true if drain_timeout passed: then leave what is still in use.
  virtual void on_drained(Reactor& reactor) { (void)reactor; }

 protected:
  ~ShardSetup() = default;
};

struct ShardGroupOptions {
  uint32_t shards_count = 1;
  ReactorOptions reactor;
};

// N shard threads, each running its own Reactor (thread-per-core). start() returns once every
// shard has created its ring and run on_start(); stop() (or the destructor) ends the loops,
// runs on_stop() and on_abort() on each shard, runs every loop until no shard is busy(),
// drains, runs on_drained(), joins the threads and frees every reactor on the thread that
// owned it. Control plane: allocates only in start().
class ShardGroup {
 public:
  // How long stop() runs the loops for shards that are still busy() after on_abort().
  static constexpr Duration drain_timeout = std::chrono::seconds(1);

  // `setup` may be null; otherwise it must outlive the group.
  static Result<std::unique_ptr<ShardGroup>> start(const ShardGroupOptions& options,
                                                   ShardSetup* setup);
  ~ShardGroup();
  ShardGroup(const ShardGroup&) = delete;
  ShardGroup& operator=(const ShardGroup&) = delete;

  uint32_t size() const { return static_cast<uint32_t>(reactors_.size()); }
  // Only the thread-safe parts (post_from_outside, gate, inbox) may be used from outside.
  Reactor& shard(ShardId id) { return *reactors_[id.value()]; }
  void post(ShardId id, Task& task) { shard(id).post_from_outside(task); }

  // CPU time the shard's thread has used (CLOCK_THREAD_CPUTIME_ID of that thread), for
  // benchmarks and stats. Any thread, while the group runs.
  Duration cpu_time(ShardId id);

  // Idempotent. Must not be called from a shard thread.
  void stop();

 private:
  class StopTask final : public Task {
   public:
    void run() override { stopping = true; }
    bool stopping = false;
  };

  explicit ShardGroup(uint32_t shards_count);
  void run_shard(uint32_t index, const ShardGroupOptions& options, ShardSetup* setup);
  // After on_stop(): on_abort(), then this shard's loop until every shard is not busy() (or
  // drain_timeout passed).
  void settle(Reactor* reactor, ShardSetup* setup);

  std::vector<Reactor*> reactors_;
  std::vector<StopTask> stop_tasks_;
  std::vector<std::thread> threads_;
  std::atomic<uint32_t> started_{0};
  std::atomic<uint32_t> settled_{0};  // Shards no longer busy() (or past drain_timeout).
  std::atomic<uint32_t> drained_{0};
  std::atomic<bool> go_{false};
  std::atomic<bool> stop_posted_{false};
  std::atomic<bool> failed_{false};
  bool stopped_ = false;
};

}  // namespace hark::io
