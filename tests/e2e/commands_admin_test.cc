// Covers the rest of harkd's commands through the client library (2 shards): updates of
// streams and topics, partitions created and deleted, delete_segments, flush_unsaved_buffer,
// delete_consumer_offset, get_stats with real figures, get_me / get_client / get_clients across
// shards, get_cluster_metadata (one node; the configured layout with the cluster enabled),
// what stays unsupported (5), metadata read right after a create
// from connections on both shards, and that garbage or oversized frames on one connection do
// not disturb another.
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

class HarkdAdmin : public HarkdTest {
 protected:
  static protocol::GetTopicRequest topic_zero() {
    return {.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)};
  }
  uint32_t partitions_of_topic_zero() {
    const auto topic = admin_->get_topic(topic_zero());
    EXPECT_TRUE(topic.ok() && topic->has_value());
    return topic.ok() && topic->has_value() ? static_cast<uint32_t>((*topic)->partitions.size())
                                            : 0;
  }
};

TEST_F(HarkdAdmin, StreamsAndTopicsAreUpdated) {
  create_stream_and_topic(1);
  ASSERT_TRUE(admin_->create_stream({.name = "other"}).ok());
  EXPECT_TRUE(admin_->update_stream({.stream_id = Identifier::numeric(0), .name = "renamed"}).ok());
  EXPECT_EQ(admin_->update_stream({.stream_id = Identifier::numeric(0), .name = "other"}).error(),
            Error::stream_name_already_exists);
  const auto stream = admin_->get_stream({.stream_id = *Identifier::named("renamed")});
  ASSERT_TRUE(stream.ok() && stream->has_value());
  EXPECT_EQ((*stream)->stream.id, 0u);

  protocol::UpdateTopicRequest update;
  update.stream_id = Identifier::numeric(0);
  update.topic_id = Identifier::numeric(0);
  update.message_expiry = 5'000'000;
  update.max_topic_size = 1 << 30;
  update.name = "t2";
  EXPECT_TRUE(admin_->update_topic(update).ok());
  const auto topic = admin_->get_topic(
      {.stream_id = Identifier::numeric(0), .topic_id = *Identifier::named("t2")});
  ASSERT_TRUE(topic.ok() && topic->has_value());
  EXPECT_EQ((*topic)->topic.message_expiry, 5'000'000u);
  EXPECT_EQ((*topic)->topic.max_topic_size, 1u << 30);
  update.stream_id = Identifier::numeric(7);
  EXPECT_EQ(admin_->update_topic(update).error(), Error::stream_id_not_found);
}

TEST_F(HarkdAdmin, PartitionsAreCreatedAndDeleted) {
  create_stream_and_topic(1);
  EXPECT_TRUE(admin_
                  ->create_partitions({.stream_id = Identifier::numeric(0),
                                       .topic_id = Identifier::numeric(0),
                                       .partitions_count = 2})
                  .ok());
  EXPECT_EQ(partitions_of_topic_zero(), 3u);
  ASSERT_TRUE(send_text(2, "on the new partition").ok());
  EXPECT_TRUE(admin_
                  ->delete_partitions({.stream_id = Identifier::numeric(0),
                                       .topic_id = Identifier::numeric(0),
                                       .partitions_count = 2})
                  .ok());
  EXPECT_EQ(partitions_of_topic_zero(), 1u);
  EXPECT_EQ(send_text(2, "gone").error(), Error::partition_not_found);
  EXPECT_EQ(admin_
                ->delete_partitions({.stream_id = Identifier::numeric(0),
                                     .topic_id = Identifier::numeric(0),
                                     .partitions_count = 5})
                .error(),
            Error::invalid_partitions_count);
}

TEST_F(HarkdAdmin, SegmentsFlushAndOffsetsAreManaged) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_text(0, "one").ok());
  ASSERT_TRUE(send_text(0, "two").ok());
  EXPECT_TRUE(admin_
                  ->flush_unsaved_buffer({.stream_id = Identifier::numeric(0),
                                          .topic_id = Identifier::numeric(0),
                                          .partition_id = 0,
                                          .fsync = true})
                  .ok());
  EXPECT_EQ(admin_
                ->flush_unsaved_buffer({.stream_id = Identifier::numeric(0),
                                        .topic_id = Identifier::numeric(0),
                                        .partition_id = 4,
                                        .fsync = false})
                .error(),
            Error::partition_not_found);
  // The only segment is the active one: nothing is sealed, nothing deleted, messages stay.
  EXPECT_TRUE(admin_
                  ->delete_segments({.stream_id = Identifier::numeric(0),
                                     .topic_id = Identifier::numeric(0),
                                     .partition_id = 0,
                                     .segments_count = 1})
                  .ok());
  EXPECT_EQ(poll_now(poll_request(1, 0, offset_strategy(0), 10, 0us)).offsets,
            (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(admin_
                ->delete_segments({.stream_id = Identifier::numeric(0),
                                   .topic_id = Identifier::numeric(0),
                                   .partition_id = 9,
                                   .segments_count = 1})
                .error(),
            Error::partition_not_found);

  const protocol::Consumer consumer{.kind = protocol::ConsumerKind::consumer,
                                    .id = Identifier::numeric(5)};
  protocol::StoreConsumerOffsetRequest store;
  store.consumer = consumer;
  store.stream_id = Identifier::numeric(0);
  store.topic_id = Identifier::numeric(0);
  store.partition_id = 0;
  store.offset = 1;
  ASSERT_TRUE(admin_->store_consumer_offset(store).ok());
  const protocol::DeleteConsumerOffsetRequest remove{.consumer = consumer,
                                                     .stream_id = Identifier::numeric(0),
                                                     .topic_id = Identifier::numeric(0),
                                                     .partition_id = 0};
  EXPECT_TRUE(admin_->delete_consumer_offset(remove).ok());
  const auto stored = admin_->get_consumer_offset({.consumer = consumer,
                                                   .stream_id = Identifier::numeric(0),
                                                   .topic_id = Identifier::numeric(0),
                                                   .partition_id = 0});
  ASSERT_TRUE(stored.ok()) << error_name(stored.error());
  EXPECT_FALSE(stored->has_value());
  EXPECT_EQ(admin_->delete_consumer_offset(remove).error(), Error::consumer_offset_not_found);
}

TEST_F(HarkdAdmin, StatsReportTheCatalogMessagesAndProcess) {
  create_stream_and_topic(3);
  ASSERT_TRUE(admin_
                  ->create_consumer_group({.stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .name = "g"})
                  .ok());
  for (uint32_t i = 0; i < 5; i++) ASSERT_TRUE(send_text(i % 3, "m" + std::to_string(i)).ok());
  auto other = connect_client();
  const auto stats = admin_->get_stats();
  ASSERT_TRUE(stats.ok()) << error_name(stats.error());
  EXPECT_EQ(stats->process_id, static_cast<uint32_t>(harkd_.pid()));
  EXPECT_EQ(stats->streams_count, 1u);
  EXPECT_EQ(stats->topics_count, 1u);
  EXPECT_EQ(stats->partitions_count, 3u);
  EXPECT_GE(stats->segments_count, 3u);
  EXPECT_EQ(stats->messages_count, 5u);
  EXPECT_GT(stats->messages_size_bytes, 5u * 64);
  EXPECT_EQ(stats->consumer_groups_count, 1u);
  EXPECT_EQ(stats->clients_count, 2u);
  EXPECT_EQ(stats->threads_count, shards_count);
  EXPECT_GT(stats->memory_usage, 0u);
  EXPECT_GT(stats->total_memory, 0u);
  EXPECT_GT(stats->total_disk_space, 0u);
  EXPECT_GT(stats->start_time, 0u);
  EXPECT_EQ(stats->os_name, "Linux");
  EXPECT_FALSE(stats->server_version.empty());
}

TEST_F(HarkdAdmin, ClientsAreListedAcrossShards) {
  std::vector<std::unique_ptr<client::Client>> clients;
  for (int i = 0; i < 4; i++) clients.push_back(connect_client());
  const auto me = admin_->get_me();
  ASSERT_TRUE(me.ok()) << error_name(me.error());
  EXPECT_GT(me->client.client_id, 0u);
  EXPECT_EQ(me->client.user_id, 0u);
  EXPECT_EQ(me->client.transport, 1u);
  EXPECT_EQ(me->client.address.rfind("127.0.0.1:", 0), 0u) << me->client.address;

  const auto same = admin_->get_client({.client_id = me->client.client_id});
  ASSERT_TRUE(same.ok() && same->has_value());
  EXPECT_EQ((*same)->client, me->client);
  const auto unknown = admin_->get_client({.client_id = 999'999});
  ASSERT_TRUE(unknown.ok()) << error_name(unknown.error());
  EXPECT_FALSE(unknown->has_value());

  const auto all = clients.back()->get_clients();
  ASSERT_TRUE(all.ok()) << error_name(all.error());
  EXPECT_EQ(all->clients.size(), 5u);

  // Logged out: user u32::MAX. Closed: gone from the list.
  ASSERT_TRUE(clients[0]->logout().ok());
  clients[1]->close();
  size_t listed = 0;
  wait_until(
      [&] {
        const auto now = admin_->get_clients();
        EXPECT_TRUE(now.ok());
        listed = now.ok() ? now->clients.size() : 0;
        return listed == 4 || !now.ok();
      },
      at_once_bound, 10ms);
  EXPECT_EQ(listed, 4u);
}

TEST_F(HarkdAdmin, ClusterMetadataIsOneHealthyLeaderOnTheBoundPort) {
  const auto metadata = admin_->get_cluster_metadata();
  ASSERT_TRUE(metadata.ok()) << error_name(metadata.error());
  EXPECT_EQ(metadata->name, "single-node");
  ASSERT_EQ(metadata->nodes.size(), 1u);
  EXPECT_EQ(metadata->nodes[0].name, "hark-node");
  EXPECT_EQ(metadata->nodes[0].ip, "127.0.0.1");
  EXPECT_EQ(metadata->nodes[0].tcp_port, harkd_.port());
  EXPECT_EQ(metadata->nodes[0].role, 0u);
  EXPECT_EQ(metadata->nodes[0].status, 0u);
}

// harkd started as Iggy's SDK suites start Iggy: cluster enabled, the rest default.
class HarkdClusterLayout : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--cluster-enabled", "true", "--cluster-others",
                          "iggy-node-2@127.0.0.1:8091/8081/3001/8093,n3@10.0.0.3:1/2/3/4"};
    return options;
  }
};

TEST_F(HarkdClusterLayout, ClusterMetadataIsTheConfiguredLayoutWithThisNodeLeading) {
  const auto metadata = admin_->get_cluster_metadata();
  ASSERT_TRUE(metadata.ok()) << error_name(metadata.error());
  EXPECT_EQ(metadata->name, "iggy-cluster");
  ASSERT_EQ(metadata->nodes.size(), 3u);
  EXPECT_EQ(metadata->nodes[0], (protocol::ClusterNode{.name = "iggy-node-1",
                                                       .ip = "127.0.0.1",
                                                       .tcp_port = harkd_.port(),
                                                       .quic_port = 8080,
                                                       .http_port = 3000,
                                                       .websocket_port = 8092,
                                                       .role = 0,
                                                       .status = 0}));
  EXPECT_EQ(metadata->nodes[1], (protocol::ClusterNode{.name = "iggy-node-2",
                                                       .ip = "127.0.0.1",
                                                       .tcp_port = 8091,
                                                       .quic_port = 8081,
                                                       .http_port = 3001,
                                                       .websocket_port = 8093,
                                                       .role = 1,
                                                       .status = 0}));
  EXPECT_EQ(metadata->nodes[2].name, "n3");
  EXPECT_EQ(metadata->nodes[2].ip, "10.0.0.3");
  EXPECT_EQ(metadata->nodes[2].websocket_port, 4u);
  EXPECT_EQ(metadata->nodes[2].role, 1u);
}

TEST_F(HarkdAdmin, SnapshotsAreFeatureUnavailable) {
  EXPECT_EQ(admin_->get_snapshot({.compression = 1, .snapshot_types = {100}}).error(),
            Error::feature_unavailable);
  EXPECT_TRUE(admin_->ping().ok());
}

TEST_F(HarkdAdmin, MetadataIsReadRightAfterACreateFromEveryConnection) {
  // With 2 shards, 8 connections land on both (SO_REUSEPORT spreads them).
  std::vector<std::unique_ptr<client::Client>> readers;
  for (int i = 0; i < 8; i++) readers.push_back(connect_client());
  for (uint32_t round = 0; round < 5; round++) {
    const std::string name = "stream-" + std::to_string(round);
    const auto created = admin_->create_stream({.name = name});
    ASSERT_TRUE(created.ok()) << error_name(created.error());
    protocol::CreateTopicRequest topic;
    topic.stream_id = Identifier::numeric(created->id);
    topic.partitions_count = 2;
    topic.name = "t";
    ASSERT_TRUE(admin_->create_topic(topic).ok());
    for (auto& reader : readers) {
      const auto read = reader->get_topic(
          {.stream_id = *Identifier::named(name), .topic_id = *Identifier::named("t")});
      ASSERT_TRUE(read.ok()) << error_name(read.error());
      ASSERT_TRUE(read->has_value()) << "a connection did not see the topic just created";
      EXPECT_EQ((*read)->partitions.size(), 2u);
    }
  }
}

TEST_F(HarkdAdmin, GarbageAndOversizedFramesDoNotDisturbAnotherConnection) {
  create_stream_and_topic(1);
  AsyncPoll parked(address(), poll_request(1, 0, next_strategy(), 10, 20s));
  auto healthy = connect_client();

  RawConnection garbage;
  ASSERT_TRUE(garbage.connect(address()));
  const protocol::Bytes short_length = bytes_of(std::string("\x02\x00\x00\x00\xff\xff\xff\xff", 8));
  const auto rejected = garbage.exchange(short_length);
  ASSERT_TRUE(rejected.has_value());
  EXPECT_EQ(rejected->status, error_code(Error::invalid_command));

  RawConnection oversized;
  ASSERT_TRUE(oversized.connect_and_login(address()));
  protocol::Bytes huge = bytes_of(std::string(8, '\0'));
  const uint32_t length = 4 + 11 * 1024 * 1024;  // Over the 10 MiB control cap.
  std::memcpy(huge.data(), &length, 4);
  const uint32_t code = 202;
  std::memcpy(huge.data() + 4, &code, 4);
  const auto too_big = oversized.exchange(huge);
  ASSERT_TRUE(too_big.has_value());
  EXPECT_EQ(too_big->status, error_code(Error::invalid_command));

  EXPECT_TRUE(healthy->ping().ok());
  EXPECT_TRUE(healthy->get_streams().ok());
  EXPECT_TRUE(wait_until_parked(harkd_, 1)) << "the poll is still parked";
  EXPECT_FALSE(parked.answered());
  ASSERT_TRUE(send_text(*healthy, protocol::Partitioning::partition(0), "still fine").ok());
  const PollOutcome& outcome = parked.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.payloads, (std::vector<std::string>{"still fine"}));
}

TEST_F(HarkdAdmin, SigusrOneLogsOneStatsLine) {
  harkd_.signal(SIGUSR1);
  std::string tail;
  wait_until(
      [&] {
        tail = harkd_.stderr_tail(10);
        return tail.find("stats: connections=1 ") != std::string::npos;
      },
      at_once_bound, 20ms);
  EXPECT_NE(tail.find("stats: connections=1 parked_now=0"), std::string::npos) << tail;
  EXPECT_TRUE(admin_->ping().ok()) << "harkd keeps running";
}

}  // namespace
}  // namespace hark::test
