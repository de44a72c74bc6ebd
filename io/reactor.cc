#include "hark/io/reactor.h"

#include <sched.h>
#include <string.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"

namespace hark::io {

void Reactor::GateRead::arm() {
  armed_ = true;
  reactor_.ring().read(reactor_.gate().eventfd(), std::as_writable_bytes(std::span(&value_, 1)), 0,
                       *this);
}

void Reactor::GateRead::complete(int32_t result, uint32_t /*flags*/) {
  armed_ = false;
  if (closing_) return;
  // The eventfd was written: re-arm, so a read is always pending for the next sleep.
  HARK_ASSERT(result == sizeof value_);
  arm();
}

Result<std::unique_ptr<Reactor>> Reactor::create(ShardId id, const ReactorOptions& options) {
  HARK_TRY_ASSIGN(std::unique_ptr<Ring> ring, Ring::create(options.ring));
  HARK_TRY_ASSIGN(std::unique_ptr<SleepGate> gate, SleepGate::create());
  auto reactor =
      std::unique_ptr<Reactor>(new Reactor(id, options, std::move(ring), std::move(gate)));
  reactor->gate_read_.arm();
  return reactor;
}

Reactor::Reactor(ShardId id, const ReactorOptions& options, std::unique_ptr<Ring> ring,
                 std::unique_ptr<SleepGate> gate)
    : id_(id),
      options_(options),
      clock_(*options.clock),
      ring_(std::move(ring)),
      gate_(std::move(gate)),
      timers_(clock_.monotonic_now()),
      gate_read_(*this) {}

Reactor::~Reactor() {
  // The gate's read is still armed: cancel it and wait for its last CQE before the completion
  // object goes away.
  gate_read_.close();
  ring_->cancel(gate_read_);
  while (gate_read_.armed()) ring_->run(std::nullopt);
}

void Reactor::set_peers(std::vector<Reactor*> peers) {
  peers_ = std::move(peers);
  outboxes_.assign(peers_.size(), Outbox{});
}

void Reactor::post(ShardId target, Task& task) {
  HARK_ASSERT(target.value() < outboxes_.size() || target == id_);
  if (target == id_) posted_to_self_ = true;
  if (outboxes_.empty()) {
    HARK_ASSERT(target == id_);
    inbox_.push(task);
    return;
  }
  Outbox& outbox = outboxes_[target.value()];
  if (outbox.first == nullptr) {
    outbox.first = outbox.last = &task;
  } else {
    Inbox::link(*outbox.last, task);
    outbox.last = &task;
  }
}

void Reactor::post_after_submit(Task& task) {
  if (later_.first == nullptr) {
    later_.first = later_.last = &task;
  } else {
    Inbox::link(*later_.last, task);
    later_.last = &task;
  }
}

void Reactor::post_from_outside(Task& task) {
  inbox_.push(task);
  gate_->notify();
}

void Reactor::flush_outboxes() {
  for (size_t target = 0; target < outboxes_.size(); target++) {
    Outbox& outbox = outboxes_[target];
    if (outbox.first == nullptr) continue;
    Reactor& peer = *peers_[target];
    peer.inbox().push_chain(*outbox.first, *outbox.last);
    outbox = Outbox{};
    // Our own inbox needs no eventfd: we are awake and run it next iteration.
    if (&peer != this && peer.gate().notify()) counters_.wakes_sent++;
  }
}

bool Reactor::work_pending() const {
  if (!inbox_.empty() || ring_->completions_ready()) return true;
  const std::optional<Instant> next = timers_.next_expiry();
  return next.has_value() && *next <= clock_.monotonic_now();
}

size_t Reactor::wait_for_work() {
  if (options_.spin.count() > 0) {
    // Only the inbox is worth spinning on: under DEFER_TASKRUN, socket completions reach the
    // CQ only when we enter the kernel anyway.
    const Instant spin_end = clock_.monotonic_now() + options_.spin;
    while (inbox_.empty() && clock_.monotonic_now() < spin_end) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (!inbox_.empty()) return static_cast<size_t>(ring_->run(Duration(0)));
  }
  if (!gate_->prepare_to_sleep([this] { return !inbox_.empty(); })) {
    return static_cast<size_t>(ring_->run(Duration(0)));
  }
  std::optional<Duration> timeout;
  if (const std::optional<Instant> next = timers_.next_expiry(); next.has_value()) {
    const Duration remaining = *next - clock_.monotonic_now();
    timeout = remaining.count() > 0 ? remaining : Duration(0);
  }
  counters_.sleeps++;
  const int dispatched = ring_->run(timeout);
  gate_->woke();
  return static_cast<size_t>(dispatched);
}

size_t Reactor::run_inbox() {
  size_t count = 0;
  while (InboxNode* node = inbox_.pop()) {
    count++;
    static_cast<Task*>(node)->run();
  }
  counters_.tasks_run += count;
  return count;
}

size_t Reactor::run_after_submit(Outbox later) {
  if (later.first == nullptr) return 0;
  if (ring_->submit() > 0) {
    counters_.early_submits++;
    // What was just sent may have woken its reader onto this CPU (a consumer's answer, with its
    // producer's acknowledgement next): it would wait there for all this shard does next, the
    // acknowledgements' own sends first, whose wake-ups of their producers cost the shard tens
    // of µs on a VM (docs/bench.md, "The woken consumer runs before the acknowledgement").
    // Yielding lets it run first; with nothing else runnable on this CPU it returns at once.
    ::sched_yield();
  }
  inbox_.push_chain(*later.first, *later.last);
  return run_inbox();
}

size_t Reactor::run_once(bool block) {
  counters_.iterations++;
  size_t handled = 0;
  if (block && !work_pending()) {
    handled += wait_for_work();
  } else {
    handled += static_cast<size_t>(ring_->run(Duration(0)));
  }
  // Tasks this shard posts to itself during a pass (a wake-up handed back to a poll parked
  // here, the acknowledgement that follows it) get another pass in the same iteration, so
  // their answers go out with this iteration's submissions rather than one kernel round trip
  // later. Only those: work other shards push meanwhile waits for the next iteration, as
  // before. Bounded, so a task that keeps posting to its own shard cannot starve the ring.
  // Tasks posted with post_after_submit() in one pass run in the next, after its inbox and
  // after the ring took what that queued.
  for (int pass = 0; pass < passes_max; pass++) {
    posted_to_self_ = false;
    handled += run_inbox();
    handled += run_after_submit(std::exchange(later_, Outbox{}));
    handled += timers_.advance(clock_.monotonic_now());
    if (hook_ != nullptr) hook_->on_iteration_end();
    flush_outboxes();
    if (!posted_to_self_ && later_.first == nullptr) break;
  }
  // Out of passes: what is left runs first thing next iteration (a pending inbox never sleeps).
  if (later_.first != nullptr) {
    inbox_.push_chain(*later_.first, *later_.last);
    later_ = Outbox{};
  }
  return handled;
}

}  // namespace hark::io
