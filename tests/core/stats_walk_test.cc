// GetStats' walk of a shard's partitions in steps (core/broker/stats.h): with more partitions
// than one step's bound (BrokerOptions::stats_step_max, small here), an operation submitted to
// the shard while the walk runs ends before the walk does; the rows are complete, each
// partition once, and the series caps hold across steps; a walk resumed after partitions were
// created and deleted between its steps visits none twice. One shard, so every step and every
// operation runs on one thread, in the order the shard's Inbox gives them: the assertions are
// on that order, never on time. Steps of the walk are driven from tasks the test posts to the
// shard (through a ShardHooks that keeps the shard's reactor).
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/core/broker/blocking.h"
#include "hark/core/broker/internal/broker_shard.h"

namespace hark::core {
namespace {

constexpr uint32_t partitions_count = 40;
constexpr uint32_t step_max = 4;  // 10 steps for the 40 partitions.

// Keeps shard 0's reactor, so the test can run code on that shard's thread.
class ShardAccess final : public ShardHooks {
 public:
  Status on_start(Broker& /*broker*/, io::Reactor& reactor) override {
    reactor_ = &reactor;
    return ok_status();
  }
  void on_stop(io::Reactor& /*reactor*/) override {}

  // Runs `fn` on the shard's thread and waits until it returned.
  void run(std::function<void()> fn) {
    Job job(std::move(fn));
    reactor_->post_from_outside(job);
    job.wait();
  }

 private:
  class Job final : public io::Task {
   public:
    explicit Job(std::function<void()> fn) : fn_(std::move(fn)) {}
    void run() override {
      fn_();
      const std::lock_guard lock(mutex_);
      ran_ = true;
      ran_cv_.notify_one();
    }
    void wait() {
      std::unique_lock lock(mutex_);
      ran_cv_.wait(lock, [this] { return ran_; });
    }

   private:
    std::function<void()> fn_;
    std::mutex mutex_;
    std::condition_variable ran_cv_;
    bool ran_ = false;
  };

  io::Reactor* reactor_ = nullptr;
};

// The order in which operations' done() ran (all on the one shard's thread), and a wait for
// the last of them.
class Finishes {
 public:
  void add(std::string name) {
    const std::lock_guard lock(mutex_);
    order_.push_back(std::move(name));
    changed_.notify_all();
  }
  std::vector<std::string> wait_for(size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return order_.size() >= count; });
    return order_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> order_;
};

template <typename Op>
class Recorded final : public Op {
 public:
  Recorded(Finishes& finishes, std::string name) : finishes_(finishes), name_(std::move(name)) {}

 private:
  void done() override { finishes_.add(name_); }
  Finishes& finishes_;
  std::string name_;
};

std::vector<std::byte> message(std::string_view payload) {
  std::vector<std::byte> bytes(message_layout::header_bytes + payload.size());
  store_u32(bytes, message_layout::payload_length, static_cast<uint32_t>(payload.size()));
  std::memcpy(bytes.data() + message_layout::header_bytes, payload.data(), payload.size());
  return bytes;
}

using Row = std::tuple<std::string, std::string, uint32_t>;

class StatsWalk : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("hark_stats_walk_test_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
    BrokerOptions options;
    options.data_directory = directory_.string();
    options.shards_count = 1;
    options.stats_step_max = step_max;
    // Committed at append: the append below ends without waiting for a disk write.
    options.log.durability = storage::Durability::memory;
    options.hooks = &shard_;
    auto broker = Broker::start(options);
    ASSERT_TRUE(broker.ok()) << error_name(broker.error());
    broker_ = std::move(broker).value();
    Blocking<CreateStream> stream;
    stream.name = "orders";
    ASSERT_TRUE(stream.call(*broker_).ok());
    Blocking<CreateTopic> topic;
    topic.stream = NameOrId::id(0);
    topic.name = "events";
    topic.settings.partitions_count = partitions_count;
    ASSERT_TRUE(topic.call(*broker_).ok());
  }

  void TearDown() override {
    if (broker_ != nullptr) broker_->stop();
    broker_.reset();
    std::filesystem::remove_all(directory_);
  }

  static void prepare(Append& append, uint32_t partition, std::span<const std::byte> bytes) {
    append.stream = NameOrId::id(0);
    append.topic = NameOrId::id(0);
    append.partitioning = Partitioning{Partitioning::Kind::partition, partition};
    append.messages = bytes;
    append.count = 1;
  }

  void change_partitions(bool create, uint32_t count) {
    if (create) {
      Blocking<CreatePartitions> add;
      add.stream = NameOrId::id(0);
      add.topic = NameOrId::id(0);
      add.count = count;
      ASSERT_TRUE(add.call(*broker_).ok());
      return;
    }
    Blocking<DeletePartitions> remove;
    remove.stream = NameOrId::id(0);
    remove.topic = NameOrId::id(0);
    remove.count = count;
    ASSERT_TRUE(remove.call(*broker_).ok());
  }

  std::filesystem::path directory_;
  ShardAccess shard_;
  std::unique_ptr<Broker> broker_;
};

TEST_F(StatsWalk, AnAppendSubmittedDuringTheWalkEndsBeforeItAndEveryPartitionIsReportedOnce) {
  Finishes finishes;
  Recorded<GetStats> stats(finishes, "stats");
  stats.limits = {.partitions = 1000, .consumers = 10};
  Recorded<Append> append(finishes, "append");
  const std::vector<std::byte> bytes = message("during the walk");
  prepare(append, partitions_count - 1, bytes);
  // Both from the shard itself: the walk's first step runs inside submit(), then the append is
  // queued behind its next step. Walked in one task, the stats would end first.
  shard_.run([&] {
    broker_->submit(stats);
    broker_->submit(append);
  });
  const std::vector<std::string> order = finishes.wait_for(2);
  EXPECT_EQ(order, (std::vector<std::string>{"append", "stats"}));
  ASSERT_TRUE(append.status().ok());
  ASSERT_TRUE(stats.status().ok());

  EXPECT_EQ(stats.stats.partitions, partitions_count);
  std::set<Row> rows;
  for (const PartitionSeries& series : stats.series.partitions) {
    EXPECT_EQ(series.stream, "orders");
    EXPECT_EQ(series.topic, "events");
    rows.emplace(series.stream, series.topic, series.partition);
  }
  EXPECT_EQ(stats.series.partitions.size(), partitions_count);
  EXPECT_EQ(rows.size(), partitions_count);  // Each partition once.
  EXPECT_EQ(stats.series.partitions_dropped, 0u);
}

TEST_F(StatsWalk, SeriesCapsAndLagTotalsHoldAcrossSteps) {
  const std::vector<std::byte> bytes = message("m");
  // Three messages on every fifth partition; consumer 7 read one of them on each of those.
  uint64_t next_offset_sum = 0;
  for (uint32_t partition = 0; partition < partitions_count; partition += 5) {
    for (int i = 0; i < 3; ++i) {
      Blocking<Append> append;
      prepare(append, partition, bytes);
      ASSERT_TRUE(append.call(*broker_).ok());
    }
    next_offset_sum += 3;
    Blocking<StoreOffset> store;
    store.consumer = {.kind = ConsumerRef::Kind::consumer, .id = 7};
    store.stream = NameOrId::id(0);
    store.topic = NameOrId::id(0);
    store.partition = partition;
    store.offset = 0;
    ASSERT_TRUE(store.call(*broker_).ok());
  }
  Blocking<GetStats> stats;
  stats.limits = {.partitions = 10, .consumers = 10};
  ASSERT_TRUE(stats.call(*broker_).ok());
  EXPECT_EQ(stats.series.partitions.size(), 10u);
  EXPECT_EQ(stats.series.partitions_dropped, partitions_count - 10);
  uint64_t reported = 0;
  for (const PartitionSeries& series : stats.series.partitions) reported += series.next_offset;
  EXPECT_EQ(reported + stats.series.dropped_next_offset_sum, next_offset_sum);
  // One lag row, summed over the steps: 2 unread on each of the 8 partitions it stored on.
  ASSERT_EQ(stats.series.lags.size(), 1u);
  EXPECT_EQ(stats.series.lags[0].consumer.id, 7u);
  EXPECT_EQ(stats.series.lags[0].lag, 2u * (partitions_count / 5));
  EXPECT_EQ(stats.stats.messages_count, next_offset_sum);
}

// The walk's steps driven by hand, with partitions deleted and created between them: keys
// only increase, so nothing is visited twice; what was deleted ahead of the cursor is not
// visited, what was created ahead of it is.
TEST_F(StatsWalk, PartitionsCreatedAndDeletedBetweenStepsAreVisitedAtMostOnce) {
  std::optional<PartitionKey> after;
  std::vector<uint32_t> visited;
  bool finished = false;
  const auto step = [&] {
    shard_.run([&] {
      finished = internal::BrokerShard::current()->walk_partitions(
          after, step_max, [&](const internal::Partition& partition) {
            visited.push_back(partition.cell().key.partition.value());
            return uint32_t{1};
          });
    });
  };
  step();  // Partitions 0..3.
  ASSERT_FALSE(finished);
  ASSERT_EQ(visited, (std::vector<uint32_t>{0, 1, 2, 3}));
  change_partitions(false, 10);  // 30..39 go, ahead of the cursor.
  step();                        // 4..7.
  ASSERT_FALSE(finished);
  change_partitions(false, 25);  // 5..29 go, the cursor's own key (7) among them,
  change_partitions(true, 5);    // and 5..9 come as new partitions: 8 and 9 are ahead of it.
  step();
  EXPECT_TRUE(finished);
  EXPECT_EQ(visited, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));

  // The same through GetStats, whose every step is queued behind the metadata rounds.
  Blocking<GetStats> stats;
  stats.limits = {.partitions = 1000};
  ASSERT_TRUE(stats.call(*broker_).ok());
  EXPECT_EQ(stats.stats.partitions, 10u);
  std::set<uint32_t> rows;
  for (const PartitionSeries& series : stats.series.partitions) rows.insert(series.partition);
  EXPECT_EQ(rows, (std::set<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(stats.series.partitions.size(), 10u);
}

}  // namespace
}  // namespace hark::core
