#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "hark/core/partition_key.h"
#include "hark/server/cluster/etcd_journal.h"

namespace hark::server::cluster {

// What shard 0 asks the coordination thread to write to etcd, as it learns it on the data path:
// - a move this node copied (server/move_copy.h), which the thread marks ready
//   (NodeAgent::report_move_ready) if the move is still the one copied (same epoch);
// - an in-sync set this node, leading a partition at `epoch`, asks for (server/replicas.h),
//   which the thread writes with NodeAgent::change_isr (refused there if it no longer leads).
// Control plane: the lock is held for a push or a take only; a push wakes the thread's watch.
class ShardReports {
 public:
  struct Ready {
    core::PartitionKey key;
    uint64_t epoch = 0;
  };
  struct IsrChange {
    core::PartitionKey key;
    uint64_t epoch = 0;
    std::vector<uint32_t> isr;
  };

  void push(const core::PartitionKey& key, uint64_t epoch) {
    {
      std::lock_guard lock(mutex_);
      ready_.push_back({key, epoch});
    }
    wake();
  }
  void push(IsrChange change) {
    {
      std::lock_guard lock(mutex_);
      isr_.push_back(std::move(change));
    }
    wake();
  }
  // A taken report the coordination thread could not send (etcd away): kept, without waking.
  void put_back(const Ready& ready) {
    std::lock_guard lock(mutex_);
    ready_.push_back(ready);
  }
  std::vector<Ready> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(ready_, {});
  }
  // An unsent ISR change is not put back: the leader asks again if it still wants it.
  std::vector<IsrChange> take_isr() {
    std::lock_guard lock(mutex_);
    return std::exchange(isr_, {});
  }
  // The coordination thread, while it runs (null when it stops).
  void set_waker(JournalLink::Waker* waker) {
    std::lock_guard lock(mutex_);
    waker_ = waker;
  }

 private:
  void wake() {
    JournalLink::Waker* waker = nullptr;
    {
      std::lock_guard lock(mutex_);
      waker = waker_;
    }
    if (waker != nullptr) waker->wake();
  }

  std::mutex mutex_;
  std::vector<Ready> ready_;
  std::vector<IsrChange> isr_;
  JournalLink::Waker* waker_ = nullptr;
};

}  // namespace hark::server::cluster
