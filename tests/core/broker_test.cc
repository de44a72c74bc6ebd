// The Broker through its public API, from threads outside the broker (Blocking<Op>): catalog
// commands, appends, polls that answer at once, park, wake, time out, or are ended by purge,
// delete and shutdown; a purge journaled and replayed; a broker that opens only the partitions
// it is told to host (BrokerOptions::hosted_only, a cluster node). Two shards, so every partition
// operation crosses shards for one of the two homes involved.
#include "hark/core/broker/broker.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/core/broker/blocking.h"
#include "hark/tests/support/broker_waits.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// One message in Iggy's format, as a client sends it: a zero header with the payload length.
std::vector<std::byte> message(std::string_view payload) {
  std::vector<std::byte> bytes(message_layout::header_bytes + payload.size());
  store_u32(bytes, message_layout::payload_length, static_cast<uint32_t>(payload.size()));
  std::memcpy(bytes.data() + message_layout::header_bytes, payload.data(), payload.size());
  return bytes;
}

std::string payload_of(const storage::ReadView& view) {
  const auto bytes = view.bytes();
  const uint32_t length = load_u32(bytes, message_layout::payload_length);
  return std::string(reinterpret_cast<const char*>(bytes.data()) + message_layout::header_bytes,
                     length);
}

class BrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("hark_broker_test_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
    BrokerOptions options;
    options.data_directory = directory_.string();
    options.shards_count = 2;
    options.max_wait = 5s;
    auto broker = Broker::start(options);
    ASSERT_TRUE(broker.ok()) << error_name(broker.error());
    broker_ = std::move(broker).value();

    Blocking<CreateStream> stream;
    stream.name = "orders";
    ASSERT_TRUE(stream.call(*broker_).ok());
    Blocking<CreateTopic> topic;
    topic.stream = NameOrId::id(stream.stream.id);
    topic.name = "events";
    topic.settings.partitions_count = 4;
    ASSERT_TRUE(topic.call(*broker_).ok());
    ASSERT_EQ(topic.topic.partitions.size(), 4u);
  }

  // Waits until `count` polls are parked: the signal before asserting one is still waiting.
  bool parked(uint64_t count) { return test::wait_until_parked(*broker_, count); }

  // Stops the broker and starts a new one on the same data directory.
  void restart(storage::Durability durability = storage::Durability::write) {
    if (broker_ != nullptr) broker_->stop();
    broker_.reset();
    BrokerOptions options;
    options.data_directory = directory_.string();
    options.shards_count = 2;
    options.log.durability = durability;
    auto broker = Broker::start(options);
    ASSERT_TRUE(broker.ok()) << error_name(broker.error());
    broker_ = std::move(broker).value();
  }

  void TearDown() override {
    if (broker_ != nullptr) broker_->stop();
    broker_.reset();
    std::filesystem::remove_all(directory_);
  }

  Status append(uint32_t partition, std::string_view payload) {
    const std::vector<std::byte> bytes = message(payload);
    Blocking<Append> append;
    append.stream = NameOrId::id(0);
    append.topic = NameOrId::id(0);
    append.partitioning = Partitioning{Partitioning::Kind::partition, partition};
    append.messages = bytes;
    append.count = 1;
    return append.call(*broker_);
  }

  // A poll of partition `partition` from `offset`, waiting up to `wait`.
  static void prepare(Poll& poll, uint32_t partition, uint64_t offset, Duration wait) {
    poll.stream = NameOrId::id(0);
    poll.topic = NameOrId::id(0);
    poll.partition = partition;
    poll.from = PollFrom::offset;
    poll.value = offset;
    poll.count = 10;
    poll.wait = wait;
  }

  std::filesystem::path directory_;
  std::unique_ptr<Broker> broker_;
};

TEST_F(BrokerTest, CatalogCommandsAreSeenAtOnceAndCheckNames) {
  Blocking<GetStream> get;
  get.stream = NameOrId::name("orders").value();
  ASSERT_TRUE(get.call(*broker_).ok());
  ASSERT_TRUE(get.result.has_value());
  EXPECT_EQ(get.result->stream.id, 0u);
  EXPECT_EQ(get.result->topics.size(), 1u);

  Blocking<CreateStream> again;
  again.name = "orders";
  EXPECT_EQ(again.call(*broker_).error(), Error::stream_name_already_exists);

  Blocking<GetTopic> topic;
  topic.stream = NameOrId::id(7);
  topic.topic = NameOrId::id(0);
  EXPECT_EQ(topic.call(*broker_).error(), Error::stream_id_not_found);
  topic.stream = NameOrId::id(0);
  topic.topic = NameOrId::name("nope").value();
  ASSERT_TRUE(topic.call(*broker_).ok());
  EXPECT_FALSE(topic.result.has_value());
}

TEST_F(BrokerTest, DataAlreadyPresentIsAnsweredAtOnce) {
  ASSERT_TRUE(append(1, "first").ok());
  Blocking<Poll> poll;
  prepare(poll, 1, 0, 3s);
  const auto started = SteadyClock::now();
  ASSERT_TRUE(poll.call(*broker_).ok());
  EXPECT_LT(SteadyClock::now() - started, 1s);
  ASSERT_EQ(poll.result.messages.count(), 1u);
  EXPECT_EQ(payload_of(poll.result.messages), "first");
  EXPECT_EQ(poll.result.partition_id, 1u);
}

TEST_F(BrokerTest, ParkedPollIsWokenByAnAppendOnEveryPartition) {
  // Partitions 0..3 are spread over both shards; the poll's home is shard 0.
  for (uint32_t partition = 0; partition < 4; partition++) {
    Blocking<Poll> poll;
    prepare(poll, partition, 0, 4s);
    std::atomic<bool> answered{false};
    std::thread poller([&] {
      ASSERT_TRUE(poll.call(*broker_).ok());
      answered = true;
    });
    EXPECT_TRUE(parked(1));  // Parked; then it must still be waiting.
    EXPECT_FALSE(answered.load());
    const auto sent = SteadyClock::now();
    ASSERT_TRUE(append(partition, "wake").ok());
    poller.join();
    EXPECT_LT(SteadyClock::now() - sent, 1s);
    ASSERT_EQ(poll.result.messages.count(), 1u) << "partition " << partition;
    EXPECT_EQ(payload_of(poll.result.messages), "wake");
  }
}

// Issue #8: under `always` an Append is answered, and parked polls are woken, from the commit
// that follows the fdatasync (the storage tests check that order at the disk seam). Here: the
// wiring — concurrent appends to one partition are all answered and all readable in each
// producer's order, and a parked poll is woken by them.
TEST_F(BrokerTest, UnderAlwaysAppendsAreAnsweredAndWakeParkedPollsOnceCommitted) {
  restart(storage::Durability::always);
  Blocking<Poll> poll;
  prepare(poll, 3, 0, 4s);
  auto waiting = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(parked(1));  // So the appends below must wake it.
  constexpr int producers = 4;
  constexpr int appends = 20;
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; p++) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < appends; i++) {
        EXPECT_TRUE(append(3, "p" + std::to_string(p) + "-" + std::to_string(i)).ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(waiting.get().ok());
  ASSERT_GE(poll.result.messages.count(), 1u);
  std::vector<int> next(producers, 0);
  for (uint64_t offset = 0; offset < uint64_t{producers} * appends; offset++) {
    Blocking<Poll> read;
    prepare(read, 3, offset, Duration(0));
    read.count = 1;
    ASSERT_TRUE(read.call(*broker_).ok());
    ASSERT_EQ(read.result.messages.count(), 1u) << "offset " << offset;
    int p = -1;
    int i = -1;
    ASSERT_EQ(std::sscanf(payload_of(read.result.messages).c_str(), "p%d-%d", &p, &i), 2);
    EXPECT_EQ(i, next[static_cast<size_t>(p)]++) << "a producer's appends out of order";
  }
}

TEST_F(BrokerTest, TimeoutAnswersEmptyAtTheDeadline) {
  ASSERT_TRUE(append(2, "a").ok());
  Blocking<Poll> poll;
  prepare(poll, 2, 1, 200ms);  // Past the end: parks.
  const auto started = SteadyClock::now();
  ASSERT_TRUE(poll.call(*broker_).ok());
  const auto elapsed = SteadyClock::now() - started;
  EXPECT_GE(elapsed, 200ms);
  EXPECT_LT(elapsed, 2s);
  EXPECT_TRUE(poll.result.messages.empty());
  EXPECT_EQ(poll.result.current_offset, 0u);  // One message, at offset 0.
  EXPECT_EQ(poll.result.partition_id, 2u);
}

TEST_F(BrokerTest, WokenPollThatFindsNothingReparksWithItsDeadline) {
  // Waits for messages stamped an hour from now: an append now wakes it (the offset it
  // watches is committed) but the evaluation finds nothing, so it parks again until the
  // original deadline.
  Blocking<Poll> poll;
  prepare(poll, 1, 0, 400ms);
  poll.from = PollFrom::timestamp;
  poll.value = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::system_clock::now().time_since_epoch() + 1h)
                                         .count());
  const auto started = SteadyClock::now();
  auto waiting = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(append(1, "too early").ok());
  ASSERT_TRUE(waiting.get().ok());
  const auto elapsed = SteadyClock::now() - started;
  EXPECT_TRUE(poll.result.messages.empty());
  EXPECT_GE(elapsed, 400ms);
  EXPECT_LT(elapsed, 2s);
  Blocking<GetStats> stats;
  ASSERT_TRUE(stats.call(*broker_).ok());
  EXPECT_EQ(stats.stats.reevaluated, 1u);
  EXPECT_EQ(stats.stats.reparked, 1u);
  EXPECT_EQ(stats.stats.waits.timed_out, 1u);
}

TEST_F(BrokerTest, CountZeroAndNoWaitAnswerAtOnce) {
  Blocking<Poll> poll;
  prepare(poll, 0, 0, 3s);
  poll.count = 0;
  const auto started = SteadyClock::now();
  ASSERT_TRUE(poll.call(*broker_).ok());
  prepare(poll, 0, 0, Duration(0));
  ASSERT_TRUE(poll.call(*broker_).ok());
  EXPECT_TRUE(poll.result.messages.empty());
  EXPECT_LT(SteadyClock::now() - started, 1s);
}

TEST_F(BrokerTest, PurgeAnswersParkedPollsEmptyAndDeleteWithTheError) {
  Blocking<Poll> purged;
  prepare(purged, 3, 0, 4s);
  Blocking<Poll> deleted;
  prepare(deleted, 0, 0, 4s);
  auto first = std::async(std::launch::async, [&] { return purged.call(*broker_); });
  ASSERT_TRUE(parked(1));
  Blocking<PurgeTopic> purge;
  purge.stream = NameOrId::id(0);
  purge.topic = NameOrId::id(0);
  const auto started = SteadyClock::now();
  ASSERT_TRUE(purge.call(*broker_).ok());
  ASSERT_TRUE(first.get().ok());
  EXPECT_TRUE(purged.result.messages.empty());
  EXPECT_LT(SteadyClock::now() - started, 1s);

  auto second = std::async(std::launch::async, [&] { return deleted.call(*broker_); });
  ASSERT_TRUE(parked(1));
  Blocking<DeleteStream> remove;
  remove.stream = NameOrId::id(0);
  ASSERT_TRUE(remove.call(*broker_).ok());
  EXPECT_EQ(second.get().error(), Error::stream_id_not_found);
  EXPECT_FALSE(std::filesystem::exists(directory_ / "streams" / "0"));
}

// A purge is journaled (docs/storage-format.md §Metadata log, kind 14) so that a cluster's
// nodes all apply it; replaying it at start changes nothing, so what came after it stays.
TEST_F(BrokerTest, APurgeIsJournaledAndARestartKeepsWhatCameAfterIt) {
  ASSERT_TRUE(append(1, "before").ok());
  Blocking<PurgeTopic> purge;
  purge.stream = NameOrId::id(0);
  purge.topic = NameOrId::id(0);
  ASSERT_TRUE(purge.call(*broker_).ok());
  ASSERT_TRUE(append(1, "after").ok());
  const auto journal_size = std::filesystem::file_size(directory_ / "metadata.log");
  Blocking<PurgeStream> purge_stream;
  purge_stream.stream = NameOrId::id(0);
  ASSERT_TRUE(purge_stream.call(*broker_).ok());
  EXPECT_GT(std::filesystem::file_size(directory_ / "metadata.log"), journal_size);
  ASSERT_TRUE(append(1, "last").ok());

  restart();

  Blocking<Poll> poll;
  prepare(poll, 1, 0, Duration(0));
  ASSERT_TRUE(poll.call(*broker_).ok());
  ASSERT_EQ(poll.result.messages.count(), 1u);
  EXPECT_EQ(payload_of(poll.result.messages), "last");
}

TEST_F(BrokerTest, NextContinuesAfterTheStoredOffset) {
  for (const char* payload : {"a", "b", "c"}) ASSERT_TRUE(append(0, payload).ok());
  Blocking<StoreOffset> store;
  store.stream = NameOrId::id(0);
  store.topic = NameOrId::id(0);
  store.consumer = ConsumerRef{ConsumerRef::Kind::consumer, 9};
  store.offset = 1;
  ASSERT_TRUE(store.call(*broker_).ok());
  store.offset = 3;  // Past the last offset.
  EXPECT_EQ(store.call(*broker_).error(), Error::invalid_offset);

  Blocking<Poll> poll;
  prepare(poll, 0, 0, Duration(0));
  poll.from = PollFrom::next;
  poll.consumer = store.consumer;
  ASSERT_TRUE(poll.call(*broker_).ok());
  ASSERT_EQ(poll.result.messages.count(), 1u);
  EXPECT_EQ(poll.result.messages.first(), Offset(2));

  Blocking<GetOffset> get;
  get.stream = NameOrId::id(0);
  get.topic = NameOrId::id(0);
  get.consumer = store.consumer;
  ASSERT_TRUE(get.call(*broker_).ok());
  EXPECT_EQ(get.stored, 1u);
  EXPECT_EQ(get.current_offset, 2u);
}

TEST_F(BrokerTest, ShutdownAnswersParkedPollsEmpty) {
  Blocking<Poll> poll;
  prepare(poll, 1, 0, 4s);
  auto waiting = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(parked(1));
  const auto started = SteadyClock::now();
  broker_->stop();
  ASSERT_TRUE(waiting.get().ok());
  EXPECT_TRUE(poll.result.messages.empty());
  EXPECT_LT(SteadyClock::now() - started, 2s);
}

TEST_F(BrokerTest, CountersSeeParksWakesAndTimeouts) {
  Blocking<Poll> poll;
  prepare(poll, 0, 0, 50ms);
  ASSERT_TRUE(poll.call(*broker_).ok());
  auto woken = std::async(std::launch::async, [&] {
    Blocking<Poll> waiting;
    prepare(waiting, 0, 0, 4s);
    return waiting.call(*broker_);
  });
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(append(0, "x").ok());
  ASSERT_TRUE(woken.get().ok());
  Blocking<GetStats> stats;
  ASSERT_TRUE(stats.call(*broker_).ok());
  EXPECT_EQ(stats.stats.waits.parked, 2u);
  EXPECT_EQ(stats.stats.waits.timed_out, 1u);
  EXPECT_EQ(stats.stats.waits.woken, 1u);
  EXPECT_EQ(stats.stats.waits.parked_now, 0u);
  // The owner read the new message and handed it back with the wake-up: no second look.
  EXPECT_EQ(stats.stats.reevaluated, 0u);
  EXPECT_EQ(stats.stats.reparked, 0u);
  EXPECT_EQ(stats.stats.partitions, 4u);
  EXPECT_EQ(stats.stats.messages_count, 1u);
}

TEST_F(BrokerTest, RestartKeepsCatalogMessagesAndOffsets) {
  for (const char* payload : {"a", "b", "c"}) ASSERT_TRUE(append(3, payload).ok());
  Blocking<StoreOffset> store;
  store.stream = NameOrId::id(0);
  store.topic = NameOrId::id(0);
  store.partition = 3;
  store.consumer = ConsumerRef{ConsumerRef::Kind::consumer, 4};
  store.offset = 1;
  ASSERT_TRUE(store.call(*broker_).ok());
  Blocking<CreateTopic> doomed;
  doomed.stream = NameOrId::id(0);
  doomed.name = "doomed";
  ASSERT_TRUE(doomed.call(*broker_).ok());
  Blocking<DeleteTopic> remove;
  remove.stream = NameOrId::id(0);
  remove.topic = NameOrId::name("doomed").value();
  ASSERT_TRUE(remove.call(*broker_).ok());

  restart();

  Blocking<GetStream> get;
  get.stream = NameOrId::name("orders").value();
  ASSERT_TRUE(get.call(*broker_).ok());
  ASSERT_TRUE(get.result.has_value());
  ASSERT_EQ(get.result->topics.size(), 1u);
  EXPECT_EQ(get.result->topics[0].name, "events");
  EXPECT_EQ(get.result->topics[0].settings.partitions_count, 4u);
  EXPECT_EQ(get.result->stream.messages_count, 3u);

  Blocking<Poll> poll;
  prepare(poll, 3, 0, Duration(0));
  poll.from = PollFrom::next;
  poll.consumer = store.consumer;
  ASSERT_TRUE(poll.call(*broker_).ok());
  ASSERT_EQ(poll.result.messages.count(), 1u);
  EXPECT_EQ(payload_of(poll.result.messages), "c");

  // Ids keep counting from where they were: the deleted topic's id is not reused.
  Blocking<CreateTopic> next;
  next.stream = NameOrId::id(0);
  next.name = "next";
  ASSERT_TRUE(next.call(*broker_).ok());
  EXPECT_EQ(next.topic.topic.id, 2u);
  Blocking<CreateStream> stream;
  stream.name = "second";
  ASSERT_TRUE(stream.call(*broker_).ok());
  EXPECT_EQ(stream.stream.id, 1u);
}

TEST_F(BrokerTest, PartitionsAreAddedAndDeletedAtTheEndAndUpdatesAreKept) {
  ASSERT_TRUE(append(0, "survives").ok());
  ASSERT_TRUE(append(3, "on the last partition").ok());
  Blocking<Poll> poll;
  prepare(poll, 3, 1, 4s);
  auto waiting = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(parked(1));
  Blocking<DeletePartitions> remove;
  remove.stream = NameOrId::id(0);
  remove.topic = NameOrId::id(0);
  remove.count = 2;
  ASSERT_TRUE(remove.call(*broker_).ok());
  EXPECT_EQ(waiting.get().error(), Error::partition_not_found);  // What a poll gets now.
  remove.count = 3;
  EXPECT_EQ(remove.call(*broker_).error(), Error::invalid_partitions_count);

  Blocking<CreatePartitions> add;
  add.stream = NameOrId::id(0);
  add.topic = NameOrId::id(0);
  add.count = 3;
  ASSERT_TRUE(add.call(*broker_).ok());
  Blocking<UpdateTopic> update;
  update.stream = NameOrId::id(0);
  update.topic = NameOrId::id(0);
  update.name = "renamed";
  update.settings.message_expiry_us = 60'000'000;
  ASSERT_TRUE(update.call(*broker_).ok());
  Blocking<UpdateStream> rename;
  rename.stream = NameOrId::id(0);
  rename.name = "orders-2";
  ASSERT_TRUE(rename.call(*broker_).ok());

  restart();
  Blocking<GetTopic> get;
  get.stream = NameOrId::name("orders-2").value();
  get.topic = NameOrId::name("renamed").value();
  ASSERT_TRUE(get.call(*broker_).ok());
  ASSERT_TRUE(get.result.has_value());
  EXPECT_EQ(get.result->partitions.size(), 5u);
  EXPECT_EQ(get.result->topic.settings.message_expiry_us, 60'000'000u);
  // Partition 3 is a new one: the old one's message went with it. Partition 0 kept its own.
  EXPECT_EQ(get.result->partitions[3].messages_count, 0u);
  EXPECT_EQ(get.result->partitions[0].messages_count, 1u);
}

class GroupTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    Blocking<CreateConsumerGroup> create;
    create.stream = NameOrId::id(0);
    create.topic = NameOrId::id(0);
    create.name = "workers";
    ASSERT_TRUE(create.call(*broker_).ok());
    for (const uint32_t member : {10u, 11u})
      ASSERT_TRUE(membership<JoinConsumerGroup>(member).ok());
  }

  template <typename Op>
  Status membership(uint32_t member) {
    Blocking<Op> op;
    op.stream = NameOrId::id(0);
    op.topic = NameOrId::id(0);
    op.group = NameOrId::name("workers").value();
    op.member = member;
    return op.call(*broker_);
  }

  static void prepare_member(Poll& poll, uint32_t member, Duration wait) {
    prepare(poll, 0, 0, wait);
    poll.partition.reset();
    poll.from = PollFrom::next;
    poll.consumer.kind = ConsumerRef::Kind::group;
    poll.group = NameOrId::id(0);
    poll.member = member;
  }
};

TEST_F(GroupTest, PartitionsAreDealtRoundRobinInJoinOrderAndGroupsSurviveRestart) {
  Blocking<GetConsumerGroup> get;
  get.stream = NameOrId::id(0);
  get.topic = NameOrId::id(0);
  get.group = NameOrId::id(0);
  ASSERT_TRUE(get.call(*broker_).ok());
  ASSERT_TRUE(get.result.has_value());
  ASSERT_EQ(get.result->members.size(), 2u);
  EXPECT_EQ(get.result->members[0].partitions, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(get.result->members[1].partitions, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(membership<LeaveConsumerGroup>(12).error(), Error::consumer_group_member_not_found);

  restart();
  ASSERT_TRUE(get.call(*broker_).ok());
  ASSERT_TRUE(get.result.has_value());
  EXPECT_EQ(get.result->group.name, "workers");
  EXPECT_TRUE(get.result->members.empty());  // Members are connections.
}

TEST_F(GroupTest, ParkedMemberWakesForItsPartitionsOnlyAndFollowsARebalance) {
  Blocking<Poll> poll;
  prepare_member(poll, 10, 4s);
  auto waiting = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(append(1, "for member 11").ok());
  // The append was answered after its commit was settled: had it woken the poll, the owner
  // would have counted it already.
  const BrokerStats after = test::broker_stats(*broker_);
  EXPECT_EQ(after.waits.woken, 0u);
  EXPECT_EQ(after.waits.parked_now, 1u);
  EXPECT_EQ(waiting.wait_for(0s), std::future_status::timeout);  // Not its partition.
  ASSERT_TRUE(append(2, "for member 10").ok());
  ASSERT_TRUE(waiting.get().ok());
  ASSERT_EQ(poll.result.messages.count(), 1u);
  EXPECT_EQ(payload_of(poll.result.messages), "for member 10");
  EXPECT_EQ(poll.result.partition_id, 2u);

  // Member 11 leaves while 10 is parked: 10 now has every partition and sees partition 3.
  prepare_member(poll, 10, 4s);
  poll.from = PollFrom::offset;
  poll.value = 1;  // Past what partitions 1 and 2 hold, so only a new message answers.
  auto again = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(parked(1));
  ASSERT_TRUE(membership<LeaveConsumerGroup>(11).ok());
  ASSERT_TRUE(append(3, "a").ok());
  ASSERT_TRUE(append(3, "b").ok());
  ASSERT_TRUE(again.get().ok());
  ASSERT_EQ(poll.result.messages.count(), 1u);
  EXPECT_EQ(payload_of(poll.result.messages), "b");
  EXPECT_EQ(poll.result.partition_id, 3u);
}

TEST_F(GroupTest, AParkedMemberFollowsPartitionsAddedToItsTopic) {
  ASSERT_TRUE(membership<LeaveConsumerGroup>(11).ok());  // 10 alone: all four partitions.
  Blocking<Poll> poll;
  prepare_member(poll, 10, 4s);
  auto waiting = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(parked(1));
  Blocking<CreatePartitions> add;
  add.stream = NameOrId::id(0);
  add.topic = NameOrId::id(0);
  add.count = 2;
  ASSERT_TRUE(add.call(*broker_).ok());  // Rebalances the parked member onto six.
  // The rebalance cancels its Wait and parks it again on the new assignment.
  EXPECT_TRUE(test::wait_for_stats(
      *broker_, [](const BrokerStats& s) { return s.reparked == 1 && s.waits.parked_now == 1; }));
  EXPECT_EQ(waiting.wait_for(0s), std::future_status::timeout);
  ASSERT_TRUE(append(5, "on a new partition").ok());
  ASSERT_TRUE(waiting.get().ok());
  ASSERT_EQ(poll.result.messages.count(), 1u);
  EXPECT_EQ(poll.result.partition_id, 5u);
}

TEST_F(GroupTest, AnImmediateMemberPollReadsOnlyTheCursorsPartition) {
  // Member 10 has partitions 0 and 2; only 2 has a message. Iggy 0.8.0 answers each
  // immediate poll from the next partition of the round robin, empty if that one is.
  ASSERT_TRUE(append(2, "on 2").ok());
  Blocking<Poll> poll;
  std::vector<uint32_t> partitions;
  std::vector<size_t> counts;
  for (int i = 0; i < 3; i++) {
    prepare_member(poll, 10, Duration(0));
    ASSERT_TRUE(poll.call(*broker_).ok());
    partitions.push_back(poll.result.partition_id);
    counts.push_back(poll.result.messages.count());
  }
  EXPECT_EQ(partitions, (std::vector<uint32_t>{0, 2, 0}));
  EXPECT_EQ(counts, (std::vector<size_t>{0, 1, 0}));
}

TEST_F(GroupTest, NonMembersAndUnknownGroupsAreRefused) {
  Blocking<Poll> poll;
  prepare_member(poll, 99, Duration(0));
  EXPECT_EQ(poll.call(*broker_).error(), Error::consumer_group_member_not_found);
  prepare_member(poll, 10, Duration(0));
  poll.group = NameOrId::name("nobody").value();
  EXPECT_EQ(poll.call(*broker_).error(), Error::consumer_group_name_not_found);
}

TEST_F(BrokerTest, FlushWritesAppendedMessagesNow) {
  ASSERT_TRUE(append(1, "durable").ok());
  Blocking<FlushUnsavedBuffer> flush;
  flush.stream = NameOrId::id(0);
  flush.topic = NameOrId::id(0);
  flush.partition = 1;
  flush.fsync = true;
  ASSERT_TRUE(flush.call(*broker_).ok());
  // On disk now, though the background writer's interval has not come (64-byte header +
  // "durable").
  const auto log = directory_ / "streams/0/topics/0/partitions/1/00000000000000000000.log";
  EXPECT_EQ(std::filesystem::file_size(log), 71u);
  flush.partition = 9;
  EXPECT_EQ(flush.call(*broker_).error(), Error::partition_not_found);
}

TEST_F(BrokerTest, TornLastMetadataRecordIsCutAndDamageBeforeTheEndRefusesToStart) {
  broker_->stop();
  broker_.reset();
  const auto log = directory_ / "metadata.log";
  const auto size = std::filesystem::file_size(log);
  // A crash in the middle of the last record's write: cut, the rest survives.
  std::filesystem::resize_file(log, size - 3);
  restart();
  Blocking<GetStreams> streams;
  ASSERT_TRUE(streams.call(*broker_).ok());
  ASSERT_EQ(streams.streams.size(), 1u);
  EXPECT_EQ(streams.streams[0].topics_count, 0u);  // The topic was the cut record.
  Blocking<CreateStream> second;
  second.name = "second";
  ASSERT_TRUE(second.call(*broker_).ok());

  broker_->stop();
  broker_.reset();
  // Damage in the first record, with a whole record after it: refuse to start.
  {
    std::fstream file(log, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(16 + 8 + 2);
    file.put('\x7f');
  }
  BrokerOptions options;
  options.data_directory = directory_.string();
  const auto broken = Broker::start(options);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error(), Error::state_file_corrupted);
}

// BrokerOptions::hosted_only (a cluster node): a partition opens only once Broker::host names
// it, on every shard; one no longer named is closed (its parked poll ends, its files stay).
// AppendStored (a move's copy, docs/cluster.md §Moves): partition 0's stored bytes copied into
// partition 1 read back identical (offsets, timestamps, ids), wake a poll parked on partition 1,
// a batch that does not start at the end is refused with 4100 and writes nothing, and a restart
// reads the copy from partition 1's own segments.
TEST_F(BrokerTest, AppendStoredCopiesStoredBytesAtTheirOffsets) {
  for (int i = 0; i < 5; i++) ASSERT_TRUE(append(0, "m" + std::to_string(i)).ok());
  Blocking<Poll> source;
  prepare(source, 0, 0, Duration(0));
  ASSERT_TRUE(source.call(*broker_).ok());
  const storage::ReadView& stored = source.result.messages;
  ASSERT_EQ(stored.count(), 5u);
  const std::vector<std::byte> bytes(stored.bytes().begin(), stored.bytes().end());

  Blocking<Poll> waiting;
  prepare(waiting, 1, 0, 4s);
  auto parked_poll = std::async(std::launch::async, [&] { return waiting.call(*broker_); });
  ASSERT_TRUE(parked(1));
  const auto copy = [&](std::span<const std::byte> batch, uint32_t count) {
    Blocking<AppendStored> op;
    op.stream = NameOrId::id(0);
    op.topic = NameOrId::id(0);
    op.partition = 1;
    op.messages = batch;
    op.count = count;
    return op.call(*broker_);
  };
  const size_t first_two = 2 * (message_layout::header_bytes + 2);
  ASSERT_TRUE(copy(std::span(bytes).first(first_two), 2).ok());
  ASSERT_TRUE(parked_poll.get().ok());
  EXPECT_EQ(waiting.result.messages.first(), Offset(0));
  // Offsets 3-4 would leave a gap after 0-1; 0-4 would overlap them.
  const size_t one = message_layout::header_bytes + 2;
  EXPECT_EQ(copy(std::span(bytes).subspan(3 * one), 2).error(), Error::invalid_offset);
  EXPECT_EQ(copy(bytes, 5).error(), Error::invalid_offset);
  ASSERT_TRUE(copy(std::span(bytes).subspan(first_two), 3).ok());

  restart();
  Blocking<Poll> copied;
  prepare(copied, 1, 0, Duration(0));
  ASSERT_TRUE(copied.call(*broker_).ok());
  ASSERT_EQ(copied.result.messages.count(), 5u);
  const std::span<const std::byte> read = copied.result.messages.bytes();
  EXPECT_TRUE(std::equal(read.begin(), read.end(), bytes.begin(), bytes.end()));
  EXPECT_EQ(copied.result.current_offset, 4u);
}

class HostedBrokerTest : public ::testing::Test, private ShardHooks {
 protected:
  void SetUp() override {
    directory_ =
        std::filesystem::temp_directory_path() / ("hark_hosted_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(directory_);
    BrokerOptions options;
    options.data_directory = directory_.string();
    options.shards_count = 2;
    options.hosted_only = true;
    options.hooks = this;
    auto broker = Broker::start(options);
    ASSERT_TRUE(broker.ok()) << error_name(broker.error());
    broker_ = std::move(broker).value();
    Blocking<CreateStream> stream;
    stream.name = "s";
    ASSERT_TRUE(stream.call(*broker_).ok());
    Blocking<CreateTopic> topic;
    topic.stream = NameOrId::id(0);
    topic.name = "t";
    topic.settings.partitions_count = 4;
    ASSERT_TRUE(topic.call(*broker_).ok());
  }

  void TearDown() override {
    broker_->stop();
    broker_.reset();
    std::filesystem::remove_all(directory_);
  }

  Status on_start(Broker& broker, io::Reactor& reactor) override {
    (void)broker;
    reactors_[reactor.id().value()] = &reactor;
    return ok_status();
  }
  void on_stop(io::Reactor& reactor) override { (void)reactor; }

  // Broker::host(partitions of topic 0/0) on every shard, from the shard's own thread.
  void host(std::vector<uint32_t> partitions, std::vector<uint32_t> moving_partitions = {}) {
    std::vector<PartitionKey> keys;
    for (const uint32_t p : partitions) {
      keys.push_back({StreamId(0), TopicId(0), PartitionId(p)});
    }
    std::vector<PartitionKey> moving;
    for (const uint32_t p : moving_partitions) {
      moving.push_back({StreamId(0), TopicId(0), PartitionId(p)});
    }
    struct HostTask final : io::Task {
      void run() override {
        status = broker->host(*keys, *moving);
        done.set_value();
      }
      Broker* broker = nullptr;
      const std::vector<PartitionKey>* keys = nullptr;
      const std::vector<PartitionKey>* moving = nullptr;
      Status status;
      std::promise<void> done;
    };
    for (io::Reactor* reactor : reactors_) {
      HostTask task;
      task.broker = broker_.get();
      task.keys = &keys;
      task.moving = &moving;
      reactor->post_from_outside(task);
      task.done.get_future().wait();
      ASSERT_TRUE(task.status.ok()) << error_name(task.status.error());
    }
  }

  Status append(uint32_t partition) {
    const std::vector<std::byte> bytes = message("m");
    Blocking<Append> append;
    append.stream = NameOrId::id(0);
    append.topic = NameOrId::id(0);
    append.partitioning = Partitioning{Partitioning::Kind::partition, partition};
    append.messages = bytes;
    append.count = 1;
    return append.call(*broker_);
  }

  bool opened(uint32_t partition) const {
    return std::filesystem::exists(directory_ / "streams/0/topics/0/partitions" /
                                   std::to_string(partition));
  }

  std::filesystem::path directory_;
  std::unique_ptr<Broker> broker_;
  std::array<io::Reactor*, 2> reactors_{};
};

TEST_F(HostedBrokerTest, OnlyHostedPartitionsOpenAndOneNoLongerHostedCloses) {
  for (uint32_t p = 0; p < 4; p++) EXPECT_FALSE(opened(p)) << p;
  // Not hosted here: the retryable "no reachable owner" code, never "not found".
  EXPECT_EQ(append(0).error(), Error::shard_communication_error);
  host({0, 1});
  EXPECT_TRUE(opened(0) && opened(1));
  EXPECT_FALSE(opened(2) || opened(3));
  ASSERT_TRUE(append(0).ok());
  ASSERT_TRUE(append(1).ok());
  EXPECT_EQ(append(2).error(), Error::shard_communication_error);
  // A partition created later opens nothing until it is hosted.
  Blocking<CreatePartitions> more;
  more.stream = NameOrId::id(0);
  more.topic = NameOrId::id(0);
  more.count = 1;
  ASSERT_TRUE(more.call(*broker_).ok());
  EXPECT_FALSE(opened(4));

  // Partition 1 stops being hosted while a poll is parked on it.
  Blocking<Poll> poll;
  poll.stream = NameOrId::id(0);
  poll.topic = NameOrId::id(0);
  poll.partition = 1;
  poll.from = PollFrom::offset;
  poll.value = 1;
  poll.count = 10;
  poll.wait = 4s;
  auto parked = std::async(std::launch::async, [&] { return poll.call(*broker_); });
  ASSERT_TRUE(test::wait_until_parked(*broker_, 1));
  host({0, 4});
  EXPECT_EQ(parked.get().error(), Error::shard_communication_error);
  EXPECT_TRUE(opened(1));  // Closed, not deleted.
  EXPECT_TRUE(opened(4));
  EXPECT_EQ(append(1).error(), Error::shard_communication_error);
  // Hosted again: its messages are still there.
  host({0, 1, 4});
  Blocking<Poll> again;
  again.stream = NameOrId::id(0);
  again.topic = NameOrId::id(0);
  again.partition = 1;
  again.from = PollFrom::offset;
  again.value = 0;
  again.count = 10;
  ASSERT_TRUE(again.call(*broker_).ok());
  EXPECT_EQ(again.result.messages.count(), 1u);
}

// A move's fence (FencePartition, docs/cluster.md §Moves): answered with the end and the stored
// offsets; an append after it is held (BrokerStats::held) while the partition is still moving,
// runs when the move goes away (host() without it), and is refused 11001 with nothing written
// when the partition leaves this node (the move committed).
TEST_F(HostedBrokerTest, AFenceHoldsAppendsUntilTheMoveIsAbandonedOrCommits) {
  host({0});
  ASSERT_TRUE(append(0).ok());
  ASSERT_TRUE(append(0).ok());
  Blocking<StoreOffset> store;
  store.stream = NameOrId::id(0);
  store.topic = NameOrId::id(0);
  store.consumer = ConsumerRef{ConsumerRef::Kind::consumer, 7};
  store.offset = 1;
  ASSERT_TRUE(store.call(*broker_).ok());
  const auto fence = [&](Blocking<FencePartition>& op) {
    op.stream = NameOrId::id(0);
    op.topic = NameOrId::id(0);
    op.partition = 0;
    EXPECT_TRUE(op.call(*broker_).ok());
  };
  const auto held = [&](uint64_t count) {
    return test::wait_for_stats(*broker_, [=](const BrokerStats& s) { return s.held == count; });
  };
  Blocking<FencePartition> first;
  fence(first);
  EXPECT_EQ(first.end, 2u);
  ASSERT_EQ(first.offsets.size(), 1u);
  EXPECT_EQ(first.offsets[0].first, store.consumer);
  EXPECT_EQ(first.offsets[0].second, 1u);

  auto abandoned = std::async(std::launch::async, [&] { return append(0); });
  ASSERT_TRUE(held(1));
  host({0}, {0});  // Still moving: still held.
  EXPECT_TRUE(held(1));
  host({0});  // The move went away: the fence is lifted and the append runs.
  EXPECT_TRUE(abandoned.get().ok());
  Blocking<FencePartition> second;
  fence(second);
  EXPECT_EQ(second.end, 3u);

  auto committed = std::async(std::launch::async, [&] { return append(0); });
  ASSERT_TRUE(held(1));
  host({});  // The move committed: the partition left this node.
  EXPECT_EQ(committed.get().error(), Error::shard_communication_error);
  EXPECT_TRUE(held(0));
  host({0});
  Blocking<Poll> poll;
  poll.stream = NameOrId::id(0);
  poll.topic = NameOrId::id(0);
  poll.partition = 0;
  poll.from = PollFrom::offset;
  poll.count = 10;
  ASSERT_TRUE(poll.call(*broker_).ok());
  EXPECT_EQ(poll.result.messages.count(), 3u);  // The refused append left nothing.
}

// An append that reaches a partition while it is leaving this node (Broker::host without it,
// the move committed) is refused like the ones its fence held: nothing is appended there. The
// close runs the shard's ring (the log drains its writes), so requests arrive meanwhile; here
// the held append's done() sends the next one at that very moment, as a client whose refused
// send is retried through the same node does.
TEST_F(HostedBrokerTest, AnAppendArrivingWhileAMovedPartitionClosesIsRefused) {
  host({0, 1, 2, 3});
  // A partition owned by shard 0, the home of appends submitted from outside: the held
  // append's done() then runs inside the close.
  uint32_t partition = 4;
  for (uint32_t p = 0; p < 4 && partition == 4; p++) {
    const std::vector<std::byte> bytes = message("first");
    Blocking<Append> first;
    first.stream = NameOrId::id(0);
    first.topic = NameOrId::id(0);
    first.partitioning = Partitioning{Partitioning::Kind::partition, p};
    first.messages = bytes;
    first.count = 1;
    ASSERT_TRUE(first.call(*broker_).ok());
    if (first.owner_shard == ShardId(0)) partition = p;
  }
  ASSERT_LT(partition, 4u);
  Blocking<FencePartition> fence;
  fence.stream = NameOrId::id(0);
  fence.topic = NameOrId::id(0);
  fence.partition = partition;
  ASSERT_TRUE(fence.call(*broker_).ok());

  const std::vector<std::byte> bytes = message("m");
  struct Next final : Append {
    void done() override { answered.set_value(status()); }
    std::promise<Status> answered;
  };
  struct Held final : Append {
    void done() override {
      broker->submit(*next);  // On the shard: it runs now, inside the close.
      answered.set_value(status());
    }
    Broker* broker = nullptr;
    Next* next = nullptr;
    std::promise<Status> answered;
  };
  Next next;
  Held held;
  for (Append* op : {static_cast<Append*>(&next), static_cast<Append*>(&held)}) {
    op->stream = NameOrId::id(0);
    op->topic = NameOrId::id(0);
    op->partitioning = Partitioning{Partitioning::Kind::partition, partition};
    op->messages = bytes;
    op->count = 1;
  }
  held.broker = broker_.get();
  held.next = &next;
  broker_->submit(held);
  ASSERT_TRUE(test::wait_for_stats(*broker_, [](const BrokerStats& s) { return s.held == 1; }));
  std::vector<uint32_t> others;
  for (uint32_t p = 0; p < 4; p++) {
    if (p != partition) others.push_back(p);
  }
  host(others);  // The move committed: the partition left this node.
  EXPECT_EQ(held.answered.get_future().get().error(), Error::shard_communication_error);
  const Status second = next.answered.get_future().get();
  EXPECT_EQ(second.ok() ? Error::ok : second.error(), Error::shard_communication_error);
  host({0, 1, 2, 3});
  Blocking<Poll> poll;
  poll.stream = NameOrId::id(0);
  poll.topic = NameOrId::id(0);
  poll.partition = partition;
  poll.from = PollFrom::offset;
  poll.count = 10;
  ASSERT_TRUE(poll.call(*broker_).ok());
  EXPECT_EQ(poll.result.messages.count(), 1u);  // Only the append before the fence.
}

}  // namespace
}  // namespace hark::core
