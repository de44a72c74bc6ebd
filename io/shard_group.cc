#include "hark/io/shard_group.h"

#include <pthread.h>
#include <time.h>

#include <string>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"

namespace hark::io {
namespace {

// Startup and shutdown barriers: a flag or counter with futex wait/notify.
void wait_until(std::atomic<uint32_t>& counter, uint32_t target) {
  uint32_t seen = counter.load(std::memory_order_acquire);
  while (seen < target) {
    counter.wait(seen, std::memory_order_acquire);
    seen = counter.load(std::memory_order_acquire);
  }
}

void arrive(std::atomic<uint32_t>& counter) {
  counter.fetch_add(1, std::memory_order_acq_rel);
  counter.notify_all();
}

}  // namespace

ShardGroup::ShardGroup(uint32_t shards_count)
    : reactors_(shards_count, nullptr), stop_tasks_(shards_count) {}

Result<std::unique_ptr<ShardGroup>> ShardGroup::start(const ShardGroupOptions& options,
                                                      ShardSetup* setup) {
  HARK_ASSERT(options.shards_count > 0);
  auto group = std::unique_ptr<ShardGroup>(new ShardGroup(options.shards_count));
  for (uint32_t index = 0; index < options.shards_count; index++) {
    group->threads_.emplace_back(
        [raw = group.get(), index, options, setup] { raw->run_shard(index, options, setup); });
  }
  wait_until(group->started_, options.shards_count);
  if (group->failed_.load(std::memory_order_acquire)) {
    group->stop();
    return Error::io_error;
  }
  for (Reactor* reactor : group->reactors_) reactor->set_peers(group->reactors_);
  group->go_.store(true, std::memory_order_release);
  group->go_.notify_all();
  return group;
}

ShardGroup::~ShardGroup() { stop(); }

void ShardGroup::run_shard(uint32_t index, const ShardGroupOptions& options, ShardSetup* setup) {
  log::set_thread_name("shard-" + std::to_string(index));
  Result<std::unique_ptr<Reactor>> created = Reactor::create(ShardId(index), options.reactor);
  std::unique_ptr<Reactor> reactor;
  if (created.ok()) {
    reactor = std::move(created).value();
    reactors_[index] = reactor.get();
    if (setup != nullptr && !setup->on_start(*reactor).ok()) {
      HARK_LOG_ERROR("shard %u failed to start", index);
      failed_.store(true, std::memory_order_release);
    }
  } else {
    failed_.store(true, std::memory_order_release);
  }
  arrive(started_);
  go_.wait(false, std::memory_order_acquire);  // stop() also sets go_ on a failed start.

  StopTask& stop_task = stop_tasks_[index];
  if (reactor != nullptr && !failed_.load(std::memory_order_acquire)) {
    while (!stop_task.stopping) reactor->run_once(true);
  }
  if (reactor != nullptr && setup != nullptr) setup->on_stop(*reactor);
  // What on_stop let finish (a last answer) gets the loop until it is quiet.
  while (reactor != nullptr && reactor->run_once(false) > 0) {
  }
  settle(reactor.get(), setup);
  // Drain what the other shards' last posts left, then wait until every shard is past its
  // loop, so nobody posts to a reactor that is about to be freed.
  while (reactor != nullptr && reactor->run_once(false) > 0) {
  }
  arrive(drained_);
  wait_until(drained_, static_cast<uint32_t>(reactors_.size()));
  // stop() may still be inside the SleepGate::notify() that woke us: the reactor (and its gate)
  // must outlive that call.
  stop_posted_.wait(false, std::memory_order_acquire);
  while (reactor != nullptr && reactor->run_once(false) > 0) {
  }
  if (reactor != nullptr && setup != nullptr) setup->on_drained(*reactor);
}

void ShardGroup::settle(Reactor* reactor, ShardSetup* setup) {
  const auto shards = static_cast<uint32_t>(reactors_.size());
  if (reactor == nullptr || setup == nullptr) {
    arrive(settled_);
    return;
  }
  setup->on_abort(*reactor);
  // A shard that is done keeps running its loop too: another shard's request may still need
  // a step here (a read at a partition's owner) before it can complete at its home.
  const Instant deadline = reactor->clock().monotonic_now() + drain_timeout;
  bool settled = false;
  while (settled_.load(std::memory_order_acquire) < shards) {
    if (!settled && !setup->busy(*reactor)) {
      settled = true;
      arrive(settled_);
      continue;
    }
    if (reactor->clock().monotonic_now() >= deadline) {
      if (!settled) {
        HARK_LOG_WARN("shard %u: still busy %u ms after stopping; tearing down without waiting",
                      reactor->id().value(),
                      std::chrono::duration_cast<std::chrono::milliseconds>(drain_timeout).count());
        arrive(settled_);
      }
      return;
    }
    // The kernel's last completions (cancelled receives) or other shards' tasks: nobody
    // writes this shard's eventfd now (it never announced a sleep), so wait briefly instead.
    if (reactor->run_once(false) == 0) reactor->ring().run(std::chrono::milliseconds(1));
  }
}

Duration ShardGroup::cpu_time(ShardId id) {
  clockid_t clock{};
  timespec used{};
  if (pthread_getcpuclockid(threads_[id.value()].native_handle(), &clock) != 0 ||
      clock_gettime(clock, &used) != 0) {
    return Duration(0);
  }
  return std::chrono::seconds(used.tv_sec) + std::chrono::nanoseconds(used.tv_nsec);
}

void ShardGroup::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (!go_.load(std::memory_order_acquire)) {
    // start() failed before the loops began: nothing runs yet, just release the threads.
    for (StopTask& task : stop_tasks_) task.stopping = true;
    go_.store(true, std::memory_order_release);
    go_.notify_all();
  } else {
    for (uint32_t index = 0; index < reactors_.size(); index++) {
      reactors_[index]->post_from_outside(stop_tasks_[index]);
    }
  }
  stop_posted_.store(true, std::memory_order_release);
  stop_posted_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

}  // namespace hark::io
