#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "hark/core/partition_key.h"
#include "hark/server/cluster/etcd_journal.h"

namespace hark::server::cluster {

// Moves this node's shards copied (server/move_copy.h): pushed by shard 0, taken by the
// coordination thread, which marks each ready in etcd (NodeAgent::report_move_ready) if the
// move is still the one copied (same epoch). Control plane: the lock is held for a push or a
// take only; a push wakes the coordination thread's watch.
class MoveReports {
 public:
  struct Ready {
    core::PartitionKey key;
    uint64_t epoch = 0;
  };

  void push(const core::PartitionKey& key, uint64_t epoch) {
    JournalLink::Waker* waker = nullptr;
    {
      std::lock_guard lock(mutex_);
      ready_.push_back({key, epoch});
      waker = waker_;
    }
    if (waker != nullptr) waker->wake();
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
  // The coordination thread, while it runs (null when it stops).
  void set_waker(JournalLink::Waker* waker) {
    std::lock_guard lock(mutex_);
    waker_ = waker;
  }

 private:
  std::mutex mutex_;
  std::vector<Ready> ready_;
  JournalLink::Waker* waker_ = nullptr;
};

}  // namespace hark::server::cluster
