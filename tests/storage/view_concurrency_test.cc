// Covers the cross-shard contract of ReadView: the owner thread keeps appending into the same
// chunks (and dropping them: eviction, retention, purge) while another thread reads views it
// was handed and drops the last references. Under TSan this proves committed bytes are never
// written again and that the final free may run on the other thread. A mutex-guarded queue
// stands in for the Inbox (both give the hand-over its happens-before edge).
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

class ViewQueue {
 public:
  void push(ReadView view) {
    std::lock_guard lock(mutex_);
    views_.push_back(std::move(view));
    ready_.notify_one();
  }
  void finish() {
    std::lock_guard lock(mutex_);
    done_ = true;
    ready_.notify_one();
  }
  // False once finished and drained.
  bool pop(ReadView& view) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !views_.empty() || done_; });
    if (views_.empty()) return false;
    view = std::move(views_.front());
    views_.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<ReadView> views_;
  bool done_ = false;
};

TEST(ReadViewConcurrency, ViewsReadAndReleasedOnAnotherThreadWhileTheOwnerAppends) {
  LogOptions options;
  options.chunk_bytes = 4096;
  options.segment_bytes_max = 64 << 10;
  options.retention_bytes = 128 << 10;
  options.memory_bytes_max = 32 << 10;
  options.flush_bytes = 1;
  // Reads follow each append at once: commit at append, so a read never waits for a write.
  options.durability = Durability::memory;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  ViewQueue queue;
  uint64_t checked = 0;
  std::thread reader([&] {
    ReadView view;
    while (queue.pop(view)) {
      for (const ReadMessage& message : parse_messages(view.bytes())) {
        EXPECT_TRUE(message.checksum_ok);
        checked++;
      }
      view = ReadView();  // The last reference often drops here, on this thread.
    }
  });
  for (int round = 0; round < 3000; round++) {
    ASSERT_TRUE(log.append(make_batch(3, "c" + std::to_string(round), 50), 3).ok());
    ReadCollector read = harness.read(Offset(log.next_offset().value() - 3), 3);
    queue.push(std::move(read.held));
    if (round % 7 == 0) harness.disk.drive_all();
    if (round % 1000 == 999) {
      ASSERT_TRUE(log.purge().ok());
    }
  }
  queue.finish();
  reader.join();
  EXPECT_EQ(checked, 9000u);
}

}  // namespace
}  // namespace hark::storage::test
