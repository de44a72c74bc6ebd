// Forwarding over node links between three real harkd (tests/cluster/local_cluster.h): a send
// via node 1 for a partition node 3 owns is read back via nodes 2 and 3; balanced sends are
// resolved at the entry node; a poll parked via node 2 at owner 3 is woken by a send via node
// 1 (asserted by node 3's parked/woken counters, not by time), and cancelled there when its
// client goes away at node 2; the owner SIGKILLed: sends to
// its partitions get shard_communication_error (11001), polls on them wait to their deadline
// and answer empty, other partitions keep working, and after a restart its partitions work
// again. Sockets on a node's link port that send a client command, garbage or a wrong
// secret's handshake are closed and counted, and the real links keep forwarding. With mutual
// TLS on the links (cluster.tls_*, certificates from a TestCa made at run time) a send is
// forwarded and a parked poll woken; a plain-TCP peer on the link port is closed and counted
// (link_tls_failures); a node whose certificate another CA signed never gets a link up while
// the others forward. A node opens only the partitions assigned to it (the others' directories
// never exist in its data directory), and a purge through a node that owns none of a topic's
// partitions empties them at their owners. The stream
// and topic (ids 0/0) are created via node 1 only: metadata lives in etcd, and CreateTopic asks
// for the partitions' assignments (docs/cluster.md §Metadata).
// Label cluster (release stage only): one etcd, three harkd, a few seconds each.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>

#include <gtest/gtest.h>
#include <sys/socket.h>

#include "hark/io/socket.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/system_requests.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_gateway.h"
#include "hark/server/cluster/link_protocol.h"
#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/wait_until.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using protocol::Identifier;

constexpr uint32_t partitions = 3;

class HarkdForwarding : public ::testing::Test {
 protected:
  virtual LocalCluster::Options options() const { return {.extra_args = single_replica_args}; }

  void SetUp() override {
    ASSERT_EQ(cluster_.start(options()), "");
    ASSERT_EQ(cluster_.connect_all(clients_), "");
    // Created once every node is a member, so each owns one of the three partitions.
    ASSERT_TRUE(cluster_.wait_for_all_members());
    create_topic(1);
    // Every node's view holds the three nodes and the three assignments.
    for (uint32_t id = 1; id <= 3; id++) {
      ASSERT_TRUE(wait_for_stats(cluster_.node(id), [](const HarkdStats& stats) {
        return stats.view_assignments == partitions && stats.view_nodes == 3;
      })) << cluster_.node(id).stderr_tail();
    }
    read_owners();
  }

  // Every node stops cleanly (exit 0: links, forwarded requests and tables torn down in
  // order; under ASan, without a report).
  void TearDown() override { EXPECT_EQ(cluster_.stop_all(), ""); }

  void create_topic(uint32_t id) {
    ASSERT_TRUE(clients_[id]->create_stream({.name = "s"}).ok());
    protocol::CreateTopicRequest topic;
    topic.stream_id = Identifier::numeric(0);
    topic.partitions_count = partitions;
    topic.name = "t";
    ASSERT_TRUE(clients_[id]->create_topic(topic).ok());
  }

  void read_owners() {
    for (uint32_t p = 0; p < partitions; p++) {
      owner_of_[p] = cluster_.owner_of(0, 0, p);
      ASSERT_NE(owner_of_[p], 0u) << p;
    }
  }

  // A partition `node` owns (the controller spreads three over three nodes: one each).
  uint32_t owned_by(uint32_t node) const {
    for (const auto& [p, owner] : owner_of_) {
      if (owner == node) return p;
    }
    ADD_FAILURE() << "node " << node << " owns no partition";
    return 0;
  }

  Status send(uint32_t via, std::optional<uint32_t> partition, std::string_view text) {
    const protocol::Bytes payload = bytes_of(text);
    const protocol::OutgoingMessage message{.payload = payload};
    return clients_[via]->send_messages(
        {.stream_id = Identifier::numeric(0),
         .topic_id = Identifier::numeric(0),
         .partitioning = partition ? protocol::Partitioning::partition(*partition)
                                   : protocol::Partitioning::balanced()},
        std::span(&message, 1));
  }

  Result<std::vector<std::string>> read(uint32_t via, uint32_t partition,
                                        std::chrono::microseconds wait = 0us) {
    auto polled =
        clients_[via]->poll_messages(poll_request(1, partition, offset_strategy(0), 10, wait));
    if (!polled.ok()) return polled.error();
    return payloads_of(polled->messages());
  }

  LocalCluster cluster_;
  std::map<uint32_t, std::unique_ptr<client::Client>> clients_;
  std::map<uint32_t, uint32_t> owner_of_;
};

TEST_F(HarkdForwarding, SendViaOneNodeIsReadViaTheOthers) {
  const uint32_t p = owned_by(3);
  ASSERT_TRUE(send(1, p, "hello").ok());
  for (const uint32_t via : {1u, 2u, 3u}) {
    const auto read_back = read(via, p);
    ASSERT_TRUE(read_back.ok()) << via << ": " << error_name(read_back.error());
    EXPECT_EQ(*read_back, std::vector<std::string>{"hello"}) << "via node " << via;
  }
  EXPECT_GE(cluster_.node(1).stats()->forwarded, 1u);
  EXPECT_GE(cluster_.node(3).stats()->forwarded_executed, 3u);  // 1's send, 1's and 2's polls.
  // Balanced sends are resolved at the entry node: three land on the three partitions.
  for (int i = 0; i < 3; i++) ASSERT_TRUE(send(2, std::nullopt, "b").ok());
  size_t balanced = 0;
  for (uint32_t q = 0; q < partitions; q++) {
    const auto read_back = read(1, q);
    ASSERT_TRUE(read_back.ok());
    for (const std::string& text : *read_back) balanced += text == "b" ? 1 : 0;
  }
  EXPECT_EQ(balanced, 3u);
  // Offsets stored via one node are read via another (they live at the owner).
  ASSERT_TRUE(clients_[2]
                  ->store_consumer_offset({.consumer = {.id = Identifier::numeric(7)},
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = p,
                                           .offset = 0})
                  .ok());
  const auto offset = clients_[1]->get_consumer_offset({.consumer = {.id = Identifier::numeric(7)},
                                                        .stream_id = Identifier::numeric(0),
                                                        .topic_id = Identifier::numeric(0),
                                                        .partition_id = p});
  ASSERT_TRUE(offset.ok() && offset->has_value());
  EXPECT_EQ((*offset)->stored_offset, 0u);
}

// A blocking socket to `address` with a receive timeout; -1 on failure.
int dial(const std::string& address) {
  const auto parsed = io::parse_address(address);
  if (!parsed.ok()) return -1;
  const int fd = ::socket(parsed->storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval timeout{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&parsed->storage), parsed->length) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool write_all(int fd, std::span<const std::byte> bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Reads until the node closes the socket (true) or the receive times out (false); what was
// read is appended to `received`.
bool closed_by_node(int fd, protocol::Bytes* received = nullptr) {
  std::array<std::byte, 4096> buffer{};
  while (true) {
    const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (got == 0 || (got < 0 && errno == ECONNRESET)) return true;
    if (got < 0) return false;
    if (received != nullptr)
      received->insert(received->end(), buffer.begin(), buffer.begin() + got);
  }
}

TEST_F(HarkdForwarding, HostileLinkPeersAreClosedAndForwardingGoesOn) {
  const std::string address = cluster_.link_address(3);
  ASSERT_FALSE(address.empty());
  const uint64_t refused = cluster_.node(3).stats()->link_handshakes_refused;
  // A client command on the link port.
  int fd = dial(address);
  ASSERT_GE(fd, 0);
  protocol::Bytes ping;
  ASSERT_TRUE(protocol::encode_request(protocol::PingRequest{}, ping).ok());
  ASSERT_TRUE(write_all(fd, ping));
  EXPECT_TRUE(closed_by_node(fd));
  ::close(fd);
  // Garbage.
  fd = dial(address);
  const protocol::Bytes garbage(16, std::byte{0xff});
  ASSERT_TRUE(write_all(fd, garbage));
  EXPECT_TRUE(closed_by_node(fd));
  ::close(fd);
  // A wrong secret: the node's proof does not verify here, and a forged proof is refused there.
  fd = dial(address);
  const std::string wrong(40, 'w');
  server::cluster::LinkDialer dialer(
      {.secret = wrong, .cluster = "e2e", .node = 9, .incarnation = 1}, 0, 3,
      server::cluster::random_nonce());
  protocol::Bytes hello;
  dialer.hello(hello);
  ASSERT_TRUE(write_all(fd, hello));
  protocol::Bytes challenge(4 + 1 + 4 + 8 + 32 + 32);
  ASSERT_EQ(::recv(fd, challenge.data(), challenge.size(), MSG_WAITALL),
            static_cast<ssize_t>(challenge.size()));
  const auto frame = server::cluster::scan_link_frame(challenge, 1024);
  ASSERT_EQ(frame.state, server::cluster::LinkScanState::ready);
  protocol::Bytes proof;
  EXPECT_EQ(dialer.on_challenge(frame, proof).error(), Error::unauthenticated);
  proof = {std::byte{33}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{3}};
  proof.resize(proof.size() + 32);
  ASSERT_TRUE(write_all(fd, proof));
  EXPECT_TRUE(closed_by_node(fd));
  ::close(fd);
  EXPECT_TRUE(wait_for_stats(cluster_.node(3), [&](const HarkdStats& stats) {
    return stats.link_handshakes_refused >= refused + 3;
  }));
  // The links between the nodes were not touched.
  const uint32_t p = owned_by(3);
  ASSERT_TRUE(send(1, p, "still").ok());
  EXPECT_EQ(*read(2, p), std::vector<std::string>{"still"});
}

TEST_F(HarkdForwarding, PollParkedViaNodeTwoIsWokenBySendViaNodeOne) {
  const uint32_t p = owned_by(3);
  const HarkdStats before = *cluster_.node(3).stats();
  auto poll = std::async(std::launch::async, [&] { return read(2, p, 20s); });
  // Parked at the owner, not at the entry node.
  ASSERT_TRUE(wait_for_stats(cluster_.node(3), [&](const HarkdStats& stats) {
    return stats.parked_now == before.parked_now + 1;
  }));
  ASSERT_TRUE(send(1, p, "wake").ok());
  const auto woken = poll.get();
  ASSERT_TRUE(woken.ok()) << error_name(woken.error());
  EXPECT_EQ(*woken, std::vector<std::string>{"wake"});
  EXPECT_EQ(cluster_.node(3).stats()->woken, before.woken + 1);
  EXPECT_EQ(cluster_.node(2).stats()->parked, 0u);  // The entry parked nothing itself.
}

TEST_F(HarkdForwarding, AClientGoneAtTheEntryCancelsItsPollAtTheOwner) {
  const uint32_t p = owned_by(3);
  const HarkdStats before = *cluster_.node(3).stats();
  RawConnection client;
  ASSERT_TRUE(client.connect_and_login(cluster_.node(2).address()));
  ASSERT_TRUE(client.send(request_frame(poll_request(1, p, offset_strategy(0), 1, 20s))));
  ASSERT_TRUE(wait_for_stats(cluster_.node(3), [&](const HarkdStats& stats) {
    return stats.parked_now == before.parked_now + 1;
  }));
  client.close();
  EXPECT_TRUE(wait_for_stats(cluster_.node(3), [&](const HarkdStats& stats) {
    return stats.parked_now == before.parked_now && stats.cancelled == before.cancelled + 1;
  }));
}

// hark's notifications name a partition: parked at its owner (its parked counter), woken there
// by a send through a third node, and the owner's answer reaches the client at the entry.
TEST_F(HarkdForwarding, WaitForMessagesViaNodeTwoIsWokenAtOwnerThreeBySendViaNodeOne) {
  const uint32_t p = owned_by(3);
  const HarkdStats before = *cluster_.node(3).stats();
  auto waited = std::async(std::launch::async, [&] {
    return clients_[2]->wait_for_messages({.consumer = {.id = Identifier::numeric(5)},
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = p,
                                           .strategy = offset_strategy(0),
                                           .wait_timeout_us = 20'000'000});
  });
  ASSERT_TRUE(wait_for_stats(cluster_.node(3), [&](const HarkdStats& stats) {
    return stats.parked_now == before.parked_now + 1;
  }));
  EXPECT_EQ(cluster_.node(2).stats()->parked, 0u);  // Not parked at the entry.
  ASSERT_TRUE(send(1, p, "ready").ok());
  const auto answer = waited.get();
  ASSERT_TRUE(answer.ok()) << error_name(answer.error());
  ASSERT_EQ(answer->partitions.size(), 1u);
  EXPECT_EQ(answer->partitions[0].partition_id, p);
  EXPECT_EQ(answer->partitions[0].next_offset, 1u);
  EXPECT_EQ(cluster_.node(3).stats()->woken, before.woken + 1);
  // A lag watch on the same partition is served there too: 1 message, nothing stored.
  const auto lag = clients_[1]->wait_for_lag({.consumer = {.id = Identifier::numeric(5)},
                                              .stream_id = Identifier::numeric(0),
                                              .topic_id = Identifier::numeric(0),
                                              .partition_id = p,
                                              .wait_timeout_us = 0,
                                              .watch = protocol::LagWatch::above,
                                              .threshold = 1});
  ASSERT_TRUE(lag.ok() && lag->has_value()) << error_name(lag.error());
  EXPECT_EQ((*lag)->total_lag, 1u);
}

// DeleteConsumerOffset via a node that does not own the partition deletes it at the owner:
// read back via the owner itself, and a second delete is the owner's 3021.
TEST_F(HarkdForwarding, DeleteConsumerOffsetViaANonOwnerTakesEffectAtTheOwner) {
  const uint32_t p = owned_by(3);
  ASSERT_TRUE(send(1, p, "m").ok());
  const protocol::Consumer consumer{.id = Identifier::numeric(8)};
  ASSERT_TRUE(clients_[3]
                  ->store_consumer_offset({.consumer = consumer,
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = p,
                                           .offset = 0})
                  .ok());
  const protocol::DeleteConsumerOffsetRequest remove{.consumer = consumer,
                                                     .stream_id = Identifier::numeric(0),
                                                     .topic_id = Identifier::numeric(0),
                                                     .partition_id = p};
  const uint64_t executed = cluster_.node(3).stats()->forwarded_executed;
  ASSERT_TRUE(clients_[1]->delete_consumer_offset(remove).ok());
  EXPECT_EQ(cluster_.node(3).stats()->forwarded_executed, executed + 1);
  const auto offset = clients_[3]->get_consumer_offset({.consumer = consumer,
                                                        .stream_id = Identifier::numeric(0),
                                                        .topic_id = Identifier::numeric(0),
                                                        .partition_id = p});
  ASSERT_TRUE(offset.ok());
  EXPECT_FALSE(offset->has_value());
  EXPECT_EQ(clients_[2]->delete_consumer_offset(remove).error(), Error::consumer_offset_not_found);
}

TEST_F(HarkdForwarding, DeadOwnerIsUnavailableUntilItReturns) {
  const uint32_t dead = owned_by(3);
  const uint32_t alive = owned_by(2);
  cluster_.kill(3);
  ASSERT_TRUE(wait_for_stats(cluster_.node(1),
                             [](const HarkdStats& stats) { return stats.view_nodes == 2; }));
  EXPECT_EQ(send(1, dead, "lost").error(), Error::shard_communication_error);
  // A poll on it waits to its deadline and answers empty (never an error).
  const HarkdStats before = *cluster_.node(2).stats();
  const auto waited = read(2, dead, 200ms);
  ASSERT_TRUE(waited.ok()) << error_name(waited.error());
  EXPECT_TRUE(waited->empty());
  EXPECT_GT(cluster_.node(2).stats()->forward_unavailable, before.forward_unavailable);
  // Everything else keeps working.
  ASSERT_TRUE(send(1, alive, "kept").ok());
  EXPECT_EQ(*read(2, alive), std::vector<std::string>{"kept"});
  // Back: its partitions work again through the other nodes.
  ASSERT_EQ(cluster_.restart(3), "");
  ASSERT_TRUE(wait_for_stats(cluster_.node(1),
                             [](const HarkdStats& stats) { return stats.view_nodes == 3; }));
  ASSERT_TRUE(wait_until([&] { return send(1, dead, "again").ok(); }, 10s));
  const auto after = read(2, dead);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->back(), "again");
}

// The same cluster with mutual TLS on every link (cluster.tls_*, docs/cluster.md §Trust): the
// link handshake runs inside TLS, forwarding and waking work unchanged.
class HarkdLinkTls : public HarkdForwarding {
 protected:
  LocalCluster::Options options() const override {
    return {.extra_args = single_replica_args, .link_tls = true};
  }
};

TEST_F(HarkdLinkTls, ASendIsForwardedAndAParkedPollWokenOverMutualTls) {
  const uint32_t p = owned_by(3);
  const HarkdStats before = *cluster_.node(3).stats();
  auto poll = std::async(std::launch::async, [&] { return read(2, p, 20s); });
  ASSERT_TRUE(wait_for_stats(cluster_.node(3), [&](const HarkdStats& stats) {
    return stats.parked_now == before.parked_now + 1;
  })) << cluster_.node(3).stderr_tail();
  ASSERT_TRUE(send(1, p, "wake").ok());
  const auto woken = poll.get();
  ASSERT_TRUE(woken.ok()) << error_name(woken.error());
  EXPECT_EQ(*woken, std::vector<std::string>{"wake"});
  EXPECT_EQ(cluster_.node(3).stats()->woken, before.woken + 1);
  EXPECT_EQ(cluster_.node(3).stats()->forwarded_executed, before.forwarded_executed + 2);
  // Links from node 1 and node 2 came up at node 3, through TLS, with no failure anywhere.
  EXPECT_GE(cluster_.node(3).stats()->links_up, 2u);
  for (uint32_t id = 1; id <= 3; id++) {
    EXPECT_EQ(cluster_.node(id).stats()->link_tls_failures, 0u) << id;
  }
}

TEST_F(HarkdLinkTls, APlainTcpPeerOnTheLinkPortIsClosedAndCounted) {
  const std::string address = cluster_.link_address(3);
  ASSERT_FALSE(address.empty());
  const HarkdStats before = *cluster_.node(3).stats();
  // The link handshake's hello in clear: not a TLS record.
  const int fd = dial(address);
  ASSERT_GE(fd, 0);
  server::cluster::LinkDialer dialer(
      {.secret = std::string(40, 's'), .cluster = "e2e", .node = 1, .incarnation = 1}, 0, 3,
      server::cluster::random_nonce());
  protocol::Bytes hello;
  dialer.hello(hello);
  ASSERT_TRUE(write_all(fd, hello));
  protocol::Bytes received;
  EXPECT_TRUE(closed_by_node(fd, &received));
  ::close(fd);
  EXPECT_TRUE(wait_for_stats(cluster_.node(3), [&](const HarkdStats& stats) {
    return stats.link_tls_failures == before.link_tls_failures + 1 &&
           stats.link_handshakes_refused == before.link_handshakes_refused + 1;
  }));
  // No challenge came back: only TLS alerts (record type 21), if anything.
  EXPECT_TRUE(received.empty() || received[0] == std::byte{21}) << received.size();
  const uint32_t p = owned_by(3);
  ASSERT_TRUE(send(1, p, "still").ok());
  EXPECT_EQ(*read(2, p), std::vector<std::string>{"still"});
}

// Node 3's certificate, and the CA it trusts, come from another CA: no link with it comes up,
// either way; each failed handshake is counted and logged; nodes 1 and 2 forward to each other.
class HarkdLinkTlsOtherCa : public HarkdForwarding {
 protected:
  LocalCluster::Options options() const override {
    return {.extra_args = single_replica_args, .link_tls = true, .link_tls_other_ca = {3}};
  }
};

TEST_F(HarkdLinkTlsOtherCa, ANodeOfAnotherCaNeverGetsALinkWhileTheOthersWork) {
  ASSERT_TRUE(send(1, owned_by(2), "fine").ok());
  EXPECT_EQ(*read(1, owned_by(2)), std::vector<std::string>{"fine"});
  EXPECT_EQ(send(1, owned_by(3), "refused").error(), Error::shard_communication_error);
  EXPECT_EQ(send(3, owned_by(1), "refused").error(), Error::shard_communication_error);
  // Node 1 refused node 3's certificate as the dialer, node 3 node 1's as the dialer; each also
  // got the other's alert as the acceptor.
  for (const uint32_t id : {1u, 3u}) {
    EXPECT_TRUE(wait_for_stats(cluster_.node(id),
                               [](const HarkdStats& stats) {
                                 return stats.link_tls_failures >= 2 &&
                                        stats.link_handshakes_refused >= 2;
                               }))
        << id << "\n"
        << cluster_.node(id).stderr_tail();
  }
  EXPECT_EQ(cluster_.node(3).stats()->links_up, 0u);
  EXPECT_GE(cluster_.node(2).stats()->links_up, 1u);
  EXPECT_EQ(cluster_.node(2).stats()->link_tls_failures, 0u);
  EXPECT_NE(cluster_.node(3).stderr_tail().find("certificate"), std::string::npos);
}

// A partition's log lives at its owner only: the other nodes keep the catalog (GetTopic lists
// the partition everywhere) but never open it, so no directory of theirs holds it.
TEST_F(HarkdForwarding, EachNodeOpensOnlyThePartitionsAssignedToIt) {
  for (uint32_t p = 0; p < partitions; p++) ASSERT_TRUE(send(1, p, "m").ok());
  for (uint32_t id = 1; id <= 3; id++) {
    for (uint32_t p = 0; p < partitions; p++) {
      const std::string directory = cluster_.node(id).data_directory() +
                                    "/streams/0/topics/0/partitions/" + std::to_string(p);
      EXPECT_EQ(std::filesystem::exists(directory), owner_of_[p] == id)
          << "node " << id << ", partition " << p << " (owner " << owner_of_[p] << ")";
    }
    const auto topic = clients_[id]->get_topic(
        {.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)});
    ASSERT_TRUE(topic.ok() && topic->has_value()) << id;
    EXPECT_EQ((*topic)->partitions.size(), partitions) << id;
  }
}

// A purge is a journal entry that every node applies to the partitions it hosts, so a purge
// received by a node that owns none of them empties them at their owners.
TEST_F(HarkdForwarding, PurgeViaANonOwnerEmptiesTheOwnersPartitions) {
  const uint32_t p = owned_by(3);
  const uint32_t q = owned_by(2);
  ASSERT_TRUE(send(1, p, "a").ok());
  ASSERT_TRUE(send(1, q, "b").ok());
  ASSERT_EQ(read(2, p)->size(), 1u);
  ASSERT_TRUE(
      clients_[1]
          ->purge_topic({.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)})
          .ok());
  // Answered once every node applied the entry: empty at once, through every node.
  for (const uint32_t via : {1u, 2u, 3u}) {
    EXPECT_TRUE(read(via, p)->empty()) << "via node " << via;
    EXPECT_TRUE(read(via, q)->empty()) << "via node " << via;
  }
  // PurgeStream goes the same way.
  ASSERT_TRUE(send(2, p, "c").ok());
  ASSERT_TRUE(clients_[2]->purge_stream({.stream_id = Identifier::numeric(0)}).ok());
  EXPECT_TRUE(read(1, p)->empty());
  // The partition takes new messages after the purge.
  ASSERT_TRUE(send(1, p, "d").ok());
  EXPECT_EQ(*read(3, p), std::vector<std::string>{"d"});
}

}  // namespace
}  // namespace hark::test
