#include "hark/core/wait/wait.h"

#include <algorithm>

#include "hark/core/base/message_layout.h"
#include "hark/core/wait/wait_shard.h"

namespace hark::core {

void Registration::run() { wait_->shard_->registration_returned(*this); }

void ConditionReport::run() { registration->wait().shard_->report_arrived(*registration); }

void ConditionReport::write(uint64_t measure,
                            std::span<const std::byte, condition_answer_max> answer,
                            uint32_t answer_size) {
  version_.fetch_add(1, std::memory_order_seq_cst);  // Odd: a read now fails.
  for (size_t word = 0; word < words; word++) {
    answer_[word].store(load_u64(answer, word * sizeof(uint64_t)), std::memory_order_seq_cst);
  }
  answer_size_.store(answer_size, std::memory_order_seq_cst);
  measure_.store(measure, std::memory_order_seq_cst);
  version_.fetch_add(1, std::memory_order_seq_cst);
}

bool ConditionReport::read(Values& values) const {
  const uint64_t before = version_.load(std::memory_order_seq_cst);
  if ((before & 1) != 0) return false;
  values.measure = measure_.load(std::memory_order_seq_cst);
  values.answer_size =
      std::min<uint32_t>(answer_size_.load(std::memory_order_seq_cst), condition_answer_max);
  for (size_t word = 0; word < words; word++) {
    store_u64(values.answer, word * sizeof(uint64_t),
              answer_[word].load(std::memory_order_seq_cst));
  }
  return version_.load(std::memory_order_seq_cst) == before;
}

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
