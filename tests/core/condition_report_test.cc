// ConditionReport is a seqlock (core/wait/wait.h): a read that succeeds holds one write's
// measure and answer, never an older measure with a newer answer. That mix once made a
// hark.lag answer whose partitions' lags did not sum to its total
// (NotifyConcurrency.RandomNotifiesAppendsStoresAndCancelsStayExactlyOnce, bad_answers = 1).
#include <array>
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/core/wait/wait.h"

namespace hark::core {
namespace {

TEST(ConditionReport, AReadThatSucceedsHoldsOneWritesMeasureAndAnswer) {
  ConditionReport report;
  std::atomic<bool> stop{false};
  std::thread owner([&] {
    std::array<std::byte, condition_answer_max> answer{};
    for (uint64_t k = 1; !stop.load(std::memory_order_relaxed); k++) {
      store_u64(answer, 0, k);   // Word 0.
      store_u64(answer, 17, k);  // Across words 2 and 3, as hark.lag's lag.
      report.write(k, answer, 25);
      // A pause between writes, so reads succeed as well as overlap (both must happen).
      for (int spin = 0; spin < 256 && !stop.load(std::memory_order_relaxed); spin++) {
      }
    }
  });
  uint64_t consistent = 0;
  uint64_t failed = 0;
  ConditionReport::Values mixed;  // The first successful read that held two writes, if any.
  bool mixed_seen = false;
  // Until both cases were seen often enough (bounded: on one busy CPU the writer may seldom
  // be caught in the middle of a write).
  for (uint64_t i = 0; i < 200'000'000 && (consistent < 1000 || failed < 10) && !mixed_seen; i++) {
    if (i % 4096 == 0) std::this_thread::yield();
    ConditionReport::Values values;
    if (!report.read(values)) {
      failed++;
      continue;
    }
    if (values.measure == 0) continue;  // Before the first write.
    if (values.answer_size != 25 || load_u64(values.answer, 0) != values.measure ||
        load_u64(values.answer, 17) != values.measure) {
      mixed = values;
      mixed_seen = true;
    } else {
      consistent++;
    }
  }
  stop.store(true);
  owner.join();  // Before any assertion, which could leave the owner running.
  EXPECT_FALSE(mixed_seen) << "measure " << mixed.measure << ", answer size " << mixed.answer_size
                           << ", answer fields " << load_u64(mixed.answer, 0) << " and "
                           << load_u64(mixed.answer, 17);
  EXPECT_GT(consistent, 0u);
  EXPECT_GT(failed, 0u);  // Writes overlapped reads: the check above was put to the test.
  std::printf("consistent reads %llu, overlapped (failed) %llu\n",
              static_cast<unsigned long long>(consistent), static_cast<unsigned long long>(failed));
}

}  // namespace
}  // namespace hark::core
