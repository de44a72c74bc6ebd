// Covers the partition log on the real disk: RingDisk's io_uring writes, reads and syncs in a
// temporary directory, recovery from real files, and the flock that keeps a second opener out.
#include "hark/storage/ring_disk.h"

#include <stdlib.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

class TempDirectory {
 public:
  TempDirectory() {
    char pattern[] = "/tmp/hark-storage-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDirectory() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class RingDiskLog : public ::testing::Test {
 protected:
  void SetUp() override {
    reactor_ = std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{})).value();
    options_.directory = directory_.path() + "/streams/1/topics/2/partitions/0";
    options_.segment_bytes_max = 4096;
  }
  std::unique_ptr<PartitionLog> open() {
    Result<std::unique_ptr<PartitionLog>> log = PartitionLog::open(*reactor_, clock_, options_);
    EXPECT_TRUE(log.ok()) << error_name(log.error());
    return log.ok() ? std::move(log).value() : nullptr;
  }
  ReadCollector read(PartitionLog& log, Offset start, uint32_t count) {
    ReadCollector collector;
    log.read(start, count, 1 << 20, collector);
    for (int i = 0; i < 1000 && collector.calls == 0; i++) reactor_->run_once(true);
    EXPECT_EQ(collector.calls, 1);
    return collector;
  }

  TempDirectory directory_;
  ManualClock clock_;
  std::unique_ptr<io::Reactor> reactor_;
  LogOptions options_;
};

TEST_F(RingDiskLog, WritesRecoversAndReadsThroughTheRing) {
  auto log = open();
  ASSERT_NE(log, nullptr);
  for (int i = 0; i < 30; i++) {
    ASSERT_TRUE(log->append(make_batch(4, "r" + std::to_string(i) + "-", 200), 4).ok());
  }
  ASSERT_TRUE(log->flush(true).ok());
  EXPECT_GT(log->segments_count(), 1u);
  const uint64_t size = log->size_bytes();
  log->close();
  log.reset();

  uint64_t on_disk = 0;
  for (const auto& entry : std::filesystem::directory_iterator(options_.directory)) {
    if (entry.path().extension() == ".log") on_disk += entry.file_size();
  }
  EXPECT_EQ(on_disk, size);

  log = open();
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->next_offset(), Offset(120));
  const ReadCollector read_back = read(*log, Offset(41), 3);
  ASSERT_EQ(read_back.messages.size(), 3u);
  EXPECT_EQ(read_back.messages[0].payload.substr(0, 5), "r10-1");
  for (const ReadMessage& message : read_back.messages) EXPECT_TRUE(message.checksum_ok);
}

TEST_F(RingDiskLog, ASecondOpenerIsLockedOut) {
  auto log = open();
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(PartitionLog::open(*reactor_, clock_, options_).error(), Error::cannot_open_database);
  log.reset();  // Closing releases the lock.
  EXPECT_NE(open(), nullptr);
}

}  // namespace
}  // namespace hark::storage::test
