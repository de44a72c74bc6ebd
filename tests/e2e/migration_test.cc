// Connection migration (docs/architecture.md §6): a connection whose first send or poll names
// one partition moves to the shard that owns it, between requests, without the client
// noticing. The tests learn which shard serves a connection from harkd's stats line
// (shard_connections=a/b, migrations=N on SIGUSR1) and which shard owns a partition from the
// same OwnershipMap harkd uses, so every case knows a migration must (or must not) happen.
#include <signal.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/ownership_map.h"
#include "hark/protocol/send_messages.h"
#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

protocol::Bytes send_frame(uint32_t partition, std::string_view payload) {
  const protocol::Bytes bytes = bytes_of(payload);
  const protocol::OutgoingMessage message{.payload = bytes};
  const protocol::SendTarget target{.stream_id = protocol::Identifier::numeric(0),
                                    .topic_id = protocol::Identifier::numeric(0),
                                    .partitioning = protocol::Partitioning::partition(partition)};
  protocol::Bytes frame;
  EXPECT_TRUE(protocol::encode_send_messages(target, {&message, 1}, frame).ok());
  return frame;
}

class HarkdMigration : public HarkdTest {
 protected:
  static constexpr uint32_t partitions = 4;

  void SetUp() override {
    HarkdTest::SetUp();
    create_stream_and_topic(partitions);
  }

  // The shard a just-opened connection landed on: the one whose count grew.
  std::optional<uint32_t> shard_gained(const HarkdStats& before, const HarkdStats& after) {
    for (uint32_t shard = 0; shard < shards_count; shard++) {
      if (after.by_shard[shard] > before.by_shard[shard]) return shard;
    }
    return std::nullopt;
  }

  // A partition of topic 0 owned by a shard other than `shard`.
  static std::optional<uint32_t> partition_away_from(uint32_t shard) {
    for (uint32_t partition = 0; partition < partitions; partition++) {
      if (owner_of(partition) != shard) return partition;
    }
    return std::nullopt;
  }

  static uint32_t owner_of(uint32_t partition) {
    const core::OwnershipMap map(shards_count);
    return map.lookup({StreamId(0), TopicId(0), PartitionId(partition)}).shard.value();
  }
};

TEST_F(HarkdMigration, AProducerMovesToItsPartitionsOwnerAndKeepsWorking) {
  const HarkdStats before = harkd_stats();
  std::unique_ptr<client::Client> producer = connect_client();
  ASSERT_NE(producer, nullptr);
  const HarkdStats connected = harkd_stats();
  const std::optional<uint32_t> accepted_on = shard_gained(before, connected);
  ASSERT_TRUE(accepted_on.has_value());
  const std::optional<uint32_t> partition = partition_away_from(*accepted_on);
  ASSERT_TRUE(partition.has_value()) << "every partition is owned by shard " << *accepted_on;

  ASSERT_TRUE(send_text(*producer, protocol::Partitioning::partition(*partition), "m1").ok());
  // The move follows the answer; the next answer comes from the new shard.
  ASSERT_TRUE(producer->ping().ok());
  const HarkdStats moved = harkd_stats();
  EXPECT_EQ(moved.migrations, 1u);
  EXPECT_EQ(moved.by_shard[owner_of(*partition)], connected.by_shard[owner_of(*partition)] + 1);
  EXPECT_EQ(moved.by_shard[*accepted_on], connected.by_shard[*accepted_on] - 1);

  // The moved connection answers as before, and it moves only once.
  ASSERT_TRUE(send_text(*producer, protocol::Partitioning::partition(*partition), "m2").ok());
  ASSERT_TRUE(producer->ping().ok());
  const auto polled = producer->poll_messages(
      poll_request(1, *partition, offset_strategy(0), 10, std::chrono::microseconds(0)));
  ASSERT_TRUE(polled.ok()) << error_name(polled.error());
  EXPECT_EQ(payloads_of(polled->messages()), (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(harkd_stats().migrations, 1u);
}

TEST_F(HarkdMigration, AUserKeepsWhoItIsAndWhatItMayDoAcrossTheMove) {
  protocol::Permissions send_and_poll;
  send_and_poll.global.send_messages = true;
  send_and_poll.global.poll_messages = true;
  const auto created = admin_->create_user(
      {.username = "mover", .password = "secret", .permissions = send_and_poll});
  ASSERT_TRUE(created.ok()) << error_name(created.error());

  const HarkdStats before = harkd_stats();
  auto mover = std::make_unique<client::Client>();
  ASSERT_TRUE(mover->connect(address()).ok());
  ASSERT_TRUE(mover->login("mover", "secret").ok());
  const std::optional<uint32_t> accepted_on = shard_gained(before, harkd_stats());
  ASSERT_TRUE(accepted_on.has_value());
  const std::optional<uint32_t> partition = partition_away_from(*accepted_on);
  ASSERT_TRUE(partition.has_value());
  ASSERT_TRUE(send_text(*mover, protocol::Partitioning::partition(*partition), "x").ok());
  ASSERT_TRUE(mover->ping().ok());
  EXPECT_EQ(harkd_stats().migrations, 1u);

  const auto me = mover->get_me();
  ASSERT_TRUE(me.ok()) << error_name(me.error());
  EXPECT_EQ(me->client.user_id, created->user.id);
  EXPECT_TRUE(send_text(*mover, protocol::Partitioning::partition(*partition), "y").ok());
  EXPECT_EQ(mover->create_stream({.name = "not-mine"}).error(), Error::unauthorized)
      << "the move does not make it root";
}

TEST_F(HarkdMigration, PipelinedRequestsAroundTheMigrationKeepTheirOrder) {
  const HarkdStats before = harkd_stats();
  RawConnection client;
  ASSERT_TRUE(client.connect_and_login(address()));
  const std::optional<uint32_t> accepted_on = shard_gained(before, harkd_stats());
  ASSERT_TRUE(accepted_on.has_value());
  const std::optional<uint32_t> partition = partition_away_from(*accepted_on);
  ASSERT_TRUE(partition.has_value());

  // Six requests in one write: the first decides the migration, the other five are read on
  // the old shard and carried over unread, or arrive on the new one.
  const auto poll_all = request_frame(
      poll_request(7, *partition, offset_strategy(0), 10, std::chrono::microseconds(0)));
  protocol::Bytes pipelined;
  for (const protocol::Bytes& frame :
       {send_frame(*partition, "a"), send_frame(*partition, "b"), poll_all,
        request_frame(protocol::PingRequest{}), send_frame(*partition, "c"), poll_all}) {
    pipelined.insert(pipelined.end(), frame.begin(), frame.end());
  }
  ASSERT_TRUE(client.send(pipelined));
  const auto deadline = SteadyClock::now() + at_once_bound;
  std::vector<std::optional<RawResponse>> responses;
  for (int i = 0; i < 6; i++) responses.push_back(client.read_response(deadline));
  for (int i = 0; i < 6; i++) {
    ASSERT_TRUE(responses[i].has_value()) << "response " << i;
    EXPECT_EQ(responses[i]->status, 0u) << "response " << i;
  }
  EXPECT_EQ(poll_outcome(responses[2]).payloads, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(poll_outcome(responses[5]).payloads, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(client.readable_now()) << "nothing is answered twice";

  // Requests sent right after the deciding answer, while the move is under way, wait in the
  // socket and are answered from the new shard.
  RawConnection second;
  ASSERT_TRUE(second.connect_and_login(address()));
  ASSERT_TRUE(second.send(send_frame(*partition, "d")));
  ASSERT_TRUE(second.read_response(deadline).has_value());
  protocol::Bytes following = request_frame(protocol::PingRequest{});
  following.insert(following.end(), poll_all.begin(), poll_all.end());
  ASSERT_TRUE(second.send(following));
  const std::optional<RawResponse> pong = second.read_response(deadline);
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->status, 0u);
  EXPECT_EQ(poll_outcome(second.read_response(deadline)).payloads,
            (std::vector<std::string>{"a", "b", "c", "d"}));
  const HarkdStats after = harkd_stats();
  EXPECT_GE(after.migrations, 1u);  // The first client's; the second's if it was elsewhere.
  EXPECT_EQ(after.by_shard[owner_of(*partition)], before.by_shard[owner_of(*partition)] + 2);
}

TEST_F(HarkdMigration, AConsumerParkedAfterMovingIsWokenByAProducerThatMovedToo) {
  std::vector<std::unique_ptr<client::Client>> clients;
  for (int i = 0; i < 2; i++) clients.push_back(connect_client());
  // Partition 0's owner is where both end up, whichever shards accepted them.
  ASSERT_TRUE(send_text(*clients[0], protocol::Partitioning::partition(0), "first").ok());
  RawConnection consumer;
  ASSERT_TRUE(consumer.connect_and_login(address()));
  ASSERT_EQ(poll_outcome(consumer.exchange(request_frame(poll_request(
                             3, 0, offset_strategy(0), 10, std::chrono::microseconds(0)))))
                .payloads,
            (std::vector<std::string>{"first"}));
  AsyncPoll parked(consumer, poll_request(3, 0, offset_strategy(1), 10, 10s));
  EXPECT_TRUE(wait_until_parked(harkd_, 1));
  EXPECT_FALSE(parked.answered());
  ASSERT_TRUE(send_text(*clients[1], protocol::Partitioning::partition(0), "second").ok());
  const PollOutcome& woken = parked.wait(at_once_bound);
  ASSERT_TRUE(woken.answered);
  EXPECT_EQ(woken.payloads, (std::vector<std::string>{"second"}));
  ASSERT_TRUE(clients[1]->ping().ok());  // Its move follows its answer.
  const HarkdStats after = harkd_stats();
  EXPECT_GE(after.by_shard[owner_of(0)], 3u) << "producer, consumer and second producer";
}

// Many consumers of one partition: each moves only while its owner shard holds at most the
// slack more than the shard it leaves, so their answers go out from both shards.
TEST_F(HarkdMigration, ConsumersOfOneHotPartitionFillItsOwnerShardOnlyUpToTheSlack) {
  constexpr uint32_t consumers = 64;
  constexpr uint32_t slack = 16;  // ShardServer::migration_slack.
  const uint32_t owner = owner_of(0);
  const uint32_t other = 1 - owner;
  std::vector<std::unique_ptr<RawConnection>> connections;
  for (uint32_t i = 0; i < consumers; i++) {
    connections.push_back(std::make_unique<RawConnection>());
    ASSERT_TRUE(connections.back()->connect_and_login(address()));
  }
  const HarkdStats connected = harkd_stats();
  for (uint32_t i = 0; i < consumers; i++) {
    // An empty immediate poll of partition 0 decides the move; the ping after it is answered
    // once the move is done.
    ASSERT_TRUE(connections[i]->exchange(request_frame(
        poll_request(i + 1, 0, offset_strategy(0), 10, std::chrono::microseconds(0)))));
    ASSERT_TRUE(connections[i]->exchange(request_frame(protocol::PingRequest{})));
  }
  const HarkdStats after = harkd_stats();
  // Moves stopped once the owner held the slack more than the other shard (the kernel's
  // spread of the accepts may have put more there to begin with: nothing moves away).
  EXPECT_LE(after.by_shard[owner],
            std::max(connected.by_shard[owner], after.by_shard[other] + slack + 1))
      << "accepted " << connected.by_shard[owner] << "/" << connected.by_shard[other] << ", after "
      << after.by_shard[owner] << "/" << after.by_shard[other];
  if (connected.by_shard[owner] + slack < connected.by_shard[other]) {
    EXPECT_GT(after.migrations, 0u) << "an owner below its share takes consumers";
  }
}

TEST_F(HarkdMigration, BalancedAndKeyedProducersAndGroupMembersStayWhereTheyAre) {
  protocol::CreateConsumerGroupRequest group;
  group.stream_id = protocol::Identifier::numeric(0);
  group.topic_id = protocol::Identifier::numeric(0);
  group.name = "g";
  const auto created = admin_->create_consumer_group(group);
  ASSERT_TRUE(created.ok()) << error_name(created.error());
  std::unique_ptr<client::Client> balanced = connect_client();
  std::unique_ptr<client::Client> keyed = connect_client();
  std::unique_ptr<client::Client> member = connect_client();
  const HarkdStats connected = harkd_stats();

  ASSERT_TRUE(send_text(*balanced, protocol::Partitioning::balanced(), "b").ok());
  const protocol::Bytes key = bytes_of("key");
  ASSERT_TRUE(send_text(*keyed, *protocol::Partitioning::messages_key(key), "k").ok());
  ASSERT_TRUE(member
                  ->join_consumer_group({.stream_id = protocol::Identifier::numeric(0),
                                         .topic_id = protocol::Identifier::numeric(0),
                                         .group_id = protocol::Identifier::numeric(created->id)})
                  .ok());
  protocol::PollMessagesRequest poll =
      poll_request(0, 0, next_strategy(), 10, std::chrono::microseconds(0));
  poll.consumer = {protocol::ConsumerKind::group, protocol::Identifier::numeric(created->id)};
  for (uint32_t partition = 0; partition < partitions; partition++) {
    poll.partition_id = partition;
    const auto polled = member->poll_messages(poll);
    ASSERT_TRUE(polled.ok()) << error_name(polled.error());
  }
  const HarkdStats after = harkd_stats();
  EXPECT_EQ(after.migrations, 0u);
  EXPECT_EQ(after.by_shard, connected.by_shard);
}

TEST_F(HarkdMigration, ClientsThatLeaveDuringTheirMigrationLeaveNothingBehind) {
  // Each client sends one partition-addressed request and closes at once, so its connection
  // is torn down somewhere between deciding, cancelling its receive and arriving. harkd must
  // neither crash nor leak memory (the sanitizer builds check at the clean stop) or sockets.
  const size_t files_before = harkd_open_files();
  for (int i = 0; i < 40; i++) {
    RawConnection client;
    ASSERT_TRUE(client.connect_and_login(address()));
    ASSERT_TRUE(client.send(send_frame(static_cast<uint32_t>(i) % partitions, "gone")));
    if (i % 2 == 0) {
      ASSERT_TRUE(client.send(request_frame(protocol::PingRequest{})));
    }
    client.close();
  }
  HarkdStats after;
  wait_until(
      [&] {
        after = harkd_stats();
        return after.total() <= 1 && harkd_open_files() <= files_before;
      },
      at_once_bound, stats_every);
  EXPECT_EQ(after.total(), 1u) << "only the admin connection is left";
  EXPECT_EQ(harkd_open_files(), files_before) << "every socket is closed";
  EXPECT_TRUE(admin_->ping().ok());
}

class HarkdWithoutMigration : public HarkdMigration {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--migrate-connections", "false"};
    return options;
  }
};

TEST_F(HarkdWithoutMigration, ConnectionsStayWhereTheyWereAccepted) {
  const HarkdStats before = harkd_stats();
  std::unique_ptr<client::Client> producer = connect_client();
  const HarkdStats connected = harkd_stats();
  const std::optional<uint32_t> accepted_on = shard_gained(before, connected);
  ASSERT_TRUE(accepted_on.has_value());
  const std::optional<uint32_t> partition = partition_away_from(*accepted_on);
  ASSERT_TRUE(partition.has_value());
  ASSERT_TRUE(send_text(*producer, protocol::Partitioning::partition(*partition), "x").ok());
  const HarkdStats after = harkd_stats();
  EXPECT_EQ(after.migrations, 0u);
  EXPECT_EQ(after.by_shard, connected.by_shard);
}

}  // namespace
}  // namespace hark::test
