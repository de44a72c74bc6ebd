// Covers the consumer offsets file (core/broker/internal/offset_store.h) on a real io_uring and
// a temporary directory (issue #8): a store is acknowledged only once its record is written,
// changes made while a write is in flight share the next one, and the file is compacted while
// running, so it stays within max(64 KiB, twice the live records) and reopens with the last
// value of each consumer.
#include "hark/core/broker/internal/offset_store.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

namespace hark::core::internal {
namespace {

struct Written final : OffsetWritten {
  void offset_written(Status status) override {
    calls++;
    error = status.ok() ? Error::ok : status.error();
  }
  int calls = 0;
  Error error = Error::ok;
};

class OffsetStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hark-offsets-XXXXXX";
    directory_ = ::mkdtemp(pattern);
    path_ = directory_ + "/consumer_offsets";
    ring_ = std::move(io::Ring::create(io::RingOptions{})).value();
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::unique_ptr<OffsetStore> open(bool sync = false) {
    auto store = OffsetStore::open(*ring_, path_, sync);
    EXPECT_TRUE(store.ok());
    return std::move(store).value();
  }
  // Runs the ring until `done` heard of its write.
  void wait(const Written& done) {
    while (done.calls == 0) ring_->run(std::nullopt);
  }

  std::string directory_;
  std::string path_;
  std::unique_ptr<io::Ring> ring_;
};

constexpr ConsumerRef consumer(uint32_t id) {
  return ConsumerRef{.kind = ConsumerRef::Kind::consumer, .id = id};
}

TEST_F(OffsetStoreTest, AStoreIsAcknowledgedOnlyOnceWritten) {
  auto store = open(true);
  Written done;
  store->set(consumer(1), 41, done);
  EXPECT_EQ(done.calls, 0);                  // Not before the write (and fdatasync) completed.
  EXPECT_EQ(*store->get(consumer(1)), 41u);  // Polls see it at once.
  EXPECT_EQ(std::filesystem::file_size(path_), 0u);
  wait(done);
  EXPECT_EQ(done.error, Error::ok);
  EXPECT_EQ(std::filesystem::file_size(path_), 16u);  // On disk when acknowledged.
  store.reset();
  EXPECT_EQ(*open()->get(consumer(1)), 41u);
}

TEST_F(OffsetStoreTest, StoresDuringAWriteShareTheNextOne) {
  auto store = open();
  std::vector<Written> done(50);
  for (size_t i = 0; i < done.size(); i++) store->set(consumer(1), i, done[i]);
  wait(done[0]);
  EXPECT_EQ(done[1].calls, 0);  // Queued behind the first write...
  wait(done[1]);
  for (const Written& d : done) EXPECT_EQ(d.calls, 1);  // ...and all written by the second.
  EXPECT_EQ(store->file_bytes(), done.size() * 16);
}

TEST_F(OffsetStoreTest, TheFileIsCompactedWhileRunningAndStaysBounded) {
  auto store = open();
  constexpr uint64_t stores = 100'000;
  uint64_t largest = 0;
  for (uint64_t i = 0; i < stores; i++) {
    Written done;
    store->set(consumer(static_cast<uint32_t>(i % 3)), i, done);
    wait(done);
    largest = std::max<uint64_t>(largest, std::filesystem::file_size(path_));
  }
  EXPECT_GT(store->compactions(), 0u);
  EXPECT_LE(largest, OffsetStore::compact_bytes_min);  // 100k × 16 B = 1.6 MB without it.
  Written erased;
  ASSERT_TRUE(store->erase(consumer(2), erased));
  wait(erased);
  store.reset();
  auto reopened = open();
  EXPECT_EQ(*reopened->get(consumer(0)), stores - 1);
  EXPECT_EQ(*reopened->get(consumer(1)), stores - 3);
  EXPECT_FALSE(reopened->get(consumer(2)).has_value());
  EXPECT_EQ(std::filesystem::file_size(path_), 2u * 16);
}

}  // namespace
}  // namespace hark::core::internal
