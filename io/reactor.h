#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/io/inbox.h"
#include "hark/io/ring.h"
#include "hark/io/sleep_gate.h"
#include "hark/io/timer_wheel.h"

namespace hark::io {

// Work for a shard, posted into its Inbox from any thread and run once on that shard. The task
// object belongs to whoever posted it (usually pooled); run() may recycle or destroy it.
class Task : public InboxNode {
 public:
  virtual void run() = 0;

 protected:
  ~Task() = default;
};

// Called once at the end of every loop iteration, after completions, tasks and timers: the
// coalescing point where the wait path drains dirty partitions (docs/architecture.md §4).
class IterationHook {
 public:
  virtual void on_iteration_end() = 0;

 protected:
  ~IterationHook() = default;
};

struct ReactorOptions {
  RingOptions ring;
  // How long an idle shard polls its inbox before it sleeps in the kernel (docs/architecture.md
  // §io: chosen by bench/micro/cross_shard_wake). Zero: sleep at once.
  Duration spin = Duration(0);
  Clock* clock = &SystemClock::instance();
};

struct ReactorCounters {
  uint64_t iterations = 0;
  uint64_t sleeps = 0;  // Times the shard blocked in the kernel.
  uint64_t tasks_run = 0;
  uint64_t wakes_sent = 0;  // eventfd writes this shard made to wake others.
  // Times the ring was entered in mid-iteration to send what was queued before the tasks of
  // post_after_submit() ran; the shard yields its CPU after each (sched_yield), so that what
  // the send woke can run before those tasks.
  uint64_t early_submits = 0;
};

// One shard's event loop: its io_uring, timer wheel, Inbox and SleepGate. Created on the shard
// thread, which is the only thread that may call anything but post_from_outside() and the
// inbox/gate accessors. Data plane: no allocation after create().
class Reactor {
 public:
  static Result<std::unique_ptr<Reactor>> create(ShardId id, const ReactorOptions& options);
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  ShardId id() const { return id_; }
  Ring& ring() { return *ring_; }
  TimerWheel& timers() { return timers_; }
  Clock& clock() { return clock_; }
  const ReactorCounters& counters() const { return counters_; }
  SleepGate& gate() { return *gate_; }
  Inbox& inbox() { return inbox_; }

  // Other shards this one can post to, indexed by ShardId (set once, before the loop runs).
  void set_peers(std::vector<Reactor*> peers);
  void set_iteration_hook(IterationHook* hook) { hook_ = hook; }

  // From this shard: queues `task` for shard `target`. Tasks for one target are chained and
  // pushed with one exchange and at most one eventfd write at the end of this iteration.
  // A task for this shard itself runs in a further pass of the current iteration (run_once).
  void post(ShardId target, Task& task);

  // From this shard: runs `task` on this shard in the next pass of this iteration, after the
  // tasks already posted to this shard, and only once what they queued on the ring has been
  // handed to the kernel (Ring::submit). The wait path acknowledges appends through it, so a
  // woken consumer's answer is sent in an io_uring_enter of its own, before its producer's
  // acknowledgement is even built, and the shard yields its CPU in between, so a consumer woken
  // onto it runs before the acknowledgement is sent (docs/long-polling.md).
  void post_after_submit(Task& task);

  // Pushes what post() has queued so far now, instead of at the end of the iteration. For
  // long batches whose first items should not wait for the last (the wait path flushes its
  // hand-backs in doubling chunks, so the first of K woken polls is not held back by the rest).
  void flush_posts() { flush_outboxes(); }

  // From a thread that is not a shard (an embedder, a test): push and wake at once.
  void post_from_outside(Task& task);

  // One loop iteration. If `block` and nothing is pending, sleeps in the kernel until a
  // completion, a cross-shard wake or the next timer; then dispatches completions, runs inbox
  // tasks, expires timers and calls the iteration hook, then flushes posts to other shards;
  // tasks posted to this shard meanwhile get up to `passes_max` - 1 more such passes.
  // Returns how many completions, tasks and timers it handled.
  size_t run_once(bool block);

  static constexpr int passes_max = 4;

 private:
  class GateRead final : public Completion {
   public:
    explicit GateRead(Reactor& reactor) : reactor_(reactor) {}
    void complete(int32_t result, uint32_t flags) override;
    void arm();
    void close() { closing_ = true; }
    bool armed() const { return armed_; }

   private:
    Reactor& reactor_;
    uint64_t value_ = 0;
    bool armed_ = false;
    bool closing_ = false;
  };

  struct Outbox {
    InboxNode* first = nullptr;
    InboxNode* last = nullptr;
  };

  Reactor(ShardId id, const ReactorOptions& options, std::unique_ptr<Ring> ring,
          std::unique_ptr<SleepGate> gate);

  bool work_pending() const;
  size_t wait_for_work();
  size_t run_inbox();
  size_t run_after_submit(Outbox later);
  void flush_outboxes();

  ShardId id_;
  ReactorOptions options_;
  Clock& clock_;
  std::unique_ptr<Ring> ring_;
  std::unique_ptr<SleepGate> gate_;
  TimerWheel timers_;
  Inbox inbox_;
  GateRead gate_read_;
  std::vector<Reactor*> peers_;
  std::vector<Outbox> outboxes_;
  Outbox later_;  // post_after_submit(): for the next pass.
  IterationHook* hook_ = nullptr;
  ReactorCounters counters_;
  bool posted_to_self_ = false;  // During the current pass of run_once().
};

}  // namespace hark::io
