#pragma once

#include <condition_variable>
#include <mutex>

#include "hark/core/broker/broker.h"

namespace hark::core {

// An operation a thread outside the broker submits and waits for: done() (on a shard thread)
// hands the result over through a mutex and a condition variable.
//
//   Blocking<CreateStream> create;
//   create.name = "orders";
//   Status status = create.call(broker);  // create.stream holds the answer
//
// Control plane and examples: a blocked thread is not a shard, so this is fine there; code on a
// shard thread uses the operation's done() instead.
template <typename Op>
class Blocking final : public Op {
 public:
  // Submits and waits until done() ran. Reusable after it returns.
  Status call(Broker& broker) {
    {
      std::lock_guard lock(mutex_);
      finished_ = false;
    }
    broker.submit(*this);
    std::unique_lock lock(mutex_);
    finished_cv_.wait(lock, [this] { return finished_; });
    return this->status();
  }

 private:
  void done() override {
    std::lock_guard lock(mutex_);
    finished_ = true;
    finished_cv_.notify_one();
  }

  std::mutex mutex_;
  std::condition_variable finished_cv_;
  bool finished_ = false;
};

}  // namespace hark::core
