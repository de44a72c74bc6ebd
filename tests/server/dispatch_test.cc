// Covers the pure request/response mapping of harkd (server/dispatch.h): Iggy's login rules,
// identifiers, named consumers and message keys hashed with XXH32 as 0.8.0 does, the poll's
// wait in microseconds (huge values saturate), results → responses (counts as sent), and
// get_cluster_metadata with the cluster layout disabled and enabled (Iggy's default layout).
#include "hark/server/dispatch.h"

#include <chrono>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "hark/protocol/hash.h"
#include "hark/server/cluster/cluster_view.h"

namespace hark::server {
namespace {

std::span<const std::byte> bytes_of(std::string_view text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

struct TestPoll final : core::Poll {
  void done() override {}
};

TEST(CheckCredentials, FollowIggysLengthRules) {
  EXPECT_TRUE(check_username("iggy").ok());
  EXPECT_EQ(check_username("ig").error(), Error::invalid_username);
  EXPECT_EQ(check_username(std::string(51, 'u')).error(), Error::invalid_username);
  EXPECT_TRUE(check_username(std::string(50, 'u')).ok());
  EXPECT_TRUE(check_password("abc").ok());
  EXPECT_EQ(check_password("ig").error(), Error::invalid_password);
  EXPECT_EQ(check_password(std::string(101, 'p')).error(), Error::invalid_password);
  EXPECT_TRUE(check_password(std::string(100, 'p')).ok());
  EXPECT_EQ(check_token_name("ab").error(), Error::invalid_personal_access_token_name);
  EXPECT_EQ(check_token_name(std::string(31, 't')).error(),
            Error::invalid_personal_access_token_name);
  EXPECT_TRUE(check_token_name(std::string(30, 't')).ok());
}

TEST(NameOrIdOf, KeepsNumbersAndNames) {
  const core::NameOrId number = *name_or_id(protocol::Identifier::numeric(7));
  EXPECT_TRUE(number.is_id());
  EXPECT_EQ(number.number(), 7u);
  const core::NameOrId name = *name_or_id(*protocol::Identifier::named("orders"));
  EXPECT_FALSE(name.is_id());
  EXPECT_EQ(name.text(), "orders");
}

TEST(FillConsumer, HashesNamedConsumersAndNamesGroups) {
  core::ConsumerRef ref;
  core::NameOrId group;
  const protocol::Consumer named{protocol::ConsumerKind::consumer,
                                 *protocol::Identifier::named("iggy")};
  ASSERT_TRUE(fill_consumer(named, ref, group).ok());
  EXPECT_EQ(ref.id, 0x96377a10u);  // XXH32("iggy"), as in tests/protocol/hash_test.cc.
  EXPECT_EQ(ref.kind, core::ConsumerRef::Kind::consumer);

  const protocol::Consumer numbered{protocol::ConsumerKind::group,
                                    protocol::Identifier::numeric(3)};
  ASSERT_TRUE(fill_consumer(numbered, ref, group).ok());
  EXPECT_EQ(ref.kind, core::ConsumerRef::Kind::group);
  EXPECT_TRUE(group.is_id());
  EXPECT_EQ(group.number(), 3u);

  const protocol::Consumer grouped{protocol::ConsumerKind::group,
                                   *protocol::Identifier::named("workers")};
  ASSERT_TRUE(fill_consumer(grouped, ref, group).ok());
  EXPECT_EQ(ref.kind, core::ConsumerRef::Kind::group);
  EXPECT_EQ(group.text(), "workers");  // The broker resolves the name to the group's id.
}

TEST(PartitioningOf, MapsEveryKindAndHashesKeys) {
  EXPECT_EQ(partitioning(protocol::Partitioning::balanced()).kind,
            core::Partitioning::Kind::balanced);
  const core::Partitioning fixed = partitioning(protocol::Partitioning::partition(2));
  EXPECT_EQ(fixed.kind, core::Partitioning::Kind::partition);
  EXPECT_EQ(fixed.value, 2u);
  const core::Partitioning keyed =
      partitioning(*protocol::Partitioning::messages_key(bytes_of("hello")));
  EXPECT_EQ(keyed.kind, core::Partitioning::Kind::key_hash);
  EXPECT_EQ(keyed.value, 0xfb0077f9u);  // XXH32("hello"); the broker takes it mod the count.
}

TEST(FillPoll, CarriesEveryFieldAndTheWaitInMicroseconds) {
  protocol::PollMessagesRequest request;
  request.consumer = {protocol::ConsumerKind::consumer, *protocol::Identifier::named("reader")};
  request.stream_id = protocol::Identifier::numeric(1);
  request.topic_id = *protocol::Identifier::named("events");
  request.partition_id = 4;
  request.strategy = {protocol::PollingKind::timestamp, 1234};
  request.count = 10;
  request.auto_commit = true;
  request.wait_timeout_us = 2500;
  TestPoll poll;
  ASSERT_TRUE(fill_poll(request, /*client_id=*/9, std::chrono::seconds(7), poll).ok());
  EXPECT_EQ(poll.stream.number(), 1u);
  EXPECT_EQ(poll.member, 9u);
  EXPECT_EQ(poll.topic.text(), "events");
  EXPECT_EQ(poll.partition, 4u);
  EXPECT_EQ(poll.consumer.id, protocol::consumer_id_of_name("reader"));
  EXPECT_EQ(poll.from, core::PollFrom::timestamp);
  EXPECT_EQ(poll.value, 1234u);
  EXPECT_EQ(poll.count, 10u);
  EXPECT_EQ(poll.wait, std::chrono::microseconds(2500));
  EXPECT_EQ(poll.min_messages, 1u);
}

TEST(FillPoll, AHugeWaitSaturatesInsteadOfOverflowing) {
  protocol::PollMessagesRequest request;
  request.wait_timeout_us = UINT64_MAX;
  TestPoll poll;
  ASSERT_TRUE(fill_poll(request, 1, Duration(0), poll).ok());
  EXPECT_EQ(poll.wait, Duration::max());
  request.wait_timeout_us = 0;
  ASSERT_TRUE(fill_poll(request, 1, Duration(0), poll).ok());
  EXPECT_EQ(poll.wait, Duration(0));
}

TEST(FillPoll, OnlyAClassicPollTakesTheClassicWait) {
  protocol::PollMessagesRequest request;
  TestPoll poll;
  ASSERT_TRUE(fill_poll(request, 1, std::chrono::seconds(2), poll).ok());
  EXPECT_EQ(poll.wait, std::chrono::seconds(2));
  request.wait_timeout_us = 0;  // Sent: "answer at once", whatever the server's default.
  ASSERT_TRUE(fill_poll(request, 1, std::chrono::seconds(2), poll).ok());
  EXPECT_EQ(poll.wait, Duration(0));
}

TEST(Responses, DetailsStateTheCountsTheyCarry) {
  core::TopicDetails details;
  details.topic.id = 3;
  details.topic.name = "events";
  details.topic.settings.partitions_count = 9;  // Whatever it says, two follow.
  details.partitions.resize(2);
  details.partitions[1].id = 1;
  details.partitions[1].current_offset = 41;
  const protocol::TopicDetailsResponse response = topic_details_response(details);
  EXPECT_EQ(response.topic.id, 3u);
  EXPECT_EQ(response.topic.name, "events");
  EXPECT_EQ(response.topic.partitions_count, 2u);
  ASSERT_EQ(response.partitions.size(), 2u);
  EXPECT_EQ(response.partitions[1].current_offset, 41u);

  core::StreamDetails stream;
  stream.stream.name = "orders";
  stream.topics.resize(1);
  EXPECT_EQ(stream_details_response(stream).stream.topics_count, 1u);
}

TEST(Responses, PollHeaderReportsPartitionOffsetAndCount) {
  core::PollResult result;
  result.partition_id = 2;
  result.current_offset = 17;
  const protocol::PollResponseHeader header = poll_header(result);
  EXPECT_EQ(header.partition_id, 2u);
  EXPECT_EQ(header.current_offset, 17u);
  EXPECT_EQ(header.messages_count, 0u);
}

TEST(ClusterMetadata, DisabledIsOneLeaderOnTheAdvertisedOrBoundAddress) {
  ServerOptions options;
  options.bound_address = "127.0.0.1:18090";
  const protocol::ClusterMetadataResponse bound = cluster_metadata_response(options);
  EXPECT_EQ(bound.name, "single-node");
  ASSERT_EQ(bound.nodes.size(), 1u);
  EXPECT_EQ(bound.nodes[0],
            (protocol::ClusterNode{.name = "hark-node", .ip = "127.0.0.1", .tcp_port = 18090}));
  options.advertised_address = "[::1]:9000";
  const protocol::ClusterMetadataResponse advertised = cluster_metadata_response(options);
  ASSERT_EQ(advertised.nodes.size(), 1u);
  EXPECT_EQ(advertised.nodes[0].ip, "::1");
  EXPECT_EQ(advertised.nodes[0].tcp_port, 9000u);
}

// Iggy's Node SDK (e2e/tcp.cluster.e2e.ts) expects exactly this from Iggy 0.8.0's default
// config with IGGY_CLUSTER_ENABLED=true and the server on port 8090.
TEST(ClusterMetadata, EnabledWithDefaultsIsIggysDefaultTwoNodeLayout) {
  ServerOptions options;
  options.cluster_enabled = true;
  options.bound_address = "127.0.0.1:8090";
  const protocol::ClusterMetadataResponse metadata = cluster_metadata_response(options);
  EXPECT_EQ(metadata.name, "iggy-cluster");
  const std::vector<protocol::ClusterNode> expected = {
      {.name = "iggy-node-1",
       .ip = "127.0.0.1",
       .tcp_port = 8090,
       .quic_port = 8080,
       .http_port = 3000,
       .websocket_port = 8092,
       .role = 0,
       .status = 0},
      {.name = "iggy-node-2",
       .ip = "127.0.0.1",
       .tcp_port = 8091,
       .quic_port = 8081,
       .http_port = 3001,
       .websocket_port = 8093,
       .role = 1,
       .status = 0},
  };
  EXPECT_EQ(metadata.nodes, expected);
}

TEST(ClusterMetadata, EnabledReportsTheConfiguredNodeAndPeers) {
  ServerOptions options;
  options.cluster_enabled = true;
  options.bound_address = "0.0.0.0:7000";
  options.advertised_address = "203.0.113.5:7100";
  options.cluster_name = "c";
  options.cluster_node_name = "a";
  options.cluster_node_ip = "203.0.113.5";
  options.cluster_node_ports = {};
  options.cluster_others = {};
  const protocol::ClusterMetadataResponse alone = cluster_metadata_response(options);
  EXPECT_EQ(alone.name, "c");
  ASSERT_EQ(alone.nodes.size(), 1u);
  EXPECT_EQ(alone.nodes[0],
            (protocol::ClusterNode{.name = "a", .ip = "203.0.113.5", .tcp_port = 7100}));
}

// Cluster mode: this node leads in its own answer, unless it drains (then the lowest live
// member that does not), so SDKs that redirect to the Leader move off a draining node.
TEST(ClusterMetadata, ADrainingNodeNamesAnotherMemberLeader) {
  ServerOptions options;
  options.etcd_endpoints = {"http://127.0.0.1:2379"};
  options.node_id = 2;
  options.cluster_name = "c";
  auto view = make_ref<cluster::ClusterView>();
  view->self = 2;
  view->registered = true;
  for (uint32_t id = 1; id <= 3; id++) {
    view->nodes.push_back({.id = id, .client_address = "10.0.0." + std::to_string(id) + ":8090"});
  }
  const auto leaders = [&] {
    std::vector<std::string> names;
    for (const protocol::ClusterNode& node : cluster_metadata_response(options, view.get()).nodes) {
      if (node.role == 0) names.push_back(node.name);  // 0: Leader, 1: Follower (as above).
    }
    return names;
  };
  EXPECT_EQ(leaders(), std::vector<std::string>{"hark-node-2"});
  view->draining = {2};
  EXPECT_EQ(leaders(), std::vector<std::string>{"hark-node-1"});
  view->draining = {1, 2};
  EXPECT_EQ(leaders(), std::vector<std::string>{"hark-node-3"});
  view->draining = {1, 2, 3};
  EXPECT_EQ(leaders(), std::vector<std::string>{"hark-node-2"});
}

}  // namespace
}  // namespace hark::server
