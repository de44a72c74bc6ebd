// A Relacy model of the SleepGate handshake (io/sleep_gate.h): one shard announces sleep and
// re-checks its inbox; two wakers each publish work and wake the shard if it sleeps. Relacy
// explores every interleaving and every outcome the memory model allows. Checked after each:
// a shard that went to sleep was woken (the eventfd written), and at most once per sleep.
// With seq_cst it passes; built with HARK_MODEL_WEAK (release/acquire) it must find the lost
// wake-up, so that build is registered as WILL_FAIL (tests/io/CMakeLists.txt).
#include <relacy/relacy.hpp>

namespace {

#ifndef HARK_MODEL_WEAK
constexpr auto store_order = rl::mo_seq_cst;
constexpr auto load_order = rl::mo_seq_cst;
constexpr auto exchange_order = rl::mo_seq_cst;
#else
constexpr auto store_order = rl::mo_release;
constexpr auto load_order = rl::mo_acquire;
constexpr auto exchange_order = rl::mo_acq_rel;
#endif

enum GateState { running = 0, sleeping = 1, notified = 2 };

struct SleepGateModel : rl::test_suite<SleepGateModel, 3> {
  rl::atomic<int> inbox_pushes;  // Stands for the inbox head: producers exchange it.
  rl::atomic<int> state;
  rl::atomic<int> eventfd_writes;
  rl::var<int> slept;

  void before() {
    inbox_pushes($).store(0, rl::mo_relaxed);
    state($).store(running, rl::mo_relaxed);
    eventfd_writes($).store(0, rl::mo_relaxed);
    slept($) = 0;
  }

  void thread(unsigned index) {
    if (index == 0) {
      sleeper();
    } else {
      waker();
    }
  }

  void sleeper() {
    state($).store(sleeping, store_order);
    if (inbox_pushes($).load(load_order) == 0) {
      slept($) = 1;  // Blocks in the kernel until the eventfd is written.
    } else {
      state($).store(running, store_order);
    }
  }

  void waker() {
    inbox_pushes($).fetch_add(1, exchange_order);
    int seen = state($).load(load_order);
    if (seen == sleeping && state($).compare_exchange_strong(seen, notified, exchange_order)) {
      eventfd_writes($).fetch_add(1, rl::mo_relaxed);
    }
  }

  void after() {
    const int writes = eventfd_writes($).load(rl::mo_relaxed);
    RL_ASSERT(writes <= 1);
    RL_ASSERT(slept($) == 0 || writes == 1);
  }
};

}  // namespace

int main() {
  rl::test_params params;
  params.search_type = rl::sched_full;
  return rl::simulate<SleepGateModel>(params) ? 0 : 1;
}
