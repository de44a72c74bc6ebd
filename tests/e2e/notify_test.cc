// Covers harkd's notification commands (docs/wire.md §11, docs/notifications.md) end to end:
// WaitForMessages fired by a send, WaitForLag above fired by sends and below fired by a
// StoreOffset and by a poll's auto-commit, a timeout answered empty (status 0), the topic's read
// permission, a disconnect cancelling a parked notify, an unknown condition's code, a group
// member's watch re-evaluated when a second member joins, a group watcher that never joined,
// and purge and delete while parked. Every wait is on a harkd counter (the stats line), never on
// a sleep: a notify counts in parked_now while it waits.
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/protocol/notify_requests.h"
#include "hark/protocol/notify_responses.h"
#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

constexpr uint64_t long_wait_us = 30'000'000;

protocol::Consumer consumer(uint32_t id) {
  return {.kind = protocol::ConsumerKind::consumer, .id = Identifier::numeric(id)};
}

protocol::Consumer group_consumer() {
  return {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(0)};
}

protocol::WaitForMessagesRequest messages_request(protocol::Consumer who,
                                                  std::optional<uint32_t> partition,
                                                  uint64_t wait_us = long_wait_us) {
  return {.consumer = who,
          .stream_id = Identifier::numeric(0),
          .topic_id = Identifier::numeric(0),
          .partition_id = partition,
          .strategy = next_strategy(),
          .wait_timeout_us = wait_us,
          .min_messages = 1};
}

protocol::WaitForLagRequest lag_request(protocol::Consumer who, std::optional<uint32_t> partition,
                                        protocol::LagWatch watch, uint64_t threshold,
                                        uint64_t wait_us = long_wait_us) {
  return {.consumer = who,
          .stream_id = Identifier::numeric(0),
          .topic_id = Identifier::numeric(0),
          .partition_id = partition,
          .wait_timeout_us = wait_us,
          .watch = watch,
          .threshold = threshold};
}

bool unanswered(const auto& future) {
  return future.wait_for(std::chrono::seconds(0)) == std::future_status::timeout;
}

class Notify : public HarkdTest {
 protected:
  // Runs `call(client)` on a thread of its own with `client` (moved in), so the test can act
  // while the notify is parked.
  template <typename Call>
  auto start(std::unique_ptr<client::Client> client, Call call) {
    return std::async(std::launch::async,
                      [owned = std::move(client), call]() mutable { return call(*owned); });
  }

  auto wait_messages(std::unique_ptr<client::Client> client,
                     const protocol::WaitForMessagesRequest& request) {
    return start(std::move(client),
                 [request](client::Client& c) { return c.wait_for_messages(request); });
  }

  auto wait_lag(std::unique_ptr<client::Client> client,
                const protocol::WaitForLagRequest& request) {
    return start(std::move(client),
                 [request](client::Client& c) { return c.wait_for_lag(request); });
  }

  Status store(uint32_t consumer_id, uint32_t partition, uint64_t offset) {
    return admin_->store_consumer_offset({.consumer = consumer(consumer_id),
                                          .stream_id = Identifier::numeric(0),
                                          .topic_id = Identifier::numeric(0),
                                          .partition_id = partition,
                                          .offset = offset});
  }

  void create_group() {
    ASSERT_TRUE(admin_
                    ->create_consumer_group({.stream_id = Identifier::numeric(0),
                                             .topic_id = Identifier::numeric(0),
                                             .name = "workers"})
                    .ok());
  }

  Status join(client::Client& member) {
    return member.join_consumer_group({.stream_id = Identifier::numeric(0),
                                       .topic_id = Identifier::numeric(0),
                                       .group_id = Identifier::numeric(0)});
  }

  // The partitions harkd assigned to the member with client id `client_id`.
  std::vector<uint32_t> assigned(uint32_t client_id) {
    const auto group = admin_->get_consumer_group({.stream_id = Identifier::numeric(0),
                                                   .topic_id = Identifier::numeric(0),
                                                   .group_id = Identifier::numeric(0)});
    EXPECT_TRUE(group.ok() && group->has_value());
    if (!group.ok() || !group->has_value()) return {};
    for (const auto& member : (*group)->members) {
      if (member.id == client_id) return member.partitions;
    }
    return {};
  }
};

TEST_F(Notify, AWaitForMessagesIsFiredByASend) {
  create_stream_and_topic(2);
  auto answer = wait_messages(connect_client(), messages_request(consumer(7), 1));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_TRUE(send_text(0, "elsewhere").ok());
  EXPECT_TRUE(unanswered(answer)) << "a send to another partition fired it";
  ASSERT_TRUE(send_text(1, "here").ok());
  const auto ready = answer.get();
  ASSERT_TRUE(ready.ok()) << error_name(ready.error());
  ASSERT_EQ(ready->partitions.size(), 1u);
  EXPECT_EQ(ready->partitions[0],
            (protocol::ReadyPartition{.partition_id = 1, .first_offset = 0, .next_offset = 1}));
  // Nothing was consumed: a poll still reads the message.
  EXPECT_EQ(poll_now(poll_request(7, 1, next_strategy(), 10, 0us)).payloads,
            std::vector<std::string>{"here"});
}

TEST_F(Notify, AnAboveLagWatchIsFiredBySendsSummedOverTheTopic) {
  create_stream_and_topic(2);
  auto answer = wait_lag(connect_client(),
                         lag_request(consumer(7), std::nullopt, protocol::LagWatch::above, 2));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_TRUE(send_text(0, "a").ok());
  ASSERT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& s) { return s.condition_reports >= 1; }));
  EXPECT_TRUE(unanswered(answer)) << "fired at a total lag of 1";
  ASSERT_TRUE(send_text(1, "b").ok());
  const auto lag = answer.get();
  ASSERT_TRUE(lag.ok()) << error_name(lag.error());
  ASSERT_TRUE(lag->has_value());
  EXPECT_EQ((*lag)->total_lag, 2u);
  ASSERT_EQ((*lag)->partitions.size(), 2u);
  EXPECT_EQ((*lag)->partitions[0].lag, 1u);
  EXPECT_EQ((*lag)->partitions[0].stored_offset, std::nullopt);
}

TEST_F(Notify, ABelowLagWatchIsFiredByAStoreOffset) {
  create_stream_and_topic(1);
  for (const char* text : {"a", "b", "c"}) ASSERT_TRUE(send_text(0, text).ok());
  auto answer =
      wait_lag(connect_client(), lag_request(consumer(7), 0, protocol::LagWatch::below, 0));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_TRUE(store(7, 0, 1).ok());  // Lag 1.
  ASSERT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& s) { return s.condition_reports >= 1; }));
  EXPECT_TRUE(unanswered(answer)) << "fired at a lag of 1";
  ASSERT_TRUE(store(7, 0, 2).ok());  // Lag 0.
  const auto lag = answer.get();
  ASSERT_TRUE(lag.ok() && lag->has_value());
  EXPECT_EQ((*lag)->total_lag, 0u);
  ASSERT_EQ((*lag)->partitions.size(), 1u);
  EXPECT_EQ((*lag)->partitions[0].stored_offset, std::optional<uint64_t>(2));
  EXPECT_EQ((*lag)->partitions[0].next_offset, 3u);
}

TEST_F(Notify, ABelowLagWatchIsFiredByAPollsAutoCommit) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "a").ok());
  ASSERT_TRUE(send_text(0, "b").ok());
  auto answer =
      wait_lag(connect_client(), lag_request(consumer(7), 0, protocol::LagWatch::below, 0));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  RawConnection poller;
  ASSERT_TRUE(poller.connect_and_login(address()));
  const PollOutcome polled = poll_outcome(poller.exchange(
      request_frame(poll_request(7, 0, next_strategy(), 10, 0us, /*auto_commit=*/true))));
  EXPECT_EQ(polled.payloads, (std::vector<std::string>{"a", "b"}));
  // The auto-commit is stored before the next request is read.
  ASSERT_TRUE(poller.exchange(request_frame(protocol::PingRequest{})).has_value());
  const auto lag = answer.get();
  ASSERT_TRUE(lag.ok() && lag->has_value());
  EXPECT_EQ((*lag)->total_lag, 0u);
  EXPECT_EQ((*lag)->partitions[0].stored_offset, std::optional<uint64_t>(1));
}

TEST_F(Notify, ATimeoutAnswersEmptyWithStatusZero) {
  create_stream_and_topic(2);
  auto client = connect_client();
  const auto ready =
      client->wait_for_messages(messages_request(consumer(7), std::nullopt, 200'000));
  ASSERT_TRUE(ready.ok()) << error_name(ready.error());
  EXPECT_TRUE(ready->partitions.empty());
  const auto lag = client->wait_for_lag(
      lag_request(consumer(7), std::nullopt, protocol::LagWatch::above, 1, 200'000));
  ASSERT_TRUE(lag.ok()) << error_name(lag.error());
  EXPECT_FALSE(lag->has_value());
  const HarkdStats stats = harkd_stats();
  EXPECT_EQ(stats.timed_out, 2u) << stats;
  EXPECT_EQ(stats.parked_now, 0u) << stats;
}

TEST_F(Notify, AUserWithoutReadPermissionGetsUnauthorized) {
  create_stream_and_topic(1);
  protocol::Permissions permissions;
  permissions.global.send_messages = true;  // May send, may not read.
  ASSERT_NE(create_user("writer", permissions), UINT32_MAX);
  client::Client writer;
  ASSERT_TRUE(writer.connect(address()).ok());
  ASSERT_TRUE(writer.login("writer", "secret").ok());
  EXPECT_EQ(writer.wait_for_messages(messages_request(consumer(7), 0)).error(),
            Error::unauthorized);
  EXPECT_EQ(writer.wait_for_lag(lag_request(consumer(7), 0, protocol::LagWatch::above, 1)).error(),
            Error::unauthorized);
  EXPECT_EQ(harkd_stats().parked, 0u);
}

TEST_F(Notify, ADisconnectCancelsTheParkedNotify) {
  create_stream_and_topic(1);
  {
    RawConnection watcher;
    ASSERT_TRUE(watcher.connect_and_login(address()));
    ASSERT_TRUE(watcher.send(request_frame(messages_request(consumer(7), 0))));
    ASSERT_TRUE(wait_until_parked(harkd_, 1));
    ASSERT_FALSE(watcher.readable_now());
    watcher.close();
  }
  ASSERT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& stats) {
    return stats.parked_now == 0 && stats.cancelled == 1;
  }));
  ASSERT_TRUE(send_text(0, "after").ok());
  EXPECT_EQ(harkd_stats().woken, 0u) << "the cancelled notify was still registered";
}

TEST_F(Notify, AnUnknownConditionIsResourceNotFound) {
  create_stream_and_topic(1);
  auto client = connect_client();
  const protocol::WaitForConditionRequest request{.consumer = consumer(7),
                                                  .stream_id = Identifier::numeric(0),
                                                  .topic_id = Identifier::numeric(0),
                                                  .partition_id = 0,
                                                  .wait_timeout_us = long_wait_us,
                                                  .name = "no.such.condition"};
  EXPECT_EQ(client->wait_for_condition(request).error(), Error::resource_not_found);
  // The built-in's parameters are checked too: four bytes are not hark.messages' thirteen.
  protocol::WaitForConditionRequest bad = request;
  bad.name = "hark.messages";
  bad.params = bytes_of("abcd");
  EXPECT_EQ(client->wait_for_condition(bad).error(), Error::invalid_format);
  EXPECT_TRUE(client->ping().ok()) << "the connection survives both";
}

TEST_F(Notify, AMembersWaitForMessagesIsReEvaluatedWhenASecondMemberJoins) {
  create_stream_and_topic(2);
  create_group();
  auto first = connect_client();
  ASSERT_TRUE(join(*first).ok());
  const auto me = first->get_me();
  ASSERT_TRUE(me.ok());
  const uint32_t first_id = me->client.client_id;
  auto answer = wait_messages(std::move(first), messages_request(group_consumer(), std::nullopt));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  auto second = connect_client();
  ASSERT_TRUE(join(*second).ok());
  // The rebalance parks the first member's watch again, on its new assignment.
  ASSERT_TRUE(wait_for_stats(
      harkd_, [](const HarkdStats& s) { return s.parked >= 2 && s.parked_now == 1; }));
  const std::vector<uint32_t> mine = assigned(first_id);
  ASSERT_EQ(mine.size(), 1u);
  const uint32_t other = 1 - mine[0];
  const uint64_t woken = harkd_stats().woken;
  ASSERT_TRUE(send_text(other, "theirs").ok());
  EXPECT_EQ(harkd_stats().woken, woken) << "the second member's partition fired the first's watch";
  EXPECT_TRUE(unanswered(answer));
  ASSERT_TRUE(send_text(mine[0], "mine").ok());
  const auto ready = answer.get();
  ASSERT_TRUE(ready.ok()) << error_name(ready.error());
  ASSERT_EQ(ready->partitions.size(), 1u);
  EXPECT_EQ(ready->partitions[0].partition_id, mine[0]);
}

TEST_F(Notify, AGroupWatcherThatNeverJoinedWatchesTheWholeTopicWithTheGroupsOffsets) {
  create_stream_and_topic(2);
  create_group();
  ASSERT_TRUE(send_text(0, "a").ok());
  ASSERT_TRUE(send_text(0, "b").ok());
  ASSERT_TRUE(admin_
                  ->store_consumer_offset({.consumer = group_consumer(),
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = 0,
                                           .offset = 0})
                  .ok());
  // Lag 1 on partition 0; the watcher is not a member (an autoscaler): no
  // ConsumerGroupMemberNotFound.
  auto answer = wait_lag(connect_client(),
                         lag_request(group_consumer(), std::nullopt, protocol::LagWatch::above, 2));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_TRUE(send_text(1, "c").ok());
  const auto lag = answer.get();
  ASSERT_TRUE(lag.ok()) << error_name(lag.error());
  ASSERT_TRUE(lag->has_value());
  EXPECT_EQ((*lag)->total_lag, 2u);
  ASSERT_EQ((*lag)->partitions.size(), 2u);
  EXPECT_EQ((*lag)->partitions[0].stored_offset, std::optional<uint64_t>(0));
}

TEST_F(Notify, PurgeAnswersEmptyAndDeleteAnswersTheTopicsError) {
  create_stream_and_topic(1);
  auto purged = wait_messages(connect_client(), messages_request(consumer(7), 0));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_TRUE(
      admin_->purge_topic({.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)})
          .ok());
  const auto empty = purged.get();
  ASSERT_TRUE(empty.ok()) << error_name(empty.error());
  EXPECT_TRUE(empty->partitions.empty());

  auto deleted = wait_messages(connect_client(), messages_request(consumer(7), 0));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_TRUE(
      admin_
          ->delete_topic({.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)})
          .ok());
  EXPECT_EQ(deleted.get().error(), Error::topic_id_not_found);
}

}  // namespace
}  // namespace hark::test
