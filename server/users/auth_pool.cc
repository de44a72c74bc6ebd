#include "hark/server/users/auth_pool.h"

#include <string>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"

namespace hark::server {

AuthPool::AuthPool(uint32_t threads_count, uint32_t queue_max) : queue_max_(queue_max) {
  HARK_ASSERT(threads_count > 0 && queue_max > 0);
  threads_.reserve(threads_count);
  for (uint32_t i = 0; i < threads_count; i++) {
    threads_.emplace_back([this, i] {
      log::set_thread_name("auth-" + std::to_string(i));
      run_thread();
    });
  }
}

AuthPool::~AuthPool() { stop(); }

bool AuthPool::submit(AuthJob& job) {
  HARK_ASSERT(job.home != nullptr);
  job.abandoned = false;
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      if (queue_.size() >= queue_max_) return false;
      queue_.push_back(&job);
      wake_.notify_one();
      return true;
    }
  }
  job.abandoned = true;
  job.home->post_from_outside(job);
  return true;
}

void AuthPool::stop() {
  std::deque<AuthJob*> left;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    left.swap(queue_);
    wake_.notify_all();
  }
  for (AuthJob* job : left) {
    job->abandoned = true;
    job->home->post_from_outside(*job);
  }
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void AuthPool::run_thread() {
  while (true) {
    AuthJob* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // Stopping.
      job = queue_.front();
      queue_.pop_front();
    }
    job->work();
    job->home->post_from_outside(*job);
  }
}

}  // namespace hark::server
