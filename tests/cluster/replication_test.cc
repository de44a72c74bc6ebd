// Replication with real processes (docs/cluster.md §Replication, The data path): three harkd
// and a real etcd (LocalCluster), topics of the default factor 3. Followers fetch from their
// leader and join the in-sync set once caught up; a send is acknowledged once every in-sync
// replica and a majority hold it, so a leader SIGKILLed after acknowledging loses nothing: the
// controller makes a follower leader at the next epoch and every acknowledged message is read
// back through the survivors, at its offset, once. A killed follower leaves the in-sync set
// (sends go on with the other two) and, restarted, copies what it missed and joins again.
// A leader paused past its lease is deposed: what it takes after it wakes is never acknowledged
// (its in-sync set holds the new leader, which no longer fetches from it) and is cut when it
// follows. A consumer's stored offset is answered once a majority holds it, so it survives the
// leader's death too, and a producer that sends message ids and retries at the new leader
// stores nothing twice (the deduplication window). Label cluster (release stage only).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/support/wait_until.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using protocol::Identifier;

constexpr auto failover_timeout = std::chrono::milliseconds(30'000);

class HarkdReplication : public ::testing::Test {
 protected:
  virtual LocalCluster::Options options() const { return {}; }

  void SetUp() override {
    ASSERT_EQ(cluster_.start(options()), "");
    ASSERT_TRUE(cluster_.wait_for_all_members());
    auto client = cluster_.connect(1);
    ASSERT_NE(client, nullptr);
    ASSERT_EQ(cluster_.create_topic_everywhere(*client, 1), "");
  }

  std::optional<server::cluster::Assignment> assignment() {
    return cluster_.assignment_of(0, 0, 0);
  }

  // Until a node other than `before`'s leader leads a later epoch: that assignment, or nullopt
  // if none did within the failover timeout.
  std::optional<server::cluster::Assignment> next_leader(
      const server::cluster::Assignment& before) {
    std::optional<server::cluster::Assignment> next;
    const auto led = [&] {
      return next && next->node != before.node && next->epoch > before.epoch;
    };
    wait_until(
        [&] {
          next = assignment();
          return led();
        },
        failover_timeout, 20ms);
    return led() ? next : std::nullopt;
  }

  // Until every replica is in sync (the followers fetched up to the leader's end).
  bool all_in_sync() {
    return wait_until(
        [&] {
          const auto now = assignment();
          return now && now->replicas.size() == 3 && now->isr.size() == 3;
        },
        failover_timeout, 10ms);
  }

  // Sends `payload` to partition 0 through node `id`; a connection per call keeps the test
  // independent of which nodes are alive.
  // `message_id` 0: the server picks one.
  Status send(uint32_t id, const std::string& payload, uint64_t message_id = 0) {
    auto client = cluster_.connect(id);
    if (client == nullptr) return Error::shard_communication_error;
    const protocol::Bytes bytes(
        reinterpret_cast<const std::byte*>(payload.data()),
        reinterpret_cast<const std::byte*>(payload.data()) + payload.size());
    const protocol::OutgoingMessage message{.id = {.low = message_id}, .payload = bytes};
    return client->send_messages({.stream_id = Identifier::numeric(0),
                                  .topic_id = Identifier::numeric(0),
                                  .partitioning = protocol::Partitioning::partition(0)},
                                 {&message, 1});
  }

  // Sends `count` messages "<prefix><i>" through node `id`, each acknowledged, appending
  // them to `sent`. Empty on success, else which one failed.
  std::string send_numbered(uint32_t id, const std::string& prefix, int count,
                            std::vector<std::string>& sent) {
    for (int i = 0; i < count; i++) {
      sent.push_back(prefix + std::to_string(i));
      const Status status = send(id, sent.back());
      if (!status.ok()) return sent.back() + ": " + std::string(error_name(status.error()));
    }
    return "";
  }

  // Every message of partition 0 through node `id`, in offset order: (offset, payload).
  Result<std::vector<std::pair<uint64_t, std::string>>> read_all(uint32_t id) {
    auto client = cluster_.connect(id);
    if (client == nullptr) return Error::shard_communication_error;
    std::vector<std::pair<uint64_t, std::string>> out;
    for (;;) {
      HARK_TRY_ASSIGN(
          const client::PolledMessages polled,
          client->poll_messages(
              {.consumer = {.kind = protocol::ConsumerKind::consumer, .id = Identifier::numeric(1)},
               .stream_id = Identifier::numeric(0),
               .topic_id = Identifier::numeric(0),
               .partition_id = 0,
               .strategy = {.kind = protocol::PollingKind::offset, .value = out.size()},
               .count = 1000,
               .auto_commit = false,
               .wait_timeout_us = std::nullopt}));
      if (polled.messages().count() == 0) return out;
      for (const auto& message : polled.messages()) {
        const auto payload = message.payload();
        out.emplace_back(
            message.offset(),
            std::string(reinterpret_cast<const char*>(payload.data()), payload.size()));
      }
    }
  }

  // Until node `id` serves exactly `expected` (offset i holds expected[i]).
  void expect_served(uint32_t id, const std::vector<std::string>& expected) {
    std::vector<std::pair<uint64_t, std::string>> last;
    const bool served = wait_until(
        [&] {
          const auto read = read_all(id);
          if (!read.ok()) return false;
          last = *read;
          return last.size() >= expected.size();
        },
        failover_timeout, 20ms);
    ASSERT_TRUE(served) << "node " << id << " served " << last.size() << " of " << expected.size();
    ASSERT_EQ(last.size(), expected.size()) << "node " << id;
    for (size_t i = 0; i < expected.size(); i++) {
      EXPECT_EQ(last[i].first, i);
      EXPECT_EQ(last[i].second, expected[i]) << "offset " << i;
    }
  }

  LocalCluster cluster_;
};

TEST_F(HarkdReplication, FollowersCatchUpJoinTheInSyncSetAndEveryNodeServesWhatWasAcknowledged) {
  ASSERT_TRUE(all_in_sync());
  const uint32_t leader = assignment()->node;
  std::vector<std::string> sent;
  for (int i = 0; i < 50; i++) {
    sent.push_back("m" + std::to_string(i));
    ASSERT_TRUE(send(1 + i % 3, sent.back()).ok()) << i;
  }
  for (uint32_t id = 1; id <= 3; id++) expect_served(id, sent);
  EXPECT_EQ(assignment()->node, leader);
  EXPECT_EQ(assignment()->isr.size(), 3u);
}

TEST_F(HarkdReplication, AKilledLeadersAcknowledgedSendsAreServedByTheNextLeaderOnce) {
  ASSERT_TRUE(all_in_sync());
  const auto before = *assignment();
  std::vector<std::string> sent;
  ASSERT_EQ(send_numbered(before.node, "before-", 100, sent), "");
  // A consumer's stored offset is answered once a majority holds it: it survives too.
  const protocol::Consumer consumer{.kind = protocol::ConsumerKind::consumer,
                                    .id = Identifier::numeric(9)};
  {
    auto client = cluster_.connect(before.node);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client
                    ->store_consumer_offset({.consumer = consumer,
                                             .stream_id = Identifier::numeric(0),
                                             .topic_id = Identifier::numeric(0),
                                             .partition_id = 0,
                                             .offset = 98})
                    .ok());
  }
  cluster_.kill(before.node);
  const auto next = next_leader(before);
  ASSERT_TRUE(next) << "no new leader";
  EXPECT_EQ(next->epoch, before.epoch + 1);
  const auto after = *next;
  EXPECT_TRUE(before.in_sync(after.node));
  uint32_t survivor = after.node == 1 ? 2 : 1;
  if (survivor == before.node) survivor = 3;
  expect_served(survivor, sent);
  {
    auto client = cluster_.connect(survivor);
    ASSERT_NE(client, nullptr);
    const auto offset = client->get_consumer_offset({.consumer = consumer,
                                                     .stream_id = Identifier::numeric(0),
                                                     .topic_id = Identifier::numeric(0),
                                                     .partition_id = 0});
    ASSERT_TRUE(offset.ok()) << error_name(offset.error());
    ASSERT_TRUE(offset->has_value());
    EXPECT_EQ((*offset)->stored_offset, 98u);
  }
  // The new leader serves: sends through either survivor are acknowledged at once.
  for (int i = 0; i < 20; i++) {
    sent.push_back("after-" + std::to_string(i));
    ASSERT_TRUE(send(i % 2 == 0 ? survivor : after.node, sent.back()).ok()) << i;
  }
  expect_served(after.node, sent);
  // The old leader returns as a follower, copies what it missed and serves it once it leads.
  ASSERT_EQ(cluster_.restart(before.node), "");
  ASSERT_TRUE(all_in_sync());
  cluster_.kill(after.node);
  const auto last = next_leader(after);
  ASSERT_TRUE(last) << "no new leader";
  EXPECT_EQ(last->epoch, after.epoch + 1);
  expect_served(assignment()->node, sent);
}

// docs/cluster.md §The data path, Deduplication: the new leader's window holds the ids its
// followers' copies brought, so a producer retrying its sends there stores nothing twice.
TEST_F(HarkdReplication, AProducersRetryAtTheNextLeaderStoresNothingTwice) {
  ASSERT_TRUE(all_in_sync());
  const auto before = *assignment();
  std::vector<std::string> sent;
  for (uint64_t i = 0; i < 30; i++) {
    sent.push_back("m" + std::to_string(i));
    ASSERT_TRUE(send(before.node, sent.back(), 1000 + i).ok()) << i;
  }
  cluster_.kill(before.node);
  const auto next = next_leader(before);
  ASSERT_TRUE(next) << "no new leader";
  EXPECT_EQ(next->epoch, before.epoch + 1);
  const auto after = *next;
  // The producer did not hear its answers (say): it sends every message again, with its id,
  // and again while the new leader is still taking its place (11001, retryable), as an SDK
  // retries: the window makes every extra copy harmless.
  for (uint64_t i = 0; i < 30; i++) {
    ASSERT_TRUE(wait_until([&] { return send(after.node, sent[i], 1000 + i).ok(); },
                           failover_timeout, 20ms))
        << i;
  }
  sent.push_back("new");
  ASSERT_TRUE(send(after.node, sent.back(), 2000).ok());
  expect_served(after.node, sent);
}

TEST_F(HarkdReplication, AKilledFollowerLeavesTheInSyncSetAndRejoinsOnceItCaughtUp) {
  ASSERT_TRUE(all_in_sync());
  const auto before = *assignment();
  const uint32_t follower =
      before.replicas[0] == before.node ? before.replicas[1] : before.replicas[0];
  cluster_.kill(follower);
  // Out of the set (its lease lapsed, or the leader saw it fall behind), it no longer holds
  // commits back: sends are acknowledged by the leader and the other follower.
  ASSERT_TRUE(wait_until([&] { return !assignment()->in_sync(follower); }, failover_timeout, 20ms));
  EXPECT_EQ(assignment()->node, before.node);
  std::vector<std::string> sent;
  ASSERT_EQ(send_numbered(before.node, "while-away-", 30, sent), "");
  ASSERT_EQ(cluster_.restart(follower), "");
  ASSERT_TRUE(all_in_sync());
  // It holds everything: with the leader gone, it may lead, and serves all of it.
  cluster_.kill(before.node);
  ASSERT_TRUE(next_leader(before)) << "no new leader";
  expect_served(assignment()->node, sent);
}

TEST_F(HarkdReplication, ALeaderPausedPastItsLeaseIsDeposedAndAcknowledgesNothingAfter) {
  ASSERT_TRUE(all_in_sync());
  const auto before = *assignment();
  auto zombie = cluster_.connect(before.node);  // Connected before the pause.
  ASSERT_NE(zombie, nullptr);
  std::vector<std::string> sent;
  ASSERT_EQ(send_numbered(before.node, "acknowledged-", 10, sent), "");
  cluster_.node(before.node).signal(SIGSTOP);
  ASSERT_TRUE(wait_until([&] { return all_threads_stopped(cluster_.node(before.node).pid()); }));
  const auto next = next_leader(before);
  ASSERT_TRUE(next) << "no new leader";
  EXPECT_EQ(next->epoch, before.epoch + 1);
  const uint32_t leader = next->node;
  // Sent to the deposed leader while it sleeps: it runs it when it wakes, still believing it
  // leads epoch `before.epoch` until its view catches up.
  auto late = std::async(std::launch::async, [&] {
    const std::string payload = "zombie";
    const protocol::Bytes bytes(
        reinterpret_cast<const std::byte*>(payload.data()),
        reinterpret_cast<const std::byte*>(payload.data()) + payload.size());
    const protocol::OutgoingMessage message{.payload = bytes};
    return zombie->send_messages({.stream_id = Identifier::numeric(0),
                                  .topic_id = Identifier::numeric(0),
                                  .partitioning = protocol::Partitioning::partition(0)},
                                 {&message, 1});
  });
  cluster_.node(before.node).signal(SIGCONT);
  // Refused, or cut with 11001 once it follows; acknowledged only if it woke knowing it no
  // longer leads and forwarded the send to the new leader: then it is stored there, once.
  if (late.get().ok()) sent.push_back("zombie");
  // The new leader serves exactly what was acknowledged, and so does the old one once it follows.
  expect_served(leader, sent);
  ASSERT_TRUE(all_in_sync());
  expect_served(before.node, sent);
}

// Four nodes, a replica replaced 3 s after its node is gone (the default is 5 min).
class HarkdReplacement : public HarkdReplication {
 protected:
  LocalCluster::Options options() const override {
    // Small segments, of another size on each node: the 200 messages below fill several at
    // the leader, which the newcomer copies as they are, not at its own size.
    std::map<uint32_t, std::vector<std::string>> sizes;
    for (uint32_t id = 1; id <= 4; id++) {
      sizes[id] = {"--segment-size", std::to_string(4096 + 512 * (id - 1))};
    }
    return {.nodes = 4, .extra_args = {"--replica-replace-after", "3s"}, .node_args = sizes};
  }
};

// A follower's node gone past the grace (docs/cluster.md §Replicas, leader, epoch, in-sync set)
// is replaced by the fourth node, which joins outside the in-sync set, copies the whole log
// from the leader (its sealed segments become the same files, docs/cluster.md §Catch-up) and
// is counted in sync once it caught up; the next leader then serves every acknowledged
// message.
TEST_F(HarkdReplacement, AFollowerGonePastTheGraceIsReplacedByANodeThatCatchesUp) {
  ASSERT_TRUE(all_in_sync());
  const auto before = *assignment();
  std::vector<std::string> sent;
  ASSERT_EQ(send_numbered(before.node, "r", 200, sent), "");
  uint32_t gone = 0;
  for (const uint32_t replica : before.replicas) {
    if (replica != before.node) gone = replica;
  }
  uint32_t spare = 0;
  for (uint32_t id = 1; id <= 4; id++) {
    if (std::find(before.replicas.begin(), before.replicas.end(), id) == before.replicas.end()) {
      spare = id;
    }
  }
  ASSERT_NE(gone, 0u);
  ASSERT_NE(spare, 0u);
  cluster_.kill(gone);
  const bool replaced = wait_until(
      [&] {
        const auto now = assignment();
        if (!now) return false;
        const auto& replicas = now->replicas;
        return replicas.size() == 3 &&
               std::find(replicas.begin(), replicas.end(), gone) == replicas.end() &&
               now->in_sync(spare) && now->isr.size() == 3;
      },
      failover_timeout, 20ms);
  ASSERT_TRUE(replaced) << "node " << spare << " did not replace node " << gone;
  // It copied the leader's sealed segments: the same files, byte for byte (the leader's
  // active segment, the newest .log and .index, is still being written).
  std::map<std::string, std::string> sealed = cluster_.segment_files(before.node);
  ASSERT_GE(sealed.size(), 6u) << "too few segments to copy";  // Two sealed, and the active.
  sealed.erase(std::prev(sealed.end()));
  sealed.erase(std::prev(sealed.end()));
  const std::map<std::string, std::string> copied = cluster_.segment_files(spare);
  for (const auto& [name, bytes] : sealed) {
    const auto found = copied.find(name);
    ASSERT_NE(found, copied.end()) << "node " << spare << " has no " << name;
    EXPECT_TRUE(found->second == bytes) << name << " differs";
  }
  // Sends go on; then the leader dies and another in-sync replica (perhaps the newcomer)
  // serves everything.
  ASSERT_EQ(send_numbered(before.node, "after-", 20, sent), "");
  const auto full = *assignment();
  cluster_.kill(full.node);
  ASSERT_TRUE(next_leader(full)) << "no new leader";
  expect_served(assignment()->node, sent);
}

}  // namespace
}  // namespace hark::test
