// Node links that fail mid-write (docs/cluster.md §Exactly once), with three real harkd and a
// LinkProxy (tests/cluster/link_proxy.h) in front of node 3's link listener: node 3 advertises
// the proxy as its link address, so node 1's link to it passes through the proxy. Sends go
// via node 1 to the partition node 3 owns, and every test reads the partition back via node
// 3 and counts each payload:
// - the link cut after 20 bytes of a forwarded send toward the owner: the entry re-sends it
//   on a new link, the owner runs it once (forwarded_executed +1, nothing replayed);
// - the link cut after 10 bytes of the owner's answer: the re-send is answered from the
//   owner's table (forwarded_replayed +1), stored once;
// - the owner SIGKILLed and restarted while the proxy holds the request, or its answer: the
//   entry meets a new incarnation and fails the send with 11001; the message is stored 0 times
//   (request held) or once (answer held), never twice;
// - a link that closes during the handshake (the proxy cannot reach the node) fails the send
//   with 11001 at once instead of dialling again without end;
// - random cuts for HARK_FAULT_SECONDS (default 2; `make test-long` sets 60) while two clients
//   loop sends: every acknowledged send stored exactly once, every send failed with 11001
//   stored at most once, no other error.
// Label cluster (release stage only): one etcd, three harkd (one shard each, so node 1 has
// one link to node 3), a few seconds each.
#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "hark/protocol/system_requests.h"
#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/prng.h"
#include "hark/tests/support/wait_until.h"
#include "link_proxy.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using protocol::Identifier;
using Direction = LinkProxy::Direction;

constexpr uint32_t partitions = 3;

class LinkFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(proxy_.start());
    LocalCluster::Options options;
    options.extra_args = single_replica_args;  // Sends to one owner through the proxy.
    options.shards_count = 1;
    options.node_args[3] = {"--advertised-link-address", proxy_.address()};
    ASSERT_EQ(cluster_.start(options), "");
    const std::string upstream = cluster_.bound_link_address(3);
    ASSERT_FALSE(upstream.empty()) << cluster_.node(3).stderr_tail();
    proxy_.set_upstream(upstream);
    entry_ = cluster_.connect(1);
    ASSERT_NE(entry_, nullptr);
    ASSERT_TRUE(cluster_.wait_for_all_members());  // So node 3 owns one of the partitions.
    create_topic();
    for (uint32_t id = 1; id <= 3; id++) {
      ASSERT_TRUE(wait_for_stats(cluster_.node(id), [](const HarkdStats& stats) {
        return stats.view_assignments == partitions && stats.view_nodes == 3;
      })) << cluster_.node(id).stderr_tail();
    }
    for (uint32_t p = 0; p < partitions; p++) {
      if (cluster_.owner_of(0, 0, p) == 3) partition_ = p;
    }
    ASSERT_EQ(cluster_.owner_of(0, 0, partition_), 3u);
    // Node 1's link to node 3 comes up through the proxy.
    ASSERT_TRUE(send_to_partition(*entry_, partition_, "warm").ok());
    ASSERT_EQ(proxy_.accepted(), 1u);
  }

  void create_topic() {
    ASSERT_TRUE(entry_->create_stream({.name = "s"}).ok());
    protocol::CreateTopicRequest topic;
    topic.stream_id = Identifier::numeric(0);
    topic.partitions_count = partitions;
    topic.name = "t";
    ASSERT_TRUE(entry_->create_topic(topic).ok());
  }

  // Every payload stored in the partition, read via its owner, with how often it is there.
  std::map<std::string, int> stored() {
    std::map<std::string, int> counts;
    auto owner = cluster_.connect(3);
    EXPECT_NE(owner, nullptr);
    if (owner == nullptr) return counts;
    uint64_t offset = 0;
    while (true) {
      auto polled =
          owner->poll_messages(poll_request(1, partition_, offset_strategy(offset), 1000, 0us));
      EXPECT_TRUE(polled.ok());
      if (!polled.ok() || polled->messages().count() == 0) break;
      for (const std::string& text : payloads_of(polled->messages())) counts[text]++;
      offset += polled->messages().count();
    }
    return counts;
  }

  // SIGKILL node 3, start it again and point the proxy at its new link listener.
  void restart_owner() {
    cluster_.kill(3);
    ASSERT_EQ(cluster_.restart(3), "");
    const std::string upstream = cluster_.bound_link_address(3);
    ASSERT_FALSE(upstream.empty());
    proxy_.set_upstream(upstream);
    // Back in its own view as the partition's owner, so it serves the reads of stored().
    ASSERT_TRUE(wait_for_stats(cluster_.node(3), [](const HarkdStats& stats) {
      return stats.view_assignments == partitions && stats.view_nodes == 3;
    }));
  }

  // The owner restarted while the proxy held `direction`: the send fails with 11001.
  void restart_while_held(Direction direction, std::string_view text) {
    proxy_.hold(direction);
    auto sent = std::async(std::launch::async,
                           [&] { return send_to_partition(*entry_, partition_, text); });
    // The request (or the owner's answer) reached the proxy: the send is unanswered.
    ASSERT_TRUE(wait_until([&] { return proxy_.held(direction) > 0; }, signal_timeout));
    restart_owner();
    proxy_.drop_all();  // The entry dials again and meets the new incarnation.
    EXPECT_EQ(sent.get().error(), Error::shard_communication_error);
  }

  LinkProxy proxy_;
  LocalCluster cluster_;
  std::unique_ptr<client::Client> entry_;
  uint32_t partition_ = 0;
};

TEST_F(LinkFaults, CutMidRequestIsSentAgainAndRunOnce) {
  const HarkdStats entry = *cluster_.node(1).stats();
  const HarkdStats owner = *cluster_.node(3).stats();
  proxy_.cut_after(Direction::to_owner, 20);
  ASSERT_TRUE(send_to_partition(*entry_, partition_, "cut-request").ok());
  EXPECT_EQ(proxy_.cuts(), 1u);
  EXPECT_EQ(proxy_.accepted(), 2u);  // Dialled again once.
  EXPECT_EQ(stored()["cut-request"], 1);
  EXPECT_EQ(cluster_.node(1).stats()->links_dropped, entry.links_dropped + 1);
  const HarkdStats after = *cluster_.node(3).stats();
  EXPECT_EQ(after.forwarded_executed, owner.forwarded_executed + 1);
  EXPECT_EQ(after.forwarded_replayed, owner.forwarded_replayed);
}

TEST_F(LinkFaults, CutMidAnswerIsAnsweredFromTheOwnersTable) {
  const HarkdStats owner = *cluster_.node(3).stats();
  proxy_.cut_after(Direction::to_entry, 10);
  ASSERT_TRUE(send_to_partition(*entry_, partition_, "cut-answer").ok());
  EXPECT_EQ(proxy_.cuts(), 1u);
  EXPECT_EQ(stored()["cut-answer"], 1);
  const HarkdStats after = *cluster_.node(3).stats();
  EXPECT_EQ(after.forwarded_replayed, owner.forwarded_replayed + 1);
  EXPECT_EQ(after.forwarded_executed, owner.forwarded_executed + 1);  // The send only.
}

TEST_F(LinkFaults, OwnerRestartedBeforeTheRequestArrivedFailsItAndStoresNothing) {
  restart_while_held(Direction::to_owner, "held-request");
  EXPECT_EQ(stored().count("held-request"), 0u);
  // The link works again, to the new incarnation (once node 1 sees node 3 back, and its link
  // is past the backoff a failed dial may have started): each attempt its own payload.
  int attempts = 0;
  std::string text;
  ASSERT_TRUE(wait_until(
      [&] {
        text = "after-" + std::to_string(attempts++);
        return send_to_partition(*entry_, partition_, text).ok();
      },
      signal_timeout, 20ms));
  const std::map<std::string, int> counts = stored();
  EXPECT_EQ(counts.at(text), 1);
  for (const auto& [stored_text, count] : counts) EXPECT_EQ(count, 1) << stored_text;
}

TEST_F(LinkFaults, OwnerRestartedAfterItAnsweredFailsTheSendButStoresItOnce) {
  restart_while_held(Direction::to_entry, "held-answer");
  EXPECT_EQ(stored()["held-answer"], 1);  // Written before it answered; the client may retry.
}

TEST_F(LinkFaults, ALinkClosedDuringTheHandshakeFailsTheSendAtOnce) {
  proxy_.set_upstream("127.0.0.1:1");  // Nothing listens: the proxy accepts and closes.
  proxy_.drop_all();
  EXPECT_EQ(send_to_partition(*entry_, partition_, "unreachable").error(),
            Error::shard_communication_error);
  EXPECT_GE(proxy_.accepted(), 2u);
  proxy_.set_upstream(cluster_.bound_link_address(3));
  EXPECT_EQ(stored().count("unreachable"), 0u);
}

// How long the random-cut run lasts: HARK_FAULT_SECONDS, 2 by default (the CI budget).
std::chrono::seconds fault_duration() {
  const char* value = std::getenv("HARK_FAULT_SECONDS");
  return std::chrono::seconds(value != nullptr && *value != '\0' ? std::atoi(value) : 2);
}

struct Outcomes {
  std::vector<std::string> acknowledged;
  std::vector<std::string> failed;  // With 11001.
  std::vector<std::string> wrong;   // Any other error, with its name.
};

TEST_F(LinkFaults, RandomCutsNeverDuplicateASend) {
  const uint64_t seed = test_seed();
  proxy_.chaos(seed, 1500);
  proxy_.drop_all();  // Every link from now on is cut at random.
  const auto end = std::chrono::steady_clock::now() + fault_duration();  // The run's length.
  constexpr int writers = 2;
  std::vector<Outcomes> outcomes(writers);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; w++) {
    threads.emplace_back([&, w] {
      auto client = cluster_.connect(1);
      if (client == nullptr) {
        outcomes[w].wrong.push_back("connect");
        return;
      }
      for (int i = 0; std::chrono::steady_clock::now() < end; i++) {
        const std::string text = "w" + std::to_string(w) + "-" + std::to_string(i);
        const Status sent = send_to_partition(*client, partition_, text);
        if (sent.ok()) {
          outcomes[w].acknowledged.push_back(text);
        } else if (sent.error() == Error::shard_communication_error) {
          outcomes[w].failed.push_back(text);
        } else {
          outcomes[w].wrong.push_back(text + ": " + std::string(error_name(sent.error())));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  proxy_.calm();
  std::map<std::string, int> counts = stored();
  size_t acknowledged = 0;
  size_t failed = 0;
  for (const Outcomes& outcome : outcomes) {
    EXPECT_TRUE(outcome.wrong.empty()) << outcome.wrong.front() << " (seed " << seed << ")";
    for (const std::string& text : outcome.acknowledged) {
      EXPECT_EQ(counts[text], 1) << text << " (seed " << seed << ")";
    }
    for (const std::string& text : outcome.failed) {
      EXPECT_LE(counts[text], 1) << text << " (seed " << seed << ")";
    }
    acknowledged += outcome.acknowledged.size();
    failed += outcome.failed.size();
  }
  for (const auto& [text, count] : counts) EXPECT_LE(count, 1) << text << " (seed " << seed << ")";
  const HarkdStats owner = *cluster_.node(3).stats();
  std::cerr << "random cuts: " << acknowledged << " sends acknowledged, " << failed
            << " failed with 11001, " << proxy_.cuts() << " cuts, " << proxy_.accepted()
            << " links through the proxy, " << owner.forwarded_replayed
            << " replayed by the owner\n";
  EXPECT_GT(acknowledged, 0u);
  EXPECT_GT(proxy_.cuts(), 0u);
}

}  // namespace
}  // namespace hark::test
