// Shutdown with requests still in the broker (io/shard_group.h, ShardHooks): an embedder's
// request that is on another shard when the shards stop, or that the embedder cancels while
// they stop (harkd: a poll forwarded over a node link that arrives as the node stops, a
// connection's poll when it is dropped), reaches its done() before the shard is torn down, and
// the broker holds nothing of it then. Before the drain ran tasks, such a poll was left in its
// owner's inbox and the shard's PollJobPool was destroyed with its job in use (an abort).
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "hark/core/broker/blocking.h"
#include "hark/core/broker/broker.h"
#include "hark/tests/support/wait_until.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;

// A poll the test's hooks submit from a shard: done() records its status and whether it came
// before its home shard's teardown.
class HookPoll final : public Poll {
 public:
  void done() override { finished = true; }
  bool finished = false;
};

// Two shards; a topic with one partition owned by each. `home` submits a poll on the partition
// the other shard owns from its on_stop, once the other shard's on_stop has run (so that
// shard is as far into its shutdown as it gets before the drain).
class BrokerShutdownTest : public ::testing::Test, private ShardHooks {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("hark_shutdown_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(directory_);
  }

  void TearDown() override { std::filesystem::remove_all(directory_); }

  // Starts the broker, creates the topic and returns the partition shard `owner` owns.
  void start() {
    BrokerOptions options;
    options.data_directory = directory_.string();
    options.shards_count = 2;
    options.hooks = this;
    auto started = Broker::start(options);
    ASSERT_TRUE(started.ok()) << error_name(started.error());
    broker_ = std::move(started).value();
    Blocking<CreateStream> stream;
    stream.name = "s";
    ASSERT_TRUE(stream.call(*broker_).ok());
    Blocking<CreateTopic> topic;
    topic.stream = NameOrId::id(0);
    topic.name = "t";
    topic.settings.partitions_count = 2;
    ASSERT_TRUE(topic.call(*broker_).ok());
    for (uint32_t partition = 0; partition < 2; partition++) {
      Blocking<Poll> probe;
      probe.stream = NameOrId::id(0);
      probe.topic = NameOrId::id(0);
      probe.partition = partition;
      ASSERT_TRUE(probe.call(*broker_).ok());
      ASSERT_TRUE(probe.result.owner_shard.has_value());
      owned_by_[probe.result.owner_shard->value()] = partition;
    }
    ASSERT_TRUE(owned_by_[0].has_value() && owned_by_[1].has_value())
        << "the ownership map put both partitions on one shard";
  }

  void stop() {
    broker_->stop();
    broker_.reset();
  }

  Status on_start(Broker& broker, io::Reactor& reactor) override {
    (void)broker;
    (void)reactor;
    return ok_status();
  }

  void on_stop(io::Reactor& reactor) override {
    const uint32_t shard = reactor.id().value();
    if (shard != home_) {
      stopped_other_.store(true, std::memory_order_release);
      return;
    }
    // A request that arrives as the shard stops (a forwarded poll read in the same batch as the
    // link's close): it visits the other shard's partition while that shard stops too.
    ASSERT_TRUE(test::wait_until([&] { return stopped_other_.load(std::memory_order_acquire); }));
    poll_.stream = NameOrId::id(0);
    poll_.topic = NameOrId::id(0);
    poll_.partition = owned_by_[1 - home_].value();
    poll_.wait = 30s;
    broker_->submit(poll_);
  }

  void on_abort(io::Reactor& reactor) override {
    // The request's client went away (a dropped connection, a closed link).
    if (cancel_at_abort_ && reactor.id().value() == home_ && !poll_.finished) {
      broker_->cancel(poll_);
    }
  }

  void on_drained(io::Reactor& reactor) override {
    if (reactor.id().value() != home_) return;
    finished_before_teardown_ = poll_.finished;
    in_flight_at_teardown_ = broker_->operations_in_flight();
  }

  std::filesystem::path directory_;
  std::unique_ptr<Broker> broker_;
  std::optional<uint32_t> owned_by_[2];
  uint32_t home_ = 0;
  // With the poll's home on each shard in turn: start, stop, the poll finished before the
  // teardown with nothing left in flight, then `check` of its answer.
  void stop_from_each_home(const std::function<void()>& check) {
    for (const uint32_t home : {0u, 1u}) {
      SCOPED_TRACE("home shard " + std::to_string(home));
      home_ = home;
      stopped_other_ = false;
      poll_.finished = false;
      start();
      stop();
      EXPECT_TRUE(finished_before_teardown_);
      EXPECT_EQ(in_flight_at_teardown_, 0u);
      check();
      std::filesystem::remove_all(directory_);
    }
  }

  bool cancel_at_abort_ = false;
  std::atomic<bool> stopped_other_{false};
  HookPoll poll_;
  bool finished_before_teardown_ = false;
  size_t in_flight_at_teardown_ = SIZE_MAX;
};

TEST_F(BrokerShutdownTest, APollOnItsWayToAnotherShardIsAnsweredBeforeTeardown) {
  stop_from_each_home([&] {
    // Stopping: answered at once, empty, instead of parked.
    EXPECT_TRUE(poll_.status().ok()) << error_name(poll_.status().error());
    EXPECT_TRUE(poll_.result.messages.empty());
  });
}

TEST_F(BrokerShutdownTest, APollCancelledWhileTheShardsStopCompletesBeforeTeardown) {
  cancel_at_abort_ = true;
  stop_from_each_home([&] {
    // Answered empty if it was back before the cancel, else the cancel's error.
    EXPECT_TRUE(poll_.status().ok() || poll_.status().error() == Error::disconnected)
        << error_name(poll_.status().error());
  });
}

}  // namespace
}  // namespace hark::core
