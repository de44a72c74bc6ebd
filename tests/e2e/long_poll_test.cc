// Covers the deferred-poll contract (docs/long-polling.md, one test per rule) against a real
// harkd with 2 shards, over loopback: parked polls are sent on connections of their own and
// answered on threads of their own (AsyncPoll) while the test produces, purges, deletes or
// stops harkd on others. "Not answered yet" is asserted once harkd's counters say the poll is
// parked (wait_until_parked); "answered at once" means within at_once_bound, far below every wait
// used; timing bounds are generous (late_bound). The max_wait clamp runs with --max-wait 300ms.
// Consumer groups: commands_groups_test.cc.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/clock.h"
#include "hark/core/ownership_map.h"
#include "hark/protocol/codec.h"
#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;
using protocol::PollingKind;

class LongPoll : public HarkdTest {
 protected:
  // Waits until harkd has parked `count` polls, then asserts `poll` has not been answered.
  void expect_parked(const AsyncPoll& poll, uint64_t count = 1) {
    EXPECT_TRUE(wait_until_parked(harkd_, count));
    EXPECT_FALSE(poll.answered()) << "answered before anything could satisfy it";
  }
};

constexpr auto long_wait = 20s;  // Parked polls that must be ended by something else.

// One partition of stream 0 / topic 0 per owner shard (the ownership map is harkd's), so a
// connection that polls each of them waits across shards for at least one of them, whichever
// shard the kernel gave it.
std::vector<uint32_t> one_partition_per_shard(uint32_t partitions, uint32_t shards) {
  const core::OwnershipMap map(shards);
  std::vector<uint32_t> chosen;
  std::set<uint32_t> owners;
  for (uint32_t p = 0; p < partitions; p++) {
    const core::Owner owner = map.lookup({StreamId(0), TopicId(0), PartitionId(p)});
    if (owners.insert(owner.shard.value()).second) chosen.push_back(p);
  }
  return chosen;
}

TEST_F(LongPoll, AParkedPollIsWokenByASendOnAnotherConnection) {
  create_stream_and_topic(4);
  const std::vector<uint32_t> partitions = one_partition_per_shard(4, shards_count);
  ASSERT_EQ(partitions.size(), shards_count) << "4 partitions should cover both shards";
  RawConnection consumer;
  ASSERT_TRUE(consumer.connect_and_login(address()));
  for (const uint32_t partition : partitions) {
    SCOPED_TRACE("partition " + std::to_string(partition));
    AsyncPoll poll(consumer, poll_request(1, partition, next_strategy(), 10, long_wait));
    expect_parked(poll);
    const auto before_send = SteadyClock::now();
    ASSERT_FALSE(poll.answered());
    const std::string payload = "wake-" + std::to_string(partition);
    ASSERT_TRUE(send_text(partition, payload).ok());

    const PollOutcome& outcome = poll.wait(at_once_bound);
    ASSERT_TRUE(outcome.answered);
    EXPECT_EQ(outcome.status, 0u);
    EXPECT_GE(outcome.answered_at, before_send);
    EXPECT_EQ(outcome.header.partition_id, partition);
    EXPECT_EQ(outcome.offsets, std::vector<uint64_t>{0});
    EXPECT_EQ(outcome.payloads, std::vector<std::string>{payload});
  }
}

TEST_F(LongPoll, EveryStrategyParksOnAnEmptyPartitionAndOneSendWakesThemAll) {
  create_stream_and_topic(1);
  // On an empty partition every strategy wants offset 0 (timestamp 0: the next offset written).
  const protocol::PollingStrategy strategies[] = {
      next_strategy(),        offset_strategy(0),          {PollingKind::first, 0},
      {PollingKind::last, 0}, {PollingKind::timestamp, 0},
  };
  std::vector<std::unique_ptr<AsyncPoll>> polls;
  for (uint32_t i = 0; i < std::size(strategies); i++) {
    polls.push_back(std::make_unique<AsyncPoll>(
        address(), poll_request(20 + i, 0, strategies[i], 10, long_wait)));
  }
  ASSERT_TRUE(wait_until_parked(harkd_, polls.size()));
  for (uint32_t i = 0; i < polls.size(); i++) {
    ASSERT_FALSE(polls[i]->answered()) << "strategy kind " << int(strategies[i].kind);
  }
  ASSERT_TRUE(send_text(0, "woken").ok());
  for (uint32_t i = 0; i < polls.size(); i++) {
    SCOPED_TRACE("strategy kind " + std::to_string(int(strategies[i].kind)));
    const PollOutcome& outcome = polls[i]->wait(at_once_bound);
    ASSERT_TRUE(outcome.answered);
    EXPECT_EQ(outcome.status, 0u);
    EXPECT_EQ(outcome.offsets, std::vector<uint64_t>{0});
    EXPECT_EQ(outcome.payloads, std::vector<std::string>{"woken"});
  }
}

TEST_F(LongPoll, TheLargestWaitIsClampedNotOverflowed) {
  create_stream_and_topic(1);
  // u64::MAX µs: a deadline computed without saturation would wrap into the past and answer
  // at once; clamped to max_wait (30 s) the poll parks and a send wakes it.
  protocol::PollMessagesRequest request = poll_request(1, 0, next_strategy(), 10, 0us);
  request.wait_timeout_us = UINT64_MAX;
  AsyncPoll poll(address(), request);
  expect_parked(poll);
  ASSERT_TRUE(send_text(0, "late").ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.payloads, std::vector<std::string>{"late"});
}

TEST_F(LongPoll, AParkedPollIsWokenWithALargeMessageWholeAndAutoCommitsIt) {
  create_stream_and_topic(4);
  const std::vector<uint32_t> partitions = one_partition_per_shard(4, shards_count);
  ASSERT_EQ(partitions.size(), shards_count);
  // 4 MiB: the answer leaves harkd in many partial sends (the committed bytes, not a copy);
  // auto-commit must wait for the last one.
  std::string payload(4 << 20, '\0');
  for (size_t i = 0; i < payload.size(); i++) payload[i] = static_cast<char>('a' + i % 23);
  RawConnection consumer;
  ASSERT_TRUE(consumer.connect_and_login(address()));
  for (const uint32_t partition : partitions) {
    SCOPED_TRACE("partition " + std::to_string(partition));
    {
      AsyncPoll poll(consumer, poll_request(3, partition, next_strategy(), 10, long_wait,
                                            /*auto_commit=*/true));
      expect_parked(poll);
      ASSERT_TRUE(send_text(partition, payload).ok());
      const PollOutcome& outcome = poll.wait(4 * at_once_bound);
      ASSERT_TRUE(outcome.answered);
      EXPECT_EQ(outcome.status, 0u);
      ASSERT_EQ(outcome.payloads.size(), 1u);
      EXPECT_TRUE(outcome.payloads[0] == payload) << "the payload came back altered";
    }
    protocol::GetConsumerOffsetRequest get;
    get.consumer = {protocol::ConsumerKind::consumer, Identifier::numeric(3)};
    get.stream_id = Identifier::numeric(0);
    get.topic_id = Identifier::numeric(0);
    get.partition_id = partition;
    const std::optional<RawResponse> response = consumer.exchange(request_frame(get));
    ASSERT_TRUE(response.has_value());
    const auto stored =
        protocol::decode_optional_payload<protocol::ConsumerOffsetResponse>(response->payload);
    ASSERT_TRUE(stored.ok());
    ASSERT_TRUE(stored->has_value());
    EXPECT_EQ((*stored)->stored_offset, 0u);
  }
}

TEST_F(LongPoll, ATimedOutPollIsAnsweredEmptyAsAnImmediatePollWouldBe) {
  create_stream_and_topic(2);
  for (int i = 0; i < 3; i++) ASSERT_TRUE(send_text(1, "m" + std::to_string(i)).ok());
  constexpr auto wait = 300ms;
  // Partition 1 holds offsets 0..2 (current_offset 2) and is polled past its end; partition 0
  // is empty (current_offset 0).
  const protocol::PollMessagesRequest requests[] = {
      poll_request(1, 1, offset_strategy(3), 5, wait),
      poll_request(1, 0, next_strategy(), 5, wait),
  };
  for (const protocol::PollMessagesRequest& request : requests) {
    SCOPED_TRACE("partition " + std::to_string(*request.partition_id));
    AsyncPoll poll(address(), request);
    const PollOutcome immediate = poll_now(request);
    ASSERT_TRUE(immediate.answered);
    const PollOutcome& outcome = poll.wait(wait + late_bound() + at_once_bound);
    ASSERT_TRUE(outcome.answered);
    EXPECT_EQ(outcome.status, 0u);
    EXPECT_EQ(outcome.header.messages_count, 0u);
    EXPECT_TRUE(outcome.offsets.empty());
    EXPECT_EQ(outcome.header, immediate.header);
    EXPECT_EQ(outcome.header.partition_id, *request.partition_id);
    const auto elapsed = outcome.answered_at - poll.sent_at();
    EXPECT_GE(elapsed, wait);
    EXPECT_LE(elapsed, wait + late_bound());
  }
  EXPECT_EQ(poll_now(requests[0]).header.current_offset, 2u);
}

TEST_F(LongPoll, AClassicPollWithoutTheWaitFieldIsAnsweredAtOnce) {
  create_stream_and_topic(1);
  const protocol::Bytes frame = request_frame(poll_request(1, 0, next_strategy(), 1, 0us));
  // 8-byte header + consumer 7 + stream 6 + topic 6 + partition 5 + strategy 9 + count 4 +
  // auto_commit 1: no trailing wait_timeout_us (the Node SDK's golden poll frame is as long).
  ASSERT_EQ(frame.size(), 46u);
  RawConnection connection;
  ASSERT_TRUE(connection.connect_and_login(address()));
  const PollOutcome outcome = poll_outcome(connection.exchange(frame, at_once_bound));
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.header.messages_count, 0u);
}

TEST_F(LongPoll, APartialWaitFieldIsInvalidFormat) {
  create_stream_and_topic(1);
  const protocol::Bytes classic = request_frame(poll_request(1, 0, next_strategy(), 1, 0us));
  RawConnection connection;
  ASSERT_TRUE(connection.connect_and_login(address()));
  for (uint32_t extra = 1; extra <= 8; extra++) {
    SCOPED_TRACE(std::to_string(extra) + " trailing bytes");
    protocol::Bytes frame = classic;
    frame.resize(classic.size() + extra, std::byte{0});  // wait_timeout_us bytes, value 0.
    store_u32(frame, 0, load_u32(frame, 0) + extra);
    const std::optional<RawResponse> response = connection.exchange(frame);
    ASSERT_TRUE(response.has_value());
    if (extra < 8) {
      EXPECT_EQ(response->status, error_code(Error::invalid_format));
      EXPECT_TRUE(response->payload.empty());
    } else {
      EXPECT_EQ(response->status, 0u) << "a whole field of 0 is the classic poll";
    }
  }
  // Every error was one whole response: the connection is still in step.
  const std::optional<RawResponse> pong =
      connection.exchange(request_frame(protocol::PingRequest{}));
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->status, 0u);
  EXPECT_TRUE(pong->payload.empty());
}

TEST_F(LongPoll, CountZeroIsAnsweredAtOnceEvenWithAWait) {
  create_stream_and_topic(1);
  RawConnection connection;
  ASSERT_TRUE(connection.connect_and_login(address()));
  for (const bool with_data : {false, true}) {
    SCOPED_TRACE(with_data ? "with data" : "empty partition");
    if (with_data) {
      ASSERT_TRUE(send_text(0, "x").ok());
    }
    const PollOutcome outcome = poll_outcome(connection.exchange(
        request_frame(poll_request(1, 0, next_strategy(), 0, long_wait)), at_once_bound));
    ASSERT_TRUE(outcome.answered);
    EXPECT_EQ(outcome.status, 0u);
    EXPECT_EQ(outcome.header.messages_count, 0u);
  }
}

TEST_F(LongPoll, DataAlreadyPresentIsAnsweredAtOnce) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "a").ok());
  ASSERT_TRUE(send_text(0, "b").ok());
  RawConnection connection;
  ASSERT_TRUE(connection.connect_and_login(address()));
  const PollOutcome outcome = poll_outcome(connection.exchange(
      request_frame(poll_request(1, 0, next_strategy(), 10, long_wait)), at_once_bound));
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.payloads, (std::vector<std::string>{"a", "b"}));
}

// Reads the offset stored for consumer `consumer_id` on partition 0 over `connection`.
std::optional<uint64_t> stored_offset(RawConnection& connection, uint32_t consumer_id) {
  protocol::GetConsumerOffsetRequest request;
  request.consumer = {protocol::ConsumerKind::consumer, Identifier::numeric(consumer_id)};
  request.stream_id = Identifier::numeric(0);
  request.topic_id = Identifier::numeric(0);
  request.partition_id = 0;
  const std::optional<RawResponse> response = connection.exchange(request_frame(request));
  EXPECT_TRUE(response.has_value());
  if (!response) return std::nullopt;
  EXPECT_EQ(response->status, 0u);
  const auto decoded =
      protocol::decode_optional_payload<protocol::ConsumerOffsetResponse>(response->payload);
  EXPECT_TRUE(decoded.ok());
  if (!decoded.ok() || !decoded->has_value()) return std::nullopt;
  return (*decoded)->stored_offset;
}

TEST_F(LongPoll, AutoCommitStoresTheOffsetAfterTheResponseAndNextContinuesAfterIt) {
  create_stream_and_topic(1);
  for (const char* text : {"a", "b", "c"}) ASSERT_TRUE(send_text(0, text).ok());
  RawConnection consumer;
  ASSERT_TRUE(consumer.connect_and_login(address()));

  // An immediate poll with auto-commit: the offset is stored before the connection's next
  // request is read, so a get on the same connection sees it.
  const PollOutcome first = poll_outcome(consumer.exchange(
      request_frame(poll_request(7, 0, next_strategy(), 2, long_wait, /*auto_commit=*/true))));
  ASSERT_TRUE(first.answered);
  EXPECT_EQ(first.offsets, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(stored_offset(consumer, 7), std::optional<uint64_t>(1));

  const PollOutcome second = poll_outcome(consumer.exchange(
      request_frame(poll_request(7, 0, next_strategy(), 10, long_wait, /*auto_commit=*/true))));
  ASSERT_TRUE(second.answered);
  EXPECT_EQ(second.offsets, std::vector<uint64_t>{2});
  EXPECT_EQ(stored_offset(consumer, 7), std::optional<uint64_t>(2));

  // A parked poll with auto-commit, woken by a send: the same rule.
  {
    AsyncPoll parked(consumer,
                     poll_request(7, 0, next_strategy(), 10, long_wait, /*auto_commit=*/true));
    expect_parked(parked);
    ASSERT_TRUE(send_text(0, "d").ok());
    const PollOutcome& woken = parked.wait(at_once_bound);
    ASSERT_TRUE(woken.answered);
    EXPECT_EQ(woken.offsets, std::vector<uint64_t>{3});
  }
  EXPECT_EQ(stored_offset(consumer, 7), std::optional<uint64_t>(3));
}

TEST_F(LongPoll, AutoCommitOfATimedOutPollStoresNothing) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "a").ok());
  RawConnection consumer;
  ASSERT_TRUE(consumer.connect_and_login(address()));
  constexpr auto wait = 200ms;
  const PollOutcome outcome = poll_outcome(consumer.exchange(
      request_frame(poll_request(8, 0, offset_strategy(1), 10, wait, /*auto_commit=*/true)),
      wait + late_bound() + at_once_bound));
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.header.messages_count, 0u);
  EXPECT_EQ(stored_offset(consumer, 8), std::nullopt);
}

TEST_F(LongPoll, ADisconnectWhileParkedStoresNothingAndLosesNoMessage) {
  create_stream_and_topic(1);
  {
    RawConnection consumer;
    ASSERT_TRUE(consumer.connect_and_login(address()));
    ASSERT_TRUE(consumer.send(
        request_frame(poll_request(9, 0, next_strategy(), 10, long_wait, /*auto_commit=*/true))));
    ASSERT_TRUE(wait_until_parked(harkd_, 1));
    ASSERT_FALSE(consumer.readable_now()) << "answered before anything could satisfy it";
    consumer.close();
  }
  // harkd has seen the close once it cancelled the parked poll.
  ASSERT_TRUE(wait_for_stats(harkd_, [](const HarkdStats& stats) {
    return stats.parked_now == 0 && stats.cancelled == 1;
  }));
  ASSERT_TRUE(send_text(0, "kept").ok());

  RawConnection again;
  ASSERT_TRUE(again.connect_and_login(address()));
  EXPECT_EQ(stored_offset(again, 9), std::nullopt) << "the cancelled poll stored an offset";
  const PollOutcome outcome = poll_outcome(again.exchange(
      request_frame(poll_request(9, 0, next_strategy(), 10, long_wait, /*auto_commit=*/true))));
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.payloads, std::vector<std::string>{"kept"});
  EXPECT_EQ(outcome.offsets, std::vector<uint64_t>{0});
}

TEST_F(LongPoll, PurgeTopicAnswersAParkedPollEmptyAtOnce) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "a").ok());
  AsyncPoll poll(address(), poll_request(1, 0, offset_strategy(1), 10, long_wait));
  expect_parked(poll);
  ASSERT_TRUE(
      admin_->purge_topic({.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)})
          .ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered) << "a purge must answer a parked poll at once";
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.header.messages_count, 0u);
  // The partition restarts at offset 0 (Iggy 0.8.0), and parks and wakes as before.
  AsyncPoll after(address(), poll_request(1, 0, next_strategy(), 10, long_wait));
  expect_parked(after);
  ASSERT_TRUE(send_text(0, "after purge").ok());
  const PollOutcome& woken = after.wait(at_once_bound);
  ASSERT_TRUE(woken.answered);
  EXPECT_EQ(woken.offsets, std::vector<uint64_t>{0});
  EXPECT_EQ(woken.payloads, std::vector<std::string>{"after purge"});
}

TEST_F(LongPoll, PurgeStreamAnswersAParkedPollEmptyAtOnce) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "a").ok());
  AsyncPoll poll(address(), poll_request(1, 0, offset_strategy(1), 10, long_wait));
  expect_parked(poll);
  ASSERT_TRUE(admin_->purge_stream({.stream_id = Identifier::numeric(0)}).ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered) << "a purge must answer a parked poll at once";
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.header.messages_count, 0u);
}

TEST_F(LongPoll, DeleteTopicAnswersAParkedPollWithTheImmediateError) {
  create_stream_and_topic(1);
  const auto request = poll_request(1, 0, next_strategy(), 10, long_wait);
  AsyncPoll poll(address(), request);
  expect_parked(poll);
  ASSERT_TRUE(
      admin_
          ->delete_topic({.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)})
          .ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, error_code(Error::topic_id_not_found));
  EXPECT_EQ(poll_now(request).status, outcome.status);
}

TEST_F(LongPoll, DeleteStreamAnswersAParkedPollWithTheImmediateError) {
  create_stream_and_topic(1);
  const auto request = poll_request(1, 0, next_strategy(), 10, long_wait);
  AsyncPoll poll(address(), request);
  expect_parked(poll);
  ASSERT_TRUE(admin_->delete_stream({.stream_id = Identifier::numeric(0)}).ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, error_code(Error::stream_id_not_found));
  EXPECT_EQ(poll_now(request).status, outcome.status);
}

TEST_F(LongPoll, OneSendWakesTwoHundredPollsOnSeparateConnections) {
  create_stream_and_topic(1);
  constexpr uint32_t polls_count = 200;  // 200 client + 200 server sockets: far below 20000.
  std::vector<RawConnection> consumers(polls_count);
  // Every login first (each hashes a password: seconds for 200 on a loaded machine), then every
  // poll, so the first polls' wait does not run out while the last consumers log in.
  for (uint32_t i = 0; i < polls_count; i++) {
    ASSERT_TRUE(consumers[i].connect_and_login(address())) << "consumer " << i;
  }
  for (uint32_t i = 0; i < polls_count; i++) {
    ASSERT_TRUE(
        consumers[i].send(request_frame(poll_request(100 + i, 0, next_strategy(), 10, long_wait))));
  }
  ASSERT_TRUE(wait_until_parked(harkd_, polls_count));
  for (uint32_t i = 0; i < polls_count; i++) {
    ASSERT_FALSE(consumers[i].readable_now()) << "consumer " << i << " answered early";
  }
  ASSERT_TRUE(send_text(0, "fan-out").ok());

  const auto deadline = SteadyClock::now() + 2 * at_once_bound;
  for (uint32_t i = 0; i < polls_count; i++) {
    const PollOutcome outcome = poll_outcome(consumers[i].read_response(deadline));
    ASSERT_TRUE(outcome.answered) << "consumer " << i;
    EXPECT_EQ(outcome.status, 0u) << "consumer " << i;
    EXPECT_EQ(outcome.payloads, std::vector<std::string>{"fan-out"}) << "consumer " << i;
  }
}

TEST_F(LongPoll, ShutdownAnswersAParkedPollEmptyAndExitsZero) {
  create_stream_and_topic(1);
  AsyncPoll poll(address(), poll_request(1, 0, next_strategy(), 10, long_wait));
  expect_parked(poll);
  const ProcessExit exit = harkd_.stop();
  EXPECT_TRUE(exit.clean()) << describe(exit);
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered) << "shutdown must answer parked polls";
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.header.messages_count, 0u);
  EXPECT_LT(outcome.answered_at - poll.sent_at(), long_wait);
}

// harkd with --max-wait 300ms, so the clamp can be seen without waiting 30 s.
class LongPollClamped : public HarkdTest {
 protected:
  static constexpr auto max_wait = 300ms;
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--max-wait", std::to_string(max_wait.count()) + "ms"};
    return options;
  }
};

TEST_F(LongPollClamped, AWaitAboveMaxWaitIsClampedToIt) {
  create_stream_and_topic(1);
  const auto request = poll_request(1, 0, next_strategy(), 10, long_wait);
  AsyncPoll poll(address(), request);
  const PollOutcome& outcome = poll.wait(max_wait + late_bound() + at_once_bound);
  ASSERT_TRUE(outcome.answered) << "not answered within max_wait";
  EXPECT_EQ(outcome.status, 0u) << "a clamp, not an error";
  EXPECT_EQ(outcome.header.messages_count, 0u);
  const auto elapsed = outcome.answered_at - poll.sent_at();
  EXPECT_GE(elapsed, max_wait);
  EXPECT_LE(elapsed, max_wait + late_bound());
}

TEST_F(LongPoll, ATimestampPollForTheFutureIsNotAnsweredByAnOlderMessage) {
  create_stream_and_topic(1);
  // The send below wakes the poll (a message was committed past its `want`), the poll finds
  // no message at or after its timestamp and parks again with its original deadline. The send
  // comes late in the wait, so a deadline restarted at the re-park would answer after
  // send_at + wait, past wait + late_bound (release build).
  constexpr auto wait = 1000ms;
  constexpr auto send_at = 700ms;
  const UnixMicros future = SystemClock::instance().realtime_now() + 3'600'000'000ull;
  AsyncPoll poll(address(), poll_request(1, 0, {PollingKind::timestamp, future}, 10, wait));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  // Not a wait for a signal: the behaviour under test needs the send to come late in the wait.
  std::this_thread::sleep_until(poll.sent_at() + send_at);
  ASSERT_FALSE(poll.answered());
  ASSERT_TRUE(send_text(0, "older").ok());
  // Woken, found nothing, parked again (a second park that stayed parked).
  EXPECT_TRUE(wait_for_stats(
      harkd_, [](const HarkdStats& stats) { return stats.woken == 1 && stats.parked == 2; }));
  EXPECT_FALSE(poll.answered()) << "answered early by a message older than its timestamp";

  const PollOutcome& outcome = poll.wait(wait + late_bound() + at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.header.messages_count, 0u);
  EXPECT_EQ(outcome.header.current_offset, 0u);
  const auto elapsed = outcome.answered_at - poll.sent_at();
  EXPECT_GE(elapsed, wait);
  EXPECT_LE(elapsed, wait + late_bound());
}

TEST_F(LongPoll, AnOffsetPastTheEndParksUntilThatOffsetIsCommitted) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "0").ok());
  ASSERT_TRUE(send_text(0, "1").ok());
  AsyncPoll poll(address(), poll_request(1, 0, offset_strategy(5), 10, long_wait));
  expect_parked(poll);
  // Offsets 2..4 are committed, still before the wanted offset 5.
  for (const char* text : {"2", "3", "4"}) ASSERT_TRUE(send_text(0, text).ok());
  // A send is answered after its commit was settled: a wake would have been counted.
  const HarkdStats after = harkd_stats();
  EXPECT_EQ(after.woken, 0u);
  EXPECT_EQ(after.parked_now, 1u);
  ASSERT_FALSE(poll.answered()) << "answered before offset 5 existed";
  ASSERT_TRUE(send_text(0, "5").ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.offsets, std::vector<uint64_t>{5});
  EXPECT_EQ(outcome.payloads, std::vector<std::string>{"5"});
}

TEST_F(LongPoll, APingBehindAParkedPollWaitsForIt) {
  create_stream_and_topic(1);
  constexpr auto wait = 300ms;
  RawConnection connection;
  ASSERT_TRUE(connection.connect_and_login(address()));
  const auto sent_at = SteadyClock::now();
  // Both requests at once: responses come back in order, the poll's first (no request ids).
  protocol::Bytes frames = request_frame(poll_request(1, 0, next_strategy(), 10, wait));
  const protocol::Bytes ping = request_frame(protocol::PingRequest{});
  frames.insert(frames.end(), ping.begin(), ping.end());
  ASSERT_TRUE(connection.send(frames));

  const auto deadline = sent_at + wait + late_bound() + at_once_bound;
  const PollOutcome poll = poll_outcome(connection.read_response(deadline));
  ASSERT_TRUE(poll.answered);
  EXPECT_EQ(poll.status, 0u);
  EXPECT_EQ(poll.header.messages_count, 0u);
  EXPECT_GE(poll.answered_at - sent_at, wait);
  const std::optional<RawResponse> pong = connection.read_response(deadline);
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->status, 0u);
  EXPECT_TRUE(pong->payload.empty());
}

}  // namespace
}  // namespace hark::test
