// Covers harkd's basic commands through the client library against a real harkd with 2 shards:
// streams and topics are created and read back (0-based ids), sends land by partition id, key
// and round robin, and the classic errors come back as Iggy's codes (store on an empty
// partition 4100, unknown partition 3007, unauthenticated 40, bad credentials 42, an
// unsupported command 5); named consumers are XXH32 ids. Restarts: restart_test.cc.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/protocol/hash.h"
#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;
using protocol::Partitioning;

class HarkdCommands : public HarkdTest {
 protected:
  // The payloads of every message in a partition, by an immediate poll from offset 0.
  std::vector<std::string> partition_payloads(uint32_t partition) {
    const auto polled =
        admin_->poll_messages(poll_request(1, partition, offset_strategy(0), 100, 0us));
    EXPECT_TRUE(polled.ok()) << error_name(polled.error());
    if (!polled.ok()) return {};
    EXPECT_EQ(polled->header().partition_id, partition);
    return payloads_of(polled->messages());
  }
};

TEST_F(HarkdCommands, StreamsAndTopicsAreCreatedAndReadBackWithZeroBasedIds) {
  const auto first = admin_->create_stream({.name = "orders"});
  ASSERT_TRUE(first.ok()) << error_name(first.error());
  EXPECT_EQ(first->id, 0u);
  EXPECT_EQ(first->name, "orders");
  const auto second = admin_->create_stream({.name = "payments"});
  ASSERT_TRUE(second.ok()) << error_name(second.error());
  EXPECT_EQ(second->id, 1u);
  EXPECT_EQ(admin_->create_stream({.name = "orders"}).error(), Error::stream_name_already_exists);

  protocol::CreateTopicRequest topic;
  topic.stream_id = Identifier::numeric(1);
  topic.partitions_count = 3;
  topic.name = "events";
  const auto created = admin_->create_topic(topic);
  ASSERT_TRUE(created.ok()) << error_name(created.error());
  EXPECT_EQ(created->topic.id, 0u);
  EXPECT_EQ(created->topic.name, "events");
  EXPECT_EQ(created->topic.partitions_count, 3u);
  ASSERT_EQ(created->partitions.size(), 3u);
  for (uint32_t p = 0; p < 3; p++) EXPECT_EQ(created->partitions[p].id, p);

  const auto streams = admin_->get_streams();
  ASSERT_TRUE(streams.ok()) << error_name(streams.error());
  ASSERT_EQ(streams->streams.size(), 2u);
  EXPECT_EQ(streams->streams[0].name, "orders");
  EXPECT_EQ(streams->streams[1].name, "payments");
  EXPECT_EQ(streams->streams[1].topics_count, 1u);

  const auto by_name = admin_->get_stream({.stream_id = *Identifier::named("payments")});
  ASSERT_TRUE(by_name.ok()) << error_name(by_name.error());
  ASSERT_TRUE(by_name->has_value());
  EXPECT_EQ((*by_name)->stream.id, 1u);
  ASSERT_EQ((*by_name)->topics.size(), 1u);
  EXPECT_EQ((*by_name)->topics[0].name, "events");

  const auto read_topic = admin_->get_topic(
      {.stream_id = Identifier::numeric(1), .topic_id = *Identifier::named("events")});
  ASSERT_TRUE(read_topic.ok()) << error_name(read_topic.error());
  ASSERT_TRUE(read_topic->has_value());
  EXPECT_EQ((*read_topic)->topic.id, 0u);
  EXPECT_EQ((*read_topic)->partitions.size(), 3u);

  const auto topics = admin_->get_topics({.stream_id = Identifier::numeric(1)});
  ASSERT_TRUE(topics.ok()) << error_name(topics.error());
  ASSERT_EQ(topics->topics.size(), 1u);
  EXPECT_EQ(topics->topics[0].name, "events");

  // Missing: an empty payload (nullopt), as 0.8.0 answers, not an error.
  const auto missing = admin_->get_stream({.stream_id = Identifier::numeric(7)});
  ASSERT_TRUE(missing.ok()) << error_name(missing.error());
  EXPECT_FALSE(missing->has_value());
}

TEST_F(HarkdCommands, ASendByPartitionIdLandsInThatPartition) {
  create_stream_and_topic(3);
  ASSERT_TRUE(send_text(*admin_, Partitioning::partition(2), "to-2").ok());
  EXPECT_EQ(partition_payloads(2), std::vector<std::string>{"to-2"});
  EXPECT_TRUE(partition_payloads(0).empty());
  EXPECT_TRUE(partition_payloads(1).empty());
}

TEST_F(HarkdCommands, ASendByKeyLandsInThePartitionTheKeyHashesTo) {
  create_stream_and_topic(3);
  for (const std::string key : {"alpha", "beta", "gamma", "delta"}) {
    const protocol::Bytes key_bytes = bytes_of(key);
    const auto partitioning = Partitioning::messages_key(key_bytes);
    ASSERT_TRUE(partitioning.ok());
    ASSERT_TRUE(send_text(*admin_, *partitioning, key).ok());
  }
  std::vector<std::string> expected[3];
  for (const std::string key : {"alpha", "beta", "gamma", "delta"}) {
    const auto partition = protocol::partition_of_key(bytes_of(key), 3);
    ASSERT_TRUE(partition.ok());
    expected[*partition].push_back(key);
  }
  for (uint32_t p = 0; p < 3; p++)
    EXPECT_EQ(partition_payloads(p), expected[p]) << "partition " << p;
}

TEST_F(HarkdCommands, BalancedSendsFromOneConnectionGoRoundRobin) {
  create_stream_and_topic(3);
  for (int i = 0; i < 6; i++) {
    ASSERT_TRUE(send_text(*admin_, Partitioning::balanced(), "m" + std::to_string(i)).ok());
  }
  for (uint32_t p = 0; p < 3; p++) {
    EXPECT_EQ(partition_payloads(p).size(), 2u) << "partition " << p;
  }
}

TEST_F(HarkdCommands, ANamedConsumerIsTheConsumerWhoseIdIsTheXxh32OfItsName) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "a").ok());
  ASSERT_TRUE(send_text(0, "b").ok());
  protocol::PollMessagesRequest named = poll_request(0, 0, next_strategy(), 1, 0us, true);
  named.consumer.id = *Identifier::named("alice");
  const auto first = admin_->poll_messages(named);
  ASSERT_TRUE(first.ok()) << error_name(first.error());
  EXPECT_EQ(payloads_of(first->messages()), std::vector<std::string>{"a"});

  // Iggy 0.8.0 turns a named consumer into XXH32(name): the numeric id sees the same offset.
  const uint32_t id = protocol::consumer_id_of_name("alice");
  const auto stored = admin_->get_consumer_offset(
      {.consumer = {protocol::ConsumerKind::consumer, Identifier::numeric(id)},
       .stream_id = Identifier::numeric(0),
       .topic_id = Identifier::numeric(0),
       .partition_id = 0});
  ASSERT_TRUE(stored.ok()) << error_name(stored.error());
  ASSERT_TRUE(stored->has_value());
  EXPECT_EQ((*stored)->stored_offset, 0u);
  const auto next = admin_->poll_messages(poll_request(id, 0, next_strategy(), 10, 0us));
  ASSERT_TRUE(next.ok()) << error_name(next.error());
  EXPECT_EQ(payloads_of(next->messages()), std::vector<std::string>{"b"});
}

TEST_F(HarkdCommands, StoringAnOffsetOnAnEmptyPartitionIsInvalidOffset) {
  create_stream_and_topic(1);
  protocol::StoreConsumerOffsetRequest store;
  store.consumer = {protocol::ConsumerKind::consumer, Identifier::numeric(1)};
  store.stream_id = Identifier::numeric(0);
  store.topic_id = Identifier::numeric(0);
  store.partition_id = 0;
  store.offset = 0;
  EXPECT_EQ(admin_->store_consumer_offset(store).error(), Error::invalid_offset);

  ASSERT_TRUE(send_text(0, "a").ok());
  EXPECT_TRUE(admin_->store_consumer_offset(store).ok());
  store.offset = 1;  // Past the last offset (0).
  EXPECT_EQ(admin_->store_consumer_offset(store).error(), Error::invalid_offset);

  const auto stored = admin_->get_consumer_offset({.consumer = store.consumer,
                                                   .stream_id = store.stream_id,
                                                   .topic_id = store.topic_id,
                                                   .partition_id = 0});
  ASSERT_TRUE(stored.ok()) << error_name(stored.error());
  ASSERT_TRUE(stored->has_value());
  EXPECT_EQ((*stored)->stored_offset, 0u);
  EXPECT_EQ((*stored)->current_offset, 0u);
}

TEST_F(HarkdCommands, AnUnknownPartitionIsPartitionNotFound) {
  create_stream_and_topic(2);
  const auto polled = admin_->poll_messages(poll_request(1, 2, next_strategy(), 1, 0us));
  EXPECT_EQ(polled.error(), Error::partition_not_found);
  EXPECT_EQ(send_text(*admin_, Partitioning::partition(2), "x").error(),
            Error::partition_not_found);
  // With a wait too: the error is answered at once, nothing parks.
  RawConnection connection;
  ASSERT_TRUE(connection.connect_and_login(address()));
  const PollOutcome waited =
      poll_outcome(connection.exchange(request_frame(poll_request(1, 2, next_strategy(), 1, 20s))));
  ASSERT_TRUE(waited.answered);
  EXPECT_EQ(waited.status, error_code(Error::partition_not_found));
}

TEST_F(HarkdCommands, CommandsBeforeLoginAreUnauthenticated) {
  client::Client anonymous;
  ASSERT_TRUE(anonymous.connect(address()).ok());
  EXPECT_TRUE(anonymous.ping().ok()) << "ping works before login";
  EXPECT_EQ(anonymous.get_streams().error(), Error::unauthenticated);
  EXPECT_EQ(anonymous.create_stream({.name = "x"}).error(), Error::unauthenticated);
  EXPECT_EQ(anonymous.poll_messages(poll_request(1, 0, next_strategy(), 1, 0us)).error(),
            Error::unauthenticated);
}

TEST_F(HarkdCommands, WrongCredentialsAreInvalidCredentials) {
  client::Client client;
  ASSERT_TRUE(client.connect(address()).ok());
  EXPECT_EQ(client.login("iggy", "wrong").error(), Error::invalid_credentials);
  EXPECT_EQ(client.login("nobody", "iggy").error(), Error::invalid_credentials);
  EXPECT_EQ(client.get_streams().error(), Error::unauthenticated);
  EXPECT_TRUE(client.login("iggy", "iggy").ok());
  EXPECT_TRUE(client.get_streams().ok());
}

TEST_F(HarkdCommands, UnsupportedCommandsAreFeatureUnavailable) {
  create_stream_and_topic(1);
  const auto snapshot = admin_->get_snapshot({.compression = 1, .snapshot_types = {100}});
  EXPECT_EQ(snapshot.error(), Error::feature_unavailable);
  EXPECT_TRUE(admin_->ping().ok()) << "the connection stays usable";
}

}  // namespace
}  // namespace hark::test
