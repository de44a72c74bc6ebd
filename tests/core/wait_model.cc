// Relacy models of the wait protocol (core/wait): register-then-recheck on the home shard
// against publish-then-drain on the owner, with a timeout racing both. Relacy explores every
// interleaving and every outcome the C++ memory model allows. Checked after each run:
//   commit_vs_park: the poll is woken (by the home's re-check or by the owner), exactly once;
//   with_timeout:   exactly one party completes the Wait.
// With seq_cst both pass; built with HARK_MODEL_WEAK (release/acquire) the first must find
// the lost wake-up, so that build is registered as WILL_FAIL (tests/core/CMakeLists.txt).
#include <relacy/relacy.hpp>

namespace {

#ifndef HARK_MODEL_WEAK
constexpr auto store_order = rl::mo_seq_cst;
constexpr auto load_order = rl::mo_seq_cst;
constexpr auto rmw_order = rl::mo_seq_cst;
#else
constexpr auto store_order = rl::mo_release;
constexpr auto load_order = rl::mo_acquire;
constexpr auto rmw_order = rl::mo_acq_rel;
#endif

enum WaitState { waiting = 0, notified = 1, timed_out = 2 };
constexpr int want = 0;  // The poll wants offset 0: satisfied once next_offset > 0.

// Shared state of one partition and one Wait. `list_head` stands for the WaiterList head
// (1: the registration is on the list); the drain exchanges it with 0. The owner's emptiness
// check is a plain load: that load and the home's re-check form a store-load (Dekker) pattern,
// which only seq_cst orders.
struct Partition {
  rl::atomic<int> next_offset;
  rl::atomic<int> list_head;
  rl::atomic<int> state;
  rl::atomic<int> completions;

  void reset() {
    next_offset($).store(0, rl::mo_relaxed);
    list_head($).store(0, rl::mo_relaxed);
    state($).store(waiting, rl::mo_relaxed);
    completions($).store(0, rl::mo_relaxed);
  }

  bool try_complete(int to) {
    int expected = waiting;
    if (!state($).compare_exchange_strong(expected, to, rmw_order)) return false;
    completions($).fetch_add(1, rl::mo_relaxed);
    return true;
  }

  // Home: push the registration, then re-check the committed end.
  void park() {
    list_head($).exchange(1, rmw_order);
    if (next_offset($).load(load_order) > want) try_complete(notified);
  }

  // Owner: publish the commit, then (end of iteration) look at the list and, only if it is
  // not empty, drain and judge (the fast path that makes a commit nobody waits for cheap).
  void commit() {
    next_offset($).store(1, store_order);
    if (list_head($).load(load_order) == 0) return;
    if (list_head($).exchange(0, rmw_order) == 1) try_complete(notified);
  }
};

struct CommitVsPark : rl::test_suite<CommitVsPark, 2> {
  Partition partition;
  void before() { partition.reset(); }
  void thread(unsigned index) {
    if (index == 0) {
      partition.park();
    } else {
      partition.commit();
    }
  }
  void after() {
    RL_ASSERT(partition.state($).load(rl::mo_relaxed) == notified);
    RL_ASSERT(partition.completions($).load(rl::mo_relaxed) == 1);
  }
};

struct WithTimeout : rl::test_suite<WithTimeout, 3> {
  Partition partition;
  void before() { partition.reset(); }
  void thread(unsigned index) {
    if (index == 0) {
      partition.park();
    } else if (index == 1) {
      partition.commit();
    } else {
      partition.try_complete(timed_out);
    }
  }
  void after() { RL_ASSERT(partition.completions($).load(rl::mo_relaxed) == 1); }
};

}  // namespace

int main() {
  rl::test_params params;
  params.search_type = rl::sched_full;
  const bool commit_vs_park = rl::simulate<CommitVsPark>(params);
  const bool with_timeout = rl::simulate<WithTimeout>(params);
  return commit_vs_park && with_timeout ? 0 : 1;
}
