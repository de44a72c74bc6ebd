// Stresses notifications (docs/notifications.md) from the broker's own shard threads, as a
// server would (run under ThreadSanitizer and AddressSanitizer): on each of three shards a
// driver keeps Notify requests in flight (hark.messages and hark.lag, above and below, on one
// partition or the whole topic, for consumers and for group members while shard 0 makes a
// member join and leave), appends, stores and deletes consumer offsets, and cancels requests
// at random, for HARK_STRESS_SECONDS (default 2). Checked: every request is answered exactly
// once; within its wait plus a generous second (a lost wake-up fails this); only a cancelled
// request ends with Disconnected; every answer decodes and held when the owner gave it; at
// shutdown every pool is full again (WaitShard asserts it).
#include <atomic>
#include <chrono>
#include <cstdio>
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
  std::atomic<uint64_t> notified{0};  // Requests answered with at least one partition.
  std::atomic<uint64_t> cancelled{0};
  std::atomic<int> double_answers{0};
  std::atomic<int> late{0};
  std::atomic<int> bad_status{0};
  std::atomic<int> bad_answers{0};
};

class Driver;

// One operation of a driver: answered exactly once, on the driver's shard.
template <typename Op>
class Tracked final : public Op {
 public:
  void done() override;
  Driver* driver = nullptr;
  bool in_flight = false;
};

class TestNotify final : public Notify {
 public:
  void done() override;
  Driver* driver = nullptr;
  bool in_flight = false;
  bool cancel_sent = false;
  SteadyClock::time_point submitted;
  uint64_t threshold = 0;  // hark.lag's, or hark.messages' min_messages.
  bool lag_above = false;
};

class Driver final : public io::Timer {
 public:
  Driver(Broker& broker, io::Reactor& reactor, Totals& totals)
      : broker_(broker),
        reactor_(reactor),
        totals_(totals),
        prng_(totals.seed + reactor.id().value()),
        notifies_(8) {
    std::vector<std::byte> bytes(message_layout::header_bytes + 8);
    store_u32(bytes, message_layout::payload_length, 8);
    message_ = bytes;
    for (auto& notify : notifies_) notify.driver = this;
    append_.driver = store_.driver = forget_.driver = join_.driver = leave_.driver = this;
    // Member 100 joins and leaves (shard 0): rebalances under parked members.
    join_.stream = leave_.stream = NameOrId::id(0);
    join_.topic = leave_.topic = NameOrId::id(0);
    join_.group = leave_.group = NameOrId::id(0);
    join_.member = leave_.member = 100;
    arm();
  }

  void expire() override {
    if (!totals_.running.load()) return;
    for (auto& notify : notifies_) {
      if (notify.in_flight) {
        if (!notify.cancel_sent && prng_.chance(3)) {
          notify.cancel_sent = true;
          broker_.cancel(notify);
        }
      } else if (prng_.chance(50)) {
        submit_notify(notify);
      }
    }
    if (!append_.in_flight && prng_.chance(30)) submit_append();
    if (!store_.in_flight && prng_.chance(20)) submit_store();
    if (!forget_.in_flight && prng_.chance(5)) submit_forget();
    if (reactor_.id() == ShardId(0) && !join_.in_flight && !leave_.in_flight && prng_.chance(2)) {
      auto& op =
          joined_ ? static_cast<MetadataCommand&>(leave_) : static_cast<MetadataCommand&>(join_);
      (joined_ ? leave_.in_flight : join_.in_flight) = true;
      joined_ = !joined_;
      submit(op);
    }
    arm();
  }

  void answered(bool& in_flight) {
    if (!in_flight) totals_.double_answers.fetch_add(1);
    in_flight = false;
    totals_.answered.fetch_add(1);
  }
  Totals& totals() { return totals_; }
  void stop() { reactor_.timers().cancel(*this); }

 private:
  void arm() { reactor_.timers().add(*this, reactor_.clock().monotonic_now() + 1ms); }

  void submit(Operation& op) {
    totals_.submitted.fetch_add(1);
    broker_.submit(op);
  }

  template <typename Op>
  void address(Op& op, bool whole_topic) {
    op.stream = NameOrId::id(0);
    op.topic = NameOrId::id(0);
    op.group = NameOrId::id(0);
    op.partition = static_cast<uint32_t>(prng_.below(partitions_count));
    if (whole_topic) op.partition.reset();
    op.consumer = ConsumerRef{ConsumerRef::Kind::consumer, static_cast<uint32_t>(prng_.below(3))};
  }

  void submit_notify(TestNotify& notify) {
    address(notify, prng_.chance(40));
    if (prng_.chance(30)) {
      // A group member (0..2 joined before the drivers) on its assignment.
      notify.partition.reset();
      notify.consumer.kind = ConsumerRef::Kind::group;
      notify.member = static_cast<uint32_t>(prng_.below(3));
    }
    notify.threshold = prng_.below(4);
    if (prng_.chance(50)) {
      notify.threshold += 1;  // min_messages >= 1
      wait_for_messages(notify,
                        MessagesParams{.min_messages = static_cast<uint32_t>(notify.threshold)});
    } else {
      notify.lag_above = prng_.chance(50);
      wait_for_lag(notify, LagParams{.direction = notify.lag_above ? LagParams::Direction::above
                                                                   : LagParams::Direction::below,
                                     .threshold = notify.threshold});
    }
    notify.wait = std::chrono::milliseconds(prng_.below(60));
    notify.in_flight = true;
    notify.cancel_sent = false;
    notify.submitted = SteadyClock::now();
    submit(notify);
  }

  void submit_append() {
    append_.stream = NameOrId::id(0);
    append_.topic = NameOrId::id(0);
    append_.partitioning = Partitioning{Partitioning::Kind::partition,
                                        static_cast<uint32_t>(prng_.below(partitions_count))};
    append_.messages = message_;
    append_.count = 1;
    append_.in_flight = true;
    submit(append_);
  }

  void submit_store() {
    address(store_, false);
    if (prng_.chance(30)) store_.consumer = ConsumerRef{ConsumerRef::Kind::group, 0};
    store_.offset = prng_.below(40);  // Past the end: InvalidOffset, which is fine.
    store_.in_flight = true;
    submit(store_);
  }

  void submit_forget() {
    address(forget_, false);
    forget_.in_flight = true;
    submit(forget_);
  }

  Broker& broker_;
  io::Reactor& reactor_;
  Totals& totals_;
  test::Prng prng_;
  std::vector<TestNotify> notifies_;
  Tracked<Append> append_;
  Tracked<StoreOffset> store_;
  Tracked<DeleteOffset> forget_;
  Tracked<JoinConsumerGroup> join_;
  Tracked<LeaveConsumerGroup> leave_;
  bool joined_ = false;
  std::vector<std::byte> message_;
};

// Each hark.messages answer held when its owner gave it; a hark.lag answer is every
// partition's lag, summing to a total that holds.
bool answers_held(const TestNotify& notify) {
  uint64_t lags = 0;
  for (const NotifyAnswer& answer : notify.answers) {
    if (const auto ready = messages_ready(answer)) {
      if (ready->next_offset < ready->first_readable + notify.threshold) return false;
    } else if (const auto lag = partition_lag(answer)) {
      lags += lag->lag;
    } else {
      return false;
    }
  }
  if (notify.condition != lag_condition || notify.answers.empty()) return true;
  const uint64_t total = notify.total.value_or(UINT64_MAX);
  return lags == total &&
         (notify.lag_above ? total >= notify.threshold : total <= notify.threshold);
}

// A failing answer says what it held, so a rare interleaving explains itself in the log.
void print_answers(const TestNotify& notify) {
  std::fprintf(stderr, "answer that does not hold: %s, threshold %llu%s, total %lld\n",
               notify.condition == lag_condition ? "hark.lag" : "hark.messages",
               static_cast<unsigned long long>(notify.threshold),
               notify.condition != lag_condition ? ""
               : notify.lag_above                ? " (above)"
                                                 : " (below)",
               notify.total ? static_cast<long long>(*notify.total) : -1LL);
  for (const NotifyAnswer& answer : notify.answers) {
    if (const auto ready = messages_ready(answer)) {
      std::fprintf(stderr, "  partition %u: first readable %llu, next offset %llu\n",
                   ready->partition_id, static_cast<unsigned long long>(ready->first_readable),
                   static_cast<unsigned long long>(ready->next_offset));
    } else if (const auto lag = partition_lag(answer)) {
      std::fprintf(stderr, "  partition %u: next offset %llu, stored %lld, lag %llu\n",
                   lag->partition_id, static_cast<unsigned long long>(lag->next_offset),
                   lag->stored ? static_cast<long long>(*lag->stored) : -1LL,
                   static_cast<unsigned long long>(lag->lag));
    } else {
      std::fprintf(stderr, "  an answer of neither shape\n");
    }
  }
}

void TestNotify::done() {
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
  if (SteadyClock::now() - submitted > wait + 1s && totals.running.load()) totals.late.fetch_add(1);
  if (!answers.empty()) totals.notified.fetch_add(1);
  if (!answers_held(*this)) {
    totals.bad_answers.fetch_add(1);
    print_answers(*this);
  }
}

template <typename Op>
void Tracked<Op>::done() {
  driver->answered(in_flight);
  const Error error = this->status().error();
  // A store past the end, or a delete of nothing stored, is the caller's mistake, not ours.
  if (error != Error::ok && error != Error::invalid_offset &&
      error != Error::consumer_offset_not_found) {
    driver->totals().bad_status.fetch_add(1);
  }
}

class Hooks final : public ShardHooks {
 public:
  explicit Hooks(Totals& totals) : totals_(totals) {}
  Status on_start(Broker& broker, io::Reactor& reactor) override {
    if (reactor.id() == ShardId(0)) broker_ = &broker;
    reactors_[reactor.id().value()] = &reactor;
    return ok_status();
  }
  void on_stop(io::Reactor& reactor) override {
    if (drivers_[reactor.id().value()]) drivers_[reactor.id().value()]->stop();
  }
  void on_drained(io::Reactor& reactor) override { drivers_[reactor.id().value()].reset(); }

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

Status prepare(Broker& broker) {
  Blocking<CreateStream> stream;
  stream.name = "stress";
  HARK_TRY(stream.call(broker));
  Blocking<CreateTopic> topic;
  topic.stream = NameOrId::id(0);
  topic.name = "t";
  topic.settings.partitions_count = partitions_count;
  HARK_TRY(topic.call(broker));
  Blocking<CreateConsumerGroup> group;
  group.stream = NameOrId::id(0);
  group.topic = NameOrId::id(0);
  group.name = "g";
  HARK_TRY(group.call(broker));
  for (uint32_t member = 0; member < 3; member++) {
    Blocking<JoinConsumerGroup> join;
    join.stream = NameOrId::id(0);
    join.topic = NameOrId::id(0);
    join.group = NameOrId::id(0);
    join.member = member;
    HARK_TRY(join.call(broker));
  }
  return ok_status();
}

TEST(NotifyConcurrency, RandomNotifiesAppendsStoresAndCancelsStayExactlyOnce) {
  const auto directory = std::filesystem::temp_directory_path() /
                         ("hark_notify_concurrency_" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory);
  Totals totals;
  totals.seed = test::test_seed();
  Hooks hooks(totals);
  BrokerOptions options;
  options.data_directory = directory.string();
  options.shards_count = shards_count;
  options.hooks = &hooks;
  options.waits.sweep_interval = 20ms;  // Zombie sweeps race with the rest too.
  auto started = Broker::start(options);
  ASSERT_TRUE(started.ok());
  Broker& broker = **started;
  ASSERT_TRUE(prepare(broker).ok());
  hooks.start_drivers();

  const char* seconds = std::getenv("HARK_STRESS_SECONDS");
  // Not a wait for a signal: how long the stress runs (HARK_STRESS_SECONDS) is the test.
  std::this_thread::sleep_for(std::chrono::seconds(seconds != nullptr ? std::atoi(seconds) : 2));
  totals.running.store(false);
  test::wait_until([&] { return totals.answered.load() == totals.submitted.load(); }, 5s);
  EXPECT_EQ(totals.answered.load(), totals.submitted.load()) << "operations never answered";
  (*started)->stop();
  started->reset();
  std::filesystem::remove_all(directory);

  EXPECT_EQ(totals.answered.load(), totals.submitted.load());
  EXPECT_EQ(totals.double_answers.load(), 0);
  EXPECT_EQ(totals.late.load(), 0);
  EXPECT_EQ(totals.bad_status.load(), 0);
  EXPECT_EQ(totals.bad_answers.load(), 0);
  EXPECT_GT(totals.notified.load(), 100u);
  EXPECT_GT(totals.cancelled.load(), 0u);
  std::printf("operations %lu, notified %lu, cancelled %lu\n",
              static_cast<unsigned long>(totals.submitted.load()),
              static_cast<unsigned long>(totals.notified.load()),
              static_cast<unsigned long>(totals.cancelled.load()));
}

}  // namespace
}  // namespace hark::core
