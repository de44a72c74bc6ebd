// Notifications in the core (docs/notifications.md): the Notify operation and its built-in
// conditions hark.messages and hark.lag, through the Broker's public API from threads outside
// it (Blocking<Notify>, run on a std::async thread while the test thread acts). Two shards and
// four partitions, so most waits cross shards. Covered: answers at once, each trigger (append,
// store offset, delete offset), each end (deadline, cancel, purge, delete, shutdown, group
// rebalance), a commit that cannot satisfy a parked waiter evaluating nothing (the
// conditions_evaluated counter), refused requests, and an embedder's own condition: the
// stalled-producer example of docs/notifications.md, whose `docs:` regions the doc quotes
// verbatim (the last test checks it).
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/core/broker/blocking.h"
#include "hark/core/broker/broker.h"
#include "hark/core/broker/notify_operations.h"
#include "hark/tests/support/broker_waits.h"
#include "hark/tests/support/docs_quote.h"

#ifndef HARK_SOURCE_DIR
#error "HARK_SOURCE_DIR must name the repository root (tests/core/CMakeLists.txt sets it)"
#endif

namespace hark::core {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// docs:begin stalled
// "The partition's last message is older than N seconds": a stalled-producer alarm.
// Parameters: u64 N (seconds, little endian). Answer: u64 age of the last message in µs.
// Time alone makes it true, so it is time_dependent(): the owner evaluates it at each sweep
// (WaitShardOptions::sweep_interval), besides commits and offset changes.
class StalledProducer final : public Condition {
 public:
  Status check(std::span<const std::byte> params) const override {
    return params.size() == 8 ? ok_status() : Status(Error::invalid_format);
  }
  Verdict evaluate(const PartitionFacts& facts, const ConditionRequest& request,
                   std::span<std::byte, condition_answer_max> answer) const override {
    uint64_t seconds = 0;
    std::memcpy(&seconds, request.params.data(), sizeof seconds);
    const uint64_t age = facts.now - std::min(facts.now, facts.last_append_timestamp);
    // No producer yet, or one heard from lately. A commit only makes the partition younger,
    // so no commit can satisfy it: wake_at = UINT64_MAX spares commits evaluating it.
    if (facts.last_append_timestamp == 0 || age < seconds * 1'000'000) {
      return Verdict{.wake_at = UINT64_MAX};
    }
    std::memcpy(answer.data(), &age, sizeof age);
    return Verdict{.satisfied = true, .answer_size = sizeof age};
  }
  bool time_dependent() const override { return true; }
};
// docs:end

std::vector<std::byte> message(std::string_view payload) {
  std::vector<std::byte> bytes(message_layout::header_bytes + payload.size());
  store_u32(bytes, message_layout::payload_length, static_cast<uint32_t>(payload.size()));
  std::memcpy(bytes.data() + message_layout::header_bytes, payload.data(), payload.size());
  return bytes;
}

// A Notify submitted and cancelled from shard 0's thread, as a server does for a client that
// went away (Broker::cancel runs on the request's home shard only).
class ShardNotify final : public Notify {
 public:
  void done() override { finished.store(true); }
  // Posted to shard 0.
  struct Action final : io::Task {
    Action(ShardNotify& target, bool cancels) : notify(target), cancel(cancels) {}
    void run() override {
      if (cancel) {
        notify.broker->cancel(notify);
      } else {
        notify.broker->submit(notify);
      }
    }
    ShardNotify& notify;
    bool cancel;
  };
  Broker* broker = nullptr;
  Action submit{*this, false};
  Action cancel{*this, true};
  std::atomic<bool> finished{false};
};

// Keeps shard 0's reactor so a test can run work on it.
class Hooks final : public ShardHooks {
 public:
  Status on_start(Broker& broker, io::Reactor& reactor) override {
    (void)broker;
    if (reactor.id() == ShardId(0)) shard0 = &reactor;
    return ok_status();
  }
  void on_stop(io::Reactor& reactor) override { (void)reactor; }
  io::Reactor* shard0 = nullptr;
};

class NotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("hark_notify_test_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
    BrokerOptions options;
    options.data_directory = directory_.string();
    options.shards_count = 2;
    options.max_wait = 10s;
    options.hooks = &hooks_;
    options.waits.sweep_interval = 100ms;  // The stalled-producer example's clock.
    auto broker = Broker::start(options);
    ASSERT_TRUE(broker.ok()) << error_name(broker.error());
    broker_ = std::move(broker).value();
    Blocking<CreateStream> stream;
    stream.name = "orders";
    ASSERT_TRUE(stream.call(*broker_).ok());
    Blocking<CreateTopic> topic;
    topic.stream = NameOrId::id(0);
    topic.name = "events";
    topic.settings.partitions_count = 4;
    ASSERT_TRUE(topic.call(*broker_).ok());
  }

  void TearDown() override {
    if (broker_ != nullptr) broker_->stop();
    broker_.reset();
    std::filesystem::remove_all(directory_);
  }

  Status append(uint32_t partition, uint32_t count = 1) {
    for (uint32_t i = 0; i < count; i++) {
      const std::vector<std::byte> bytes = message("m");
      Blocking<Append> append;
      append.stream = NameOrId::id(0);
      append.topic = NameOrId::id(0);
      append.partitioning = Partitioning{Partitioning::Kind::partition, partition};
      append.messages = bytes;
      append.count = 1;
      HARK_TRY(append.call(*broker_));
    }
    return ok_status();
  }

  Status store(uint32_t partition, ConsumerRef consumer, uint64_t offset) {
    Blocking<StoreOffset> store;
    store.stream = NameOrId::id(0);
    store.topic = NameOrId::id(0);
    store.partition = partition;
    store.consumer = consumer;
    store.group = NameOrId::id(0);
    store.offset = offset;
    return store.call(*broker_);
  }

  Status forget(uint32_t partition, ConsumerRef consumer) {
    Blocking<DeleteOffset> forget;
    forget.stream = NameOrId::id(0);
    forget.topic = NameOrId::id(0);
    forget.partition = partition;
    forget.consumer = consumer;
    forget.group = NameOrId::id(0);
    return forget.call(*broker_);
  }

  Status group(std::initializer_list<uint32_t> members) {
    Blocking<CreateConsumerGroup> create;
    create.stream = NameOrId::id(0);
    create.topic = NameOrId::id(0);
    create.name = "workers";
    HARK_TRY(create.call(*broker_));
    for (const uint32_t member : members) HARK_TRY(membership<JoinConsumerGroup>(member));
    return ok_status();
  }

  template <typename Op>
  Status membership(uint32_t member) {
    Blocking<Op> op;
    op.stream = NameOrId::id(0);
    op.topic = NameOrId::id(0);
    op.group = NameOrId::id(0);
    op.member = member;
    return op.call(*broker_);
  }

  static void address(Notify& notify, std::optional<uint32_t> partition, uint32_t consumer,
                      Duration wait) {
    notify.stream = NameOrId::id(0);
    notify.topic = NameOrId::id(0);
    notify.partition = partition;
    notify.consumer = ConsumerRef{ConsumerRef::Kind::consumer, consumer};
    notify.wait = wait;
  }

  static void address_member(Notify& notify, uint32_t member, Duration wait) {
    address(notify, std::nullopt, 0, wait);
    notify.consumer.kind = ConsumerRef::Kind::group;
    notify.group = NameOrId::id(0);
    notify.member = member;
  }

  // Runs `notify` on another thread; the test acts once it is parked.
  std::future<Status> start(Blocking<Notify>& notify) {
    return std::async(std::launch::async, [&] { return notify.call(*broker_); });
  }

  bool parked(uint64_t count) { return test::wait_until_parked(*broker_, count); }
  BrokerStats stats() { return test::broker_stats(*broker_); }

  // Waits until the home of a condition over a total has judged `count` lag changes in all.
  bool reported(uint64_t count) {
    return test::wait_for_stats(
        *broker_, [count](const BrokerStats& s) { return s.waits.condition_reports >= count; });
  }

  // A future still unanswered once `parked(1)` held and an event was fully applied (an
  // Append or a StoreOffset is answered after the settle that follows it).
  static bool unanswered(std::future<Status>& answer) {
    return answer.wait_for(0s) == std::future_status::timeout;
  }

  std::filesystem::path directory_;
  Hooks hooks_;
  std::unique_ptr<Broker> broker_;
};

TEST_F(NotifyTest, MessagesAlreadyReadableAreAnsweredAtOnceForEveryPartitionThatHasThem) {
  ASSERT_TRUE(append(0).ok());
  ASSERT_TRUE(append(2, 2).ok());
  Blocking<Notify> notify;
  address(notify, std::nullopt, 1, 5s);
  wait_for_messages(notify, MessagesParams{.min_messages = 1});
  ASSERT_TRUE(notify.call(*broker_).ok());
  ASSERT_EQ(notify.answers.size(), 2u);
  const auto first = messages_ready(notify.answers[0]);
  const auto second = messages_ready(notify.answers[1]);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->partition_id, 0u);
  EXPECT_EQ(first->first_readable, 0u);
  EXPECT_EQ(first->next_offset, 1u);
  EXPECT_EQ(second->partition_id, 2u);
  EXPECT_EQ(second->next_offset, 2u);
  EXPECT_EQ(stats().waits.parked, 0u);  // Never parked.
}

TEST_F(NotifyTest, AnAppendWakesAParkedWaitForMessagesAndCommitsBelowItsThresholdEvaluateNothing) {
  Blocking<Notify> notify;
  address(notify, std::nullopt, 1, 10s);
  wait_for_messages(notify, MessagesParams{.min_messages = 2});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));
  const uint64_t evaluated = stats().waits.conditions_evaluated;
  ASSERT_TRUE(append(1).ok());  // One message: below the threshold of 2.
  EXPECT_TRUE(unanswered(answer));
  EXPECT_EQ(stats().waits.conditions_evaluated, evaluated) << "a commit below wake_at evaluated";
  ASSERT_TRUE(append(1).ok());
  ASSERT_TRUE(answer.get().ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  const auto ready = messages_ready(notify.answers[0]);
  ASSERT_TRUE(ready.has_value());
  EXPECT_EQ(ready->partition_id, 1u);
  EXPECT_EQ(ready->first_readable, 0u);
  EXPECT_EQ(ready->next_offset, 2u);
  EXPECT_EQ(stats().waits.conditions_evaluated, evaluated + 1);  // Once, by the winning commit.
}

TEST_F(NotifyTest, AWaitForMessagesPastTheConsumersStoredOffsetIgnoresWhatItAlreadyRead) {
  ASSERT_TRUE(append(3, 3).ok());
  const ConsumerRef consumer{ConsumerRef::Kind::consumer, 5};
  ASSERT_TRUE(store(3, consumer, 2).ok());  // Read up to 2: nothing readable.
  Blocking<Notify> notify;
  address(notify, 3, 5, 10s);
  wait_for_messages(notify, MessagesParams{.min_messages = 1});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(append(3).ok());
  ASSERT_TRUE(answer.get().ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  EXPECT_EQ(messages_ready(notify.answers[0])->first_readable, 3u);
  EXPECT_EQ(messages_ready(notify.answers[0])->next_offset, 4u);
}

TEST_F(NotifyTest, ADeleteOffsetWakesAWaitForMessages) {
  ASSERT_TRUE(append(0, 3).ok());
  const ConsumerRef consumer{ConsumerRef::Kind::consumer, 9};
  ASSERT_TRUE(store(0, consumer, 2).ok());
  Blocking<Notify> notify;
  address(notify, 0, 9, 10s);
  wait_for_messages(notify, MessagesParams{.min_messages = 2});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(forget(0, consumer).ok());  // Reads from 0 again: 3 readable.
  ASSERT_TRUE(answer.get().ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  EXPECT_EQ(messages_ready(notify.answers[0])->first_readable, 0u);
  EXPECT_EQ(messages_ready(notify.answers[0])->next_offset, 3u);
}

TEST_F(NotifyTest, ABelowLagWatchIsFiredByAStoreOffset) {
  ASSERT_TRUE(append(3, 5).ok());
  const ConsumerRef consumer{ConsumerRef::Kind::consumer, 7};
  Blocking<Notify> notify;
  address(notify, 3, 7, 10s);
  wait_for_lag(notify, LagParams{.direction = LagParams::Direction::below, .threshold = 1});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));  // Lag 5.
  const uint64_t evaluated = stats().waits.conditions_evaluated;
  ASSERT_TRUE(append(3).ok());  // Lag 6: measured once and sent home.
  EXPECT_EQ(stats().waits.conditions_evaluated, evaluated + 1);
  ASSERT_TRUE(reported(1));
  ASSERT_TRUE(store(3, consumer, 1).ok());  // Lag 4: still above 1.
  EXPECT_EQ(stats().waits.conditions_evaluated, evaluated + 2);
  ASSERT_TRUE(reported(2));  // Judged at home.
  EXPECT_TRUE(unanswered(answer));
  ASSERT_TRUE(store(3, consumer, 4).ok());  // Lag 1.
  ASSERT_TRUE(answer.get().ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  const auto lag = partition_lag(notify.answers[0]);
  ASSERT_TRUE(lag.has_value());
  EXPECT_EQ(lag->partition_id, 3u);
  EXPECT_EQ(lag->next_offset, 6u);
  EXPECT_EQ(lag->stored, std::optional<uint64_t>(4));
  EXPECT_EQ(lag->lag, 1u);
  EXPECT_EQ(notify.total, std::optional<uint64_t>(1));
}

TEST_F(NotifyTest, AnAboveLagWatchIsFiredByTheAppendThatCrossesIt) {
  Blocking<Notify> notify;
  address(notify, 1, 2, 10s);
  wait_for_lag(notify, LagParams{.direction = LagParams::Direction::above, .threshold = 3});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(append(1).ok());
  ASSERT_TRUE(reported(1));  // Lag 1, judged at home (each report waited for, so none merge).
  ASSERT_TRUE(append(1).ok());
  ASSERT_TRUE(reported(2));  // Lag 2.
  EXPECT_TRUE(unanswered(answer));
  ASSERT_TRUE(append(1).ok());
  ASSERT_TRUE(answer.get().ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  const auto lag = partition_lag(notify.answers[0]);
  EXPECT_EQ(lag->lag, 3u);
  EXPECT_EQ(lag->stored, std::nullopt);
}

TEST_F(NotifyTest, TheTotalLagSumsPartitionsOwnedByDifferentShards) {
  // Two partitions with different owners, from where the broker put their appends.
  std::optional<uint32_t> first_owner;
  std::vector<uint32_t> apart;
  for (uint32_t partition = 0; partition < 4 && apart.size() < 2; partition++) {
    const std::vector<std::byte> bytes = message("m");
    Blocking<Append> probe;
    probe.stream = NameOrId::id(0);
    probe.topic = NameOrId::id(0);
    probe.partitioning = Partitioning{Partitioning::Kind::partition, partition};
    probe.messages = bytes;
    probe.count = 1;
    ASSERT_TRUE(probe.call(*broker_).ok());
    if (apart.empty() || probe.owner_shard->value() != *first_owner) {
      if (apart.empty()) first_owner = probe.owner_shard->value();
      apart.push_back(partition);
    }
  }
  ASSERT_EQ(apart.size(), 2u) << "every partition on one shard";
  // The consumer has read everything so far: total lag 0 over the topic.
  const ConsumerRef consumer{ConsumerRef::Kind::consumer, 4};
  for (uint32_t partition = 0; partition <= apart[1]; partition++) {
    ASSERT_TRUE(store(partition, consumer, 0).ok());  // The partitions the probes wrote to.
  }
  Blocking<Notify> notify;
  address(notify, std::nullopt, 4, 10s);
  wait_for_lag(notify, LagParams{.direction = LagParams::Direction::above, .threshold = 3});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(append(apart[0]).ok());
  ASSERT_TRUE(reported(1));
  ASSERT_TRUE(append(apart[0]).ok());  // Total 2: no partition alone will reach 3.
  ASSERT_TRUE(reported(2));
  EXPECT_TRUE(unanswered(answer));
  ASSERT_TRUE(append(apart[1]).ok());  // Total 3, on another shard.
  ASSERT_TRUE(answer.get().ok());
  EXPECT_EQ(notify.total, std::optional<uint64_t>(3));
  ASSERT_EQ(notify.answers.size(), 4u);  // Every partition, with its lag.
  uint64_t sum = 0;
  for (const NotifyAnswer& each : notify.answers) sum += partition_lag(each)->lag;
  EXPECT_EQ(sum, 3u);
}

TEST_F(NotifyTest, ACommitWithNoConditionWaitersEvaluatesNoCondition) {
  Blocking<Poll> poll;  // A parked poll is a waiter, but not a condition waiter.
  poll.stream = NameOrId::id(0);
  poll.topic = NameOrId::id(0);
  poll.partition = 0;
  poll.from = PollFrom::offset;
  poll.value = 5;
  poll.wait = 10s;
  auto polled = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(parked(1));
  for (uint32_t partition = 0; partition < 4; partition++) ASSERT_TRUE(append(partition, 2).ok());
  ASSERT_TRUE(store(0, ConsumerRef{ConsumerRef::Kind::consumer, 1}, 1).ok());
  EXPECT_EQ(stats().waits.conditions_evaluated, 0u);
  ASSERT_TRUE(append(0, 4).ok());
  ASSERT_TRUE(polled.get().ok());
  EXPECT_EQ(stats().waits.conditions_evaluated, 0u);
}

TEST_F(NotifyTest, ADeadlineAnswersWithNoAnswers) {
  Blocking<Notify> notify;
  address(notify, 0, 1, 200ms);
  wait_for_messages(notify, MessagesParams{});
  const auto began = SteadyClock::now();
  ASSERT_TRUE(notify.call(*broker_).ok());
  EXPECT_TRUE(notify.answers.empty());
  EXPECT_GE(SteadyClock::now() - began, 200ms);
  EXPECT_EQ(stats().waits.timed_out, 1u);
}

TEST_F(NotifyTest, ACancelledNotifyEndsDisconnectedAndAppendsAfterItAnswerNothing) {
  ASSERT_NE(hooks_.shard0, nullptr);
  ShardNotify notify;
  notify.broker = broker_.get();
  address(notify, 2, 1, 10s);
  wait_for_messages(notify, MessagesParams{});
  hooks_.shard0->post_from_outside(notify.submit);
  ASSERT_TRUE(parked(1));
  hooks_.shard0->post_from_outside(notify.cancel);
  ASSERT_TRUE(test::wait_until([&] { return notify.finished.load(); }));
  EXPECT_EQ(notify.status().error(), Error::disconnected);
  ASSERT_TRUE(append(2).ok());
  const BrokerStats seen = stats();
  EXPECT_EQ(seen.waits.cancelled, 1u);
  EXPECT_EQ(seen.waits.woken, 0u);
  EXPECT_EQ(seen.waits.parked_now, 0u);
}

TEST_F(NotifyTest, PurgeAnswersEmptyAndDeleteWithTheError) {
  Blocking<Notify> purged;
  address(purged, 0, 1, 10s);
  wait_for_lag(purged, LagParams{.direction = LagParams::Direction::above, .threshold = 10});
  auto purged_answer = start(purged);
  ASSERT_TRUE(parked(1));
  Blocking<PurgeTopic> purge;
  purge.stream = NameOrId::id(0);
  purge.topic = NameOrId::id(0);
  ASSERT_TRUE(purge.call(*broker_).ok());
  ASSERT_TRUE(purged_answer.get().ok());
  EXPECT_TRUE(purged.answers.empty());

  Blocking<Notify> deleted;
  address(deleted, 1, 1, 10s);
  wait_for_messages(deleted, MessagesParams{});
  auto deleted_answer = start(deleted);
  ASSERT_TRUE(parked(1));
  Blocking<DeleteTopic> remove;
  remove.stream = NameOrId::id(0);
  remove.topic = NameOrId::id(0);
  ASSERT_TRUE(remove.call(*broker_).ok());
  EXPECT_EQ(deleted_answer.get().error(), Error::topic_id_not_found);
}

TEST_F(NotifyTest, ShutdownAnswersEmpty) {
  Blocking<Notify> notify;
  address(notify, std::nullopt, 1, 10s);
  wait_for_messages(notify, MessagesParams{});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));
  broker_->stop();
  ASSERT_TRUE(answer.get().ok());
  EXPECT_TRUE(notify.answers.empty());
}

TEST_F(NotifyTest, AWaitForMessagesFollowsItsMemberAcrossARebalance) {
  // Members 10 and 20: 10 has partitions 0 and 2, 20 has 1 and 3.
  ASSERT_TRUE(group({10, 20}).ok());
  Blocking<Notify> notify;
  address_member(notify, 20, 10s);
  wait_for_messages(notify, MessagesParams{});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(append(0).ok());  // Member 10's partition: not 20's business.
  EXPECT_TRUE(unanswered(answer));
  EXPECT_EQ(stats().waits.woken, 0u);
  // 10 leaves: 20 has every partition, and is evaluated again on them with its deadline.
  ASSERT_TRUE(membership<LeaveConsumerGroup>(10).ok());
  ASSERT_TRUE(answer.get().ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  EXPECT_EQ(messages_ready(notify.answers[0])->partition_id, 0u);
  EXPECT_EQ(stats().waits.cancelled, 1u);  // The old registrations, by the rebalance.
}

TEST_F(NotifyTest, AGroupLagWatchFollowsARebalanceAndCountsTheGroupsStoredOffset) {
  ASSERT_TRUE(group({10, 20}).ok());
  const ConsumerRef group_ref{ConsumerRef::Kind::group, 0};
  ASSERT_TRUE(append(0, 3).ok());
  ASSERT_TRUE(store(0, group_ref, 2).ok());  // The group has read partition 0: lag 0.
  Blocking<Notify> notify;
  address_member(notify, 20, 10s);
  wait_for_lag(notify, LagParams{.direction = LagParams::Direction::above, .threshold = 2});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(membership<LeaveConsumerGroup>(10).ok());  // 20 now watches partition 0 too.
  ASSERT_TRUE(parked(1));                                // Lag 0 there: parked again.
  ASSERT_TRUE(append(0).ok());                           // Total 1.
  ASSERT_TRUE(reported(1));
  EXPECT_TRUE(unanswered(answer));
  ASSERT_TRUE(append(0).ok());  // Total 2.
  ASSERT_TRUE(answer.get().ok());
  EXPECT_EQ(notify.total, std::optional<uint64_t>(2));
  ASSERT_EQ(notify.answers.size(), 4u);  // The member's partitions: all four now.
  const auto lag = partition_lag(notify.answers[0]);
  EXPECT_EQ(lag->partition_id, 0u);
  EXPECT_EQ(lag->stored, std::optional<uint64_t>(2));
  EXPECT_EQ(lag->lag, 2u);
}

TEST_F(NotifyTest, AGroupWatcherThatHasNotJoinedWatchesTheTopicWithTheGroupsOffsets) {
  // Member 10 has partitions 0 and 2, 20 has 1 and 3; client 30 only watches the group.
  ASSERT_TRUE(group({10, 20}).ok());
  const ConsumerRef group_ref{ConsumerRef::Kind::group, 0};
  ASSERT_TRUE(append(0, 3).ok());
  ASSERT_TRUE(store(0, group_ref, 1).ok());  // The group's lag on partition 0: 1.
  ASSERT_TRUE(append(1, 1).ok());            // Nothing stored on 1: lag 1.
  Blocking<Notify> notify;
  address_member(notify, 30, 10s);
  wait_for_lag(notify, LagParams{.direction = LagParams::Direction::above, .threshold = 3});
  auto answer = start(notify);
  ASSERT_TRUE(parked(1));       // Total 2: not a 5008, and not only one member's partitions.
  ASSERT_TRUE(append(3).ok());  // Member 20's partition: the watcher sums it too.
  ASSERT_TRUE(answer.get().ok());
  EXPECT_EQ(notify.total, std::optional<uint64_t>(3));
  ASSERT_EQ(notify.answers.size(), 4u);  // Every partition of the topic.
  EXPECT_EQ(partition_lag(notify.answers[0])->stored, std::optional<uint64_t>(1));
  // A watcher of one partition reads the group's stored offset there.
  address_member(notify, 30, 0s);
  notify.partition = 0;
  wait_for_messages(notify, MessagesParams{});
  ASSERT_TRUE(notify.call(*broker_).ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  EXPECT_EQ(messages_ready(notify.answers[0])->first_readable, 2u);
}

TEST_F(NotifyTest, UnknownConditionsAndBadParametersAreRefusedWithACode) {
  Blocking<Notify> notify;
  address(notify, 0, 1, 1s);
  notify.condition = "no.such.condition";
  EXPECT_EQ(notify.call(*broker_).error(), Error::resource_not_found);
  wait_for_messages(notify, MessagesParams{.min_messages = 0});
  EXPECT_EQ(notify.call(*broker_).error(), Error::invalid_format);
  notify.params.assign(condition_params_max + 1, std::byte{0});
  EXPECT_EQ(notify.call(*broker_).error(), Error::invalid_format);
  wait_for_lag(notify, LagParams{});
  notify.params[0] = std::byte{7};  // Neither above nor below.
  EXPECT_EQ(notify.call(*broker_).error(), Error::invalid_format);
  const StalledProducer stalled;
  EXPECT_EQ(broker_->register_condition(messages_condition, stalled).error(),
            Error::invalid_configuration);
  EXPECT_EQ(broker_->register_condition("", stalled).error(), Error::invalid_configuration);
}

TEST_F(NotifyTest, AShardOutOfConditionWaitersAnswersFeatureUnavailable) {
  broker_->stop();
  broker_.reset();
  BrokerOptions options;
  options.data_directory = directory_.string();
  options.shards_count = 1;
  options.waits.conditions_max = 3;  // Fewer than the topic's four partitions.
  auto broker = Broker::start(options);
  ASSERT_TRUE(broker.ok()) << error_name(broker.error());
  broker_ = std::move(broker).value();
  Blocking<Notify> notify;
  address(notify, std::nullopt, 1, 10s);
  wait_for_messages(notify, MessagesParams{});
  EXPECT_EQ(notify.call(*broker_).error(), Error::feature_unavailable);
  EXPECT_EQ(stats().waits.rejected_full, 1u);
  address(notify, 0, 1, 50ms);  // One partition fits.
  EXPECT_TRUE(notify.call(*broker_).ok());
  EXPECT_EQ(stats().waits.timed_out, 1u);
}

TEST_F(NotifyTest, AConditionRegisteredBeforeStartIsServedAndAnswersAtOnceWhenItHolds) {
  static const StalledProducer stalled;  // Outlives the broker, as it must.
  broker_->stop();
  broker_.reset();
  BrokerOptions options;
  options.data_directory = directory_.string();
  options.shards_count = 2;
  options.conditions = {{"example.stalled", &stalled}};
  auto broker = Broker::start(options);
  ASSERT_TRUE(broker.ok()) << error_name(broker.error());
  broker_ = std::move(broker).value();
  ASSERT_TRUE(append(2).ok());
  Blocking<Notify> notify;
  address(notify, 2, 1, 10s);
  notify.condition = "example.stalled";
  notify.params.assign(8, std::byte{0});  // Silent for 0 s: holds now.
  ASSERT_TRUE(notify.call(*broker_).ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  EXPECT_EQ(notify.answers[0].size, 8u);
  EXPECT_EQ(stats().waits.parked, 0u);
}

TEST_F(NotifyTest, AnEmbeddersConditionRegisteredAfterStartFiresOnTheSweep) {
  const StalledProducer stalled;
  ASSERT_TRUE(broker_->register_condition("example.stalled", stalled).ok());
  ASSERT_TRUE(append(2).ok());
  // docs:begin notify
  Blocking<Notify> notify;
  notify.stream = NameOrId::id(0);
  notify.topic = NameOrId::id(0);
  notify.partition = 2;
  notify.condition = "example.stalled";
  const uint64_t seconds = 1;
  notify.params.resize(sizeof seconds);
  std::memcpy(notify.params.data(), &seconds, sizeof seconds);
  notify.wait = std::chrono::seconds(10);
  Status status = notify.call(*broker_);  // Blocks until partition 2 is silent for 1 s.
  // docs:end
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(notify.answers.size(), 1u);
  uint64_t age = 0;
  ASSERT_EQ(notify.answers[0].size, sizeof age);
  std::memcpy(&age, notify.answers[0].bytes.data(), sizeof age);
  EXPECT_GE(age, 1'000'000u);
  EXPECT_EQ(notify.answers[0].partition_id, 2u);
}

TEST(NotifyDocs, DocsQuoteTheExampleConditionVerbatim) {
  test::expect_docs_quote(HARK_SOURCE_DIR "/tests/core/notify_test.cc",
                          HARK_SOURCE_DIR "/docs/notifications.md", 2);
}

}  // namespace
}  // namespace hark::core
