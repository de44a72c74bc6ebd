// Stresses the Broker from its own shard threads, as a server does (run under ThreadSanitizer
// and AddressSanitizer): on each of three shards a driver keeps polls with random strategies,
// offsets and waits in flight on four partitions, appends, cancels polls at random (a client
// going away), group members poll their whole assignment while shard 0 makes member 100 join
// and leave (rebalances under parked polls) and purges the topic now and then, for
// HARK_STRESS_SECONDS (default 2). Checked: every submitted operation is answered exactly once; a
// poll answers within its wait plus a generous second (a lost wake-up or a stuck poll fails this);
// only a cancelled poll ends with Disconnected; messages returned start at or after the offset
// asked for; at shutdown everything is answered and every pool is full again (WaitShard asserts
// it).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/core/broker/blocking.h"
#include "hark/core/broker/broker.h"
#include "hark/tests/support/prng.h"
#include "hark/tests/support/wait_until.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t shards_count = 3;
constexpr uint32_t partitions_count = 4;

struct Totals {
  uint64_t seed = 0;
  std::atomic<bool> running{true};
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> answered{0};
  std::atomic<uint64_t> with_data{0};
  std::atomic<uint64_t> cancelled{0};
  std::atomic<uint64_t> group_with_data{0};
  std::atomic<int> double_answers{0};
  std::atomic<int> late{0};
  std::atomic<int> bad_status{0};
  std::atomic<int> bad_offsets{0};
};

class Driver;

class TestPoll final : public Poll {
 public:
  void done() override;
  Driver* driver = nullptr;
  bool in_flight = false;
  bool cancel_sent = false;
  SteadyClock::time_point submitted;
};

class TestAppend final : public Append {
 public:
  void done() override;
  Driver* driver = nullptr;
  bool in_flight = false;
};

class TestPurge final : public PurgeTopic {
 public:
  void done() override;
  Driver* driver = nullptr;
  bool in_flight = false;
};

// One shard's client: acts every tick of its timer, on its shard's thread only.
class Driver final : public io::Timer {
 public:
  Driver(Broker& broker, io::Reactor& reactor, Totals& totals)
      : broker_(broker),
        reactor_(reactor),
        totals_(totals),
        prng_(totals.seed + reactor.id().value()),
        polls_(8),
        appends_(2) {
    std::vector<std::byte> bytes(message_layout::header_bytes + 8);
    store_u32(bytes, message_layout::payload_length, 8);
    message_ = bytes;
    for (auto& poll : polls_) poll.driver = this;
    for (auto& append : appends_) append.driver = this;
    purge_.driver = this;
    join_.driver = this;
    leave_.driver = this;
    join_.stream = leave_.stream = NameOrId::id(0);
    join_.topic = leave_.topic = NameOrId::id(0);
    join_.group = leave_.group = NameOrId::id(0);
    join_.member = leave_.member = 100;
    arm();
  }

  void expire() override {
    if (!totals_.running.load()) return;
    for (TestPoll& poll : polls_) {
      if (poll.in_flight) {
        if (!poll.cancel_sent && prng_.chance(3)) {
          poll.cancel_sent = true;
          broker_.cancel(poll);
        }
      } else if (prng_.chance(50)) {
        submit_poll(poll);
      }
    }
    for (TestAppend& append : appends_) {
      if (!append.in_flight && prng_.chance(20)) submit_append(append);
    }
    if (reactor_.id() == ShardId(0) && !join_.in_flight && !leave_.in_flight && prng_.chance(2)) {
      Operation& op = joined_ ? static_cast<Operation&>(leave_) : static_cast<Operation&>(join_);
      (joined_ ? leave_.in_flight : join_.in_flight) = true;
      joined_ = !joined_;
      submitted();
      broker_.submit(op);
    }
    if (reactor_.id() == ShardId(0) && !purge_.in_flight && prng_.chance(1)) {
      purge_.stream = NameOrId::id(0);
      purge_.topic = NameOrId::id(0);
      purge_.in_flight = true;
      submitted();
      broker_.submit(purge_);
    }
    arm();
  }

  void submitted() { totals_.submitted.fetch_add(1); }
  void answered(bool& in_flight) {
    if (!in_flight) totals_.double_answers.fetch_add(1);
    in_flight = false;
    totals_.answered.fetch_add(1);
  }
  Totals& totals() { return totals_; }
  void stop() { reactor_.timers().cancel(*this); }

 private:
  void arm() { reactor_.timers().add(*this, reactor_.clock().monotonic_now() + 1ms); }

  void submit_poll(TestPoll& poll) {
    poll.stream = NameOrId::id(0);
    poll.topic = NameOrId::id(0);
    poll.partition = static_cast<uint32_t>(prng_.below(partitions_count));
    poll.consumer = ConsumerRef{ConsumerRef::Kind::consumer, static_cast<uint32_t>(prng_.below(3))};
    if (prng_.chance(30)) {
      // A group member polling its whole assignment (members 0..2 joined before the drivers).
      poll.partition.reset();
      poll.consumer.kind = ConsumerRef::Kind::group;
      poll.group = NameOrId::id(0);
      poll.member = static_cast<uint32_t>(prng_.below(3));
    }
    poll.from = prng_.chance(50) ? PollFrom::next : PollFrom::offset;
    poll.value = prng_.below(60);
    poll.count = 1 + static_cast<uint32_t>(prng_.below(5));
    poll.wait = std::chrono::milliseconds(prng_.below(60));
    poll.in_flight = true;
    poll.cancel_sent = false;
    poll.submitted = SteadyClock::now();
    submitted();
    broker_.submit(poll);
  }

  void submit_append(TestAppend& append) {
    append.stream = NameOrId::id(0);
    append.topic = NameOrId::id(0);
    append.partitioning = Partitioning{Partitioning::Kind::partition,
                                       static_cast<uint32_t>(prng_.below(partitions_count))};
    append.messages = message_;
    append.count = 1;
    append.in_flight = true;
    submitted();
    broker_.submit(append);
  }

  Broker& broker_;
  io::Reactor& reactor_;
  Totals& totals_;
  test::Prng prng_;
  std::vector<TestPoll> polls_;
  std::vector<TestAppend> appends_;
  TestPurge purge_;
  struct Join final : JoinConsumerGroup {
    void done() override;
    Driver* driver = nullptr;
    bool in_flight = false;
  } join_;
  struct Leave final : LeaveConsumerGroup {
    void done() override;
    Driver* driver = nullptr;
    bool in_flight = false;
  } leave_;
  bool joined_ = false;
  std::vector<std::byte> message_;
};

void TestPoll::done() {
  Totals& totals = driver->totals();
  driver->answered(in_flight);
  if (status().error() == Error::disconnected) {
    if (!cancel_sent) totals.bad_status.fetch_add(1);
    totals.cancelled.fetch_add(1);
    return;
  }
  if (!status().ok()) {
    totals.bad_status.fetch_add(1);
    return;
  }
  // Cancelled polls may still end normally (the answer won the race); shutdown answers early.
  if (SteadyClock::now() - submitted > wait + 1s && totals.running.load()) totals.late.fetch_add(1);
  if (!result.messages.empty()) {
    totals.with_data.fetch_add(1);
    if (!partition.has_value()) totals.group_with_data.fetch_add(1);
    if (from == PollFrom::offset && result.messages.first().value() < value) {
      totals.bad_offsets.fetch_add(1);
    }
  }
}

void TestAppend::done() {
  driver->answered(in_flight);
  if (!status().ok()) driver->totals().bad_status.fetch_add(1);
}

void Driver::Join::done() {
  driver->answered(in_flight);
  if (!status().ok()) driver->totals().bad_status.fetch_add(1);
}

void Driver::Leave::done() {
  driver->answered(in_flight);
  if (!status().ok()) driver->totals().bad_status.fetch_add(1);
}

void TestPurge::done() {
  driver->answered(in_flight);
  if (!status().ok()) driver->totals().bad_status.fetch_add(1);
}

class Hooks final : public ShardHooks {
 public:
  explicit Hooks(Totals& totals) : totals_(totals) {}
  Status on_start(Broker& broker, io::Reactor& reactor) override {
    if (reactor.id() == ShardId(0)) broker_ = &broker;  // Read after Broker::start returns.
    reactors_[reactor.id().value()] = &reactor;
    return ok_status();
  }
  void on_stop(io::Reactor& reactor) override {
    if (drivers_[reactor.id().value()]) drivers_[reactor.id().value()]->stop();
  }
  void on_drained(io::Reactor& reactor) override { drivers_[reactor.id().value()].reset(); }

  // Starts the drivers on their shards, once the topic exists.
  void start_drivers() {
    for (uint32_t i = 0; i < shards_count; i++) {
      starters_[i].hooks = this;
      starters_[i].shard = i;
      reactors_[i]->post_from_outside(starters_[i]);
    }
  }

 private:
  struct Starter final : io::Task {
    void run() override {
      hooks->drivers_[shard] =
          std::make_unique<Driver>(*hooks->broker_, *hooks->reactors_[shard], hooks->totals_);
    }
    Hooks* hooks = nullptr;
    uint32_t shard = 0;
  };

  Totals& totals_;
  Broker* broker_ = nullptr;
  io::Reactor* reactors_[shards_count] = {};
  std::unique_ptr<Driver> drivers_[shards_count];
  Starter starters_[shards_count];
};

TEST(BrokerConcurrency, RandomPollsAppendsCancelsAndPurgesFromEveryShard) {
  const auto directory = std::filesystem::temp_directory_path() /
                         ("hark_broker_concurrency_" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory);
  Totals totals;
  totals.seed = test::test_seed();
  Hooks hooks(totals);
  BrokerOptions options;
  options.data_directory = directory.string();
  options.shards_count = shards_count;
  options.hooks = &hooks;
  auto started = Broker::start(options);
  ASSERT_TRUE(started.ok());
  Broker& broker = **started;
  Blocking<CreateStream> stream;
  stream.name = "stress";
  ASSERT_TRUE(stream.call(broker).ok());
  Blocking<CreateTopic> topic;
  topic.name = "t";
  topic.settings.partitions_count = partitions_count;
  ASSERT_TRUE(topic.call(broker).ok());
  Blocking<CreateConsumerGroup> group;
  group.stream = NameOrId::id(0);
  group.topic = NameOrId::id(0);
  group.name = "g";
  ASSERT_TRUE(group.call(broker).ok());
  for (uint32_t member = 0; member < 3; member++) {
    Blocking<JoinConsumerGroup> join;
    join.stream = NameOrId::id(0);
    join.topic = NameOrId::id(0);
    join.group = NameOrId::id(0);
    join.member = member;
    ASSERT_TRUE(join.call(broker).ok());
  }
  hooks.start_drivers();

  const char* seconds = std::getenv("HARK_STRESS_SECONDS");
  // Not a wait for a signal: how long the stress runs (HARK_STRESS_SECONDS) is the test.
  std::this_thread::sleep_for(std::chrono::seconds(seconds != nullptr ? std::atoi(seconds) : 2));
  totals.running.store(false);
  // Whatever is in flight ends within the longest wait; then shutdown answers the rest.
  test::wait_until([&] { return totals.answered.load() == totals.submitted.load(); }, 5s);
  EXPECT_EQ(totals.answered.load(), totals.submitted.load()) << "operations never answered";
  (*started)->stop();
  started->reset();
  std::filesystem::remove_all(directory);

  EXPECT_EQ(totals.answered.load(), totals.submitted.load());
  EXPECT_EQ(totals.double_answers.load(), 0);
  EXPECT_EQ(totals.late.load(), 0);
  EXPECT_EQ(totals.bad_status.load(), 0);
  EXPECT_EQ(totals.bad_offsets.load(), 0);
  EXPECT_GT(totals.with_data.load(), 100u);
  EXPECT_GT(totals.cancelled.load(), 0u);
  EXPECT_GT(totals.group_with_data.load(), 10u);
  std::printf("operations %lu, polls with data %lu (group-wide %lu), cancelled %lu\n",
              static_cast<unsigned long>(totals.submitted.load()),
              static_cast<unsigned long>(totals.with_data.load()),
              static_cast<unsigned long>(totals.group_with_data.load()),
              static_cast<unsigned long>(totals.cancelled.load()));
}

}  // namespace
}  // namespace hark::core
