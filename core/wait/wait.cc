#include "hark/core/wait/wait.h"

#include "hark/core/wait/wait_shard.h"

namespace hark::core {

void Registration::run() { wait_->shard_->registration_returned(*this); }

void ConditionReport::run() { registration->wait().shard_->report_arrived(*registration); }

bool Wait::try_abort(AbortReason reason) {
  WaitState expected = WaitState::waiting;
  // The reason must be visible to the home before it can see the state change, and only the
  // winner may write it: claim the Wait first, then write. The home reads the reason only
  // after the hand-back, which the Inbox publishes with release/acquire after this store.
  if (!state_.compare_exchange_strong(expected, WaitState::aborted, std::memory_order_seq_cst)) {
    return false;
  }
  abort_reason_ = reason;
  return true;
}

void Wait::expire() { shard_->wait_expired(*this); }

}  // namespace hark::core
