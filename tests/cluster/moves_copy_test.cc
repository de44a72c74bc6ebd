// Partition moves with their data between three real harkd (docs/cluster.md §Moves): a drain of
// the node that owns a partition copies it to the new owner over the node links (offsets,
// timestamps, ids and payloads byte for byte, read back through every node), carries its stored
// consumer offset, and new sends through any node land at the new owner; sends through another
// node while the drain runs are each stored exactly once when acknowledged, and any error is
// the retryable 11001 (counted). The drain is asked as tools/cluster.sh does it (drain/<id> in
// etcd); tests wait on etcd's assignment and on reads through the nodes, never on time.
// A drain under parked polls answers each with data or at its deadline.
// Label cluster (release stage only): one etcd, three harkd, a few seconds each.
#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_gateway.h"
#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/wait_until.h"
#include "link_proxy.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using protocol::Identifier;

// The payload of one whole stored message (header, payload, user headers).
std::string payload_text(const protocol::Bytes& message) {
  const uint32_t length = load_u32(message, message_layout::payload_length);
  return text_of(std::span(message).subspan(message_layout::header_bytes, length));
}

class HarkdMoveCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    // Moves copy factor-1 partitions; a replicated one moves its leadership instead
    // (docs/cluster.md §Replication: the controller side).
    options_.extra_args.insert(options_.extra_args.end(), single_replica_args.begin(),
                               single_replica_args.end());
    // Small segments of another size on each node: a move copies the owner's as they are.
    for (uint32_t id = 1; id <= 3; id++) {
      for (const std::string& arg :
           {std::string("--segment-size"), std::to_string(4096 + 512 * id)}) {
        options_.node_args[id].push_back(arg);
      }
    }
    ASSERT_EQ(cluster_.start(options_), "");
    started();
    ASSERT_EQ(cluster_.connect_all(clients_), "");
    ASSERT_TRUE(cluster_.wait_for_all_members());
    ASSERT_TRUE(clients_[1]->create_stream({.name = "s"}).ok());
    protocol::CreateTopicRequest topic;
    topic.stream_id = Identifier::numeric(0);
    topic.partitions_count = 1;
    topic.name = "t";
    ASSERT_TRUE(clients_[1]->create_topic(topic).ok());
    for (uint32_t id = 1; id <= 3; id++) {
      ASSERT_TRUE(wait_for_stats(cluster_.node(id), [](const HarkdStats& stats) {
        return stats.view_assignments == 1 && stats.view_nodes == 3;
      })) << cluster_.node(id).stderr_tail();
    }
    owner_ = cluster_.owner_of(0, 0, 0);
    ASSERT_NE(owner_, 0u);
  }

  void TearDown() override { EXPECT_EQ(cluster_.stop_all(), ""); }

  // Any node but `node` (the entry for sends during a drain).
  static uint32_t other_than(uint32_t node) { return node == 1 ? 2 : 1; }

  void drain(uint32_t node) {
    auto etcd = server::cluster::EtcdGateway::create({.endpoints = {cluster_.etcd().url()},
                                                      .user = EtcdProcess::user,
                                                      .password = EtcdProcess::password});
    ASSERT_TRUE(etcd.ok());
    ASSERT_TRUE((*etcd)->put(server::cluster::Keys("e2e").drain(node), "", 0).ok());
  }

  // Waits until etcd assigns partition 0 to another node than `from`; that node, or 0.
  uint32_t wait_moved_off(uint32_t from) {
    uint32_t now = from;
    EXPECT_TRUE(wait_until([&] { return (now = cluster_.owner_of(0, 0, 0)) != from; }, 20s))
        << cluster_.node(from).stderr_tail();
    return now == from ? 0 : now;
  }

  // Every message of partition 0 through `via`, whole (offset, timestamp, id, payload), or
  // empty on an error.
  std::vector<protocol::Bytes> all_messages(uint32_t via) {
    std::vector<protocol::Bytes> out;
    uint64_t next = 0;
    while (true) {
      auto polled =
          clients_[via]->poll_messages(poll_request(1, 0, offset_strategy(next), 100, 0us));
      if (!polled.ok()) return {};
      if (polled->messages().count() == 0) return out;
      for (const protocol::MessageView message : polled->messages()) {
        out.emplace_back(message.bytes().begin(), message.bytes().end());
        next = message.offset() + 1;
      }
    }
  }

  Result<std::optional<uint64_t>> stored_offset(uint32_t via) {
    auto offset = clients_[via]->get_consumer_offset({.consumer = {.id = Identifier::numeric(7)},
                                                      .stream_id = Identifier::numeric(0),
                                                      .topic_id = Identifier::numeric(0),
                                                      .partition_id = 0});
    if (!offset.ok()) return offset.error();
    if (!offset->has_value()) return std::optional<uint64_t>();
    return std::optional<uint64_t>((*offset)->stored_offset);
  }

  // Where each node's files hold a message with payload `text` in partition 0 ("node N at
  // offset O", or "in no node's log"): read from the segment files, so a lost send names the
  // node that took it.
  std::string where_stored(const std::string& text) {
    std::string found;
    for (uint32_t id = 1; id <= 3; id++) {
      const std::filesystem::path partition =
          std::filesystem::path(cluster_.node(id).data_directory()) /
          "streams/0/topics/0/partitions/0";
      std::error_code error;
      for (const auto& entry : std::filesystem::directory_iterator(partition, error)) {
        if (entry.path().extension() != ".log") continue;
        for (const auto& [offset, payload] : stored_messages(entry.path())) {
          if (payload != text) continue;
          found += "node " + std::to_string(id) + " at offset " + std::to_string(offset) + "; ";
        }
      }
    }
    return found.empty() ? "in no node's log" : "stored by " + found;
  }

  // The (offset, payload) of each whole message of one segment file.
  static std::vector<std::pair<uint64_t, std::string>> stored_messages(
      const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
    const std::span<const std::byte> all(reinterpret_cast<const std::byte*>(bytes.data()),
                                         bytes.size());
    std::vector<std::pair<uint64_t, std::string>> out;
    for (size_t at = 0; at + message_layout::header_bytes <= all.size();) {
      const std::span<const std::byte> message = all.subspan(at);
      const uint32_t length = load_u32(message, message_layout::payload_length);
      const uint32_t headers = load_u32(message, message_layout::user_headers_length);
      const size_t size = message_layout::header_bytes + length + headers;
      if (size > message.size()) break;
      out.emplace_back(load_u64(message, message_layout::offset),
                       text_of(message.subspan(message_layout::header_bytes, length)));
      at += size;
    }
    return out;
  }

  // Right after the nodes started (a fixture's proxies learn their addresses).
  virtual void started() {}

  LocalCluster::Options options_;
  LocalCluster cluster_;
  std::map<uint32_t, std::unique_ptr<client::Client>> clients_;
  uint32_t owner_ = 0;
};

TEST_F(HarkdMoveCopy, ADrainCopiesThePartitionWithItsOffsetsToTheNewOwner) {
  for (int i = 0; i < 300; i++) {
    ASSERT_TRUE(send_to_partition(*clients_[1 + i % 3], 0, "m" + std::to_string(i)).ok()) << i;
  }
  ASSERT_TRUE(clients_[2]
                  ->store_consumer_offset({.consumer = {.id = Identifier::numeric(7)},
                                           .stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .partition_id = 0,
                                           .offset = 123})
                  .ok());
  const std::vector<protocol::Bytes> before = all_messages(owner_);
  ASSERT_EQ(before.size(), 300u);
  // The owner's sealed segments (all but the newest .index and .log, still being written).
  std::map<std::string, std::string> sealed = cluster_.segment_files(owner_);
  ASSERT_GE(sealed.size(), 6u) << "too few segments to copy";
  sealed.erase(std::prev(sealed.end()));
  sealed.erase(std::prev(sealed.end()));

  drain(owner_);
  const uint32_t target = wait_moved_off(owner_);
  ASSERT_NE(target, 0u);
  // The new owner holds them as the same files (docs/cluster.md §Moves).
  const std::map<std::string, std::string> copied = cluster_.segment_files(target);
  for (const auto& [name, bytes] : sealed) {
    const auto found = copied.find(name);
    ASSERT_NE(found, copied.end()) << "node " << target << " has no " << name;
    EXPECT_TRUE(found->second == bytes) << name << " differs";
  }
  for (uint32_t via = 1; via <= 3; via++) {
    // Each node reads once its view names the new owner (before, the old one answers 11001).
    std::vector<protocol::Bytes> after;
    EXPECT_TRUE(wait_until([&] { return (after = all_messages(via)).size() == before.size(); }))
        << "via node " << via << ": " << after.size();
    EXPECT_TRUE(after == before) << "via node " << via;
    const auto offset = stored_offset(via);
    ASSERT_TRUE(offset.ok()) << via << ": " << error_name(offset.error());
    EXPECT_EQ(*offset, std::optional<uint64_t>(123)) << "via node " << via;
  }
  // A node whose view still names the old owner reaches it, which answers 11001 (retryable)
  // once it closed the partition: a client sends again, as the docs say.
  for (uint32_t via = 1; via <= 3; via++) {
    Status sent = Error::shard_communication_error;
    EXPECT_TRUE(wait_until([&] {
      sent = send_to_partition(*clients_[via], 0, "after" + std::to_string(via));
      return sent.ok() || sent.error() != Error::shard_communication_error;
    }));
    ASSERT_TRUE(sent.ok()) << via << ": " << error_name(sent.error());
  }
  const std::vector<protocol::Bytes> now = all_messages(target);
  ASSERT_EQ(now.size(), 303u);
  EXPECT_EQ(payload_text(now[302]), "after3");
  EXPECT_EQ(cluster_.owner_of(0, 0, 0), target);
}

// Issue 18's drain test: polls parked through another node and at the owner itself while the
// owner is drained are answered with data sent after the move, at the offset the copy continues
// from, or empty at their own deadline; none with an error, none early, none extended.
TEST_F(HarkdMoveCopy, ADrainUnderParkedPollsAnswersEachWithDataOrAtItsDeadline) {
  constexpr uint64_t before = 50;
  for (uint64_t i = 0; i < before; i++) {
    ASSERT_TRUE(send_to_partition(*clients_[1], 0, "m" + std::to_string(i)).ok());
  }
  const uint32_t entry = other_than(owner_);
  const uint64_t parked_base = cluster_.node(owner_).stats()->parked_now;
  AsyncPoll via_entry(cluster_.node(entry).address(),
                      poll_request(1, 0, offset_strategy(before), 10, 20s));
  AsyncPoll at_owner(cluster_.node(owner_).address(),
                     poll_request(2, 0, offset_strategy(before), 10, 20s));
  constexpr auto short_wait = 3s;  // Offset 1000: only its deadline answers it.
  AsyncPoll expiring(cluster_.node(entry).address(),
                     poll_request(3, 0, offset_strategy(1000), 10, short_wait));
  ASSERT_TRUE(wait_for_stats(cluster_.node(owner_), [&](const HarkdStats& stats) {
    return stats.parked_now == parked_base + 3;
  }));

  drain(owner_);
  const uint32_t target = wait_moved_off(owner_);
  ASSERT_NE(target, 0u);
  // The entry nodes routed them again: all three wait at the new owner.
  ASSERT_TRUE(wait_for_stats(cluster_.node(target), [&](const HarkdStats& stats) {
    return stats.parked_now >= 3;
  })) << cluster_.node(target).stderr_tail();
  EXPECT_FALSE(via_entry.answered());
  EXPECT_FALSE(at_owner.answered());

  ASSERT_TRUE(send_to_partition(*clients_[entry], 0, "after").ok());
  for (AsyncPoll* poll : {&via_entry, &at_owner}) {
    const char* which = poll == &via_entry ? "via the entry" : "at the old owner";
    const PollOutcome& outcome = poll->wait(at_once_bound);
    ASSERT_TRUE(outcome.answered) << which;
    EXPECT_EQ(outcome.status, 0u) << which;
    EXPECT_EQ(outcome.payloads, std::vector<std::string>{"after"}) << which;
    EXPECT_EQ(outcome.offsets, std::vector<uint64_t>{before}) << which;
  }
  const PollOutcome& expired = expiring.wait(short_wait + at_once_bound);
  ASSERT_TRUE(expired.answered);
  EXPECT_EQ(expired.status, 0u);
  EXPECT_TRUE(expired.payloads.empty());
  const auto took = expired.answered_at - expiring.sent_at();
  EXPECT_GE(took, short_wait - 50ms);
  EXPECT_LE(took, short_wait + late_bound());
  EXPECT_EQ(all_messages(target).size(), before + 1);
}

TEST_F(HarkdMoveCopy, SendsDuringADrainAreStoredOnceAndRefusedOnlyRetryably) {
  const uint32_t entry = other_than(owner_);
  std::atomic<bool> stop{false};
  std::atomic<int> acknowledged_after{0};
  std::set<std::string> acknowledged;
  std::map<uint32_t, int> errors;  // By code.
  std::thread sender([&] {
    auto client = cluster_.connect(entry);
    ASSERT_NE(client, nullptr);
    for (int i = 0; i < 1'000'000; i++) {
      const std::string text = "d" + std::to_string(i);
      const Status sent = send_to_partition(*client, 0, text);
      if (sent.ok()) {
        acknowledged.insert(text);
        acknowledged_after.fetch_add(stop.load() ? 1 : 0);
      } else {
        errors[error_code(sent.error())]++;
      }
      if (stop.load() && acknowledged_after.load() >= 20) break;
    }
  });
  // Some sends land before the drain starts.
  ASSERT_TRUE(wait_until([&] { return cluster_.node(owner_).stats()->forwarded_executed >= 30; }));
  drain(owner_);
  const uint32_t target = wait_moved_off(owner_);
  stop.store(true);
  sender.join();
  ASSERT_NE(target, 0u);
  std::vector<protocol::Bytes> stored;
  ASSERT_TRUE(wait_until([&] { return !(stored = all_messages(target)).empty(); }));
  std::map<std::string, int> copies;
  for (const protocol::Bytes& message : stored) {
    copies[payload_text(message)]++;
  }
  for (const std::string& text : acknowledged) {
    if (copies[text] == 1) continue;
    ADD_FAILURE() << text << " was acknowledged but is stored " << copies[text]
                  << " times at the new owner, node " << target << " (old owner " << owner_
                  << ", entry " << entry << "); " << where_stored(text);
  }
  for (const auto& [text, count] : copies) {
    EXPECT_LE(count, 1) << text << " is stored " << count << " times at node " << target << "; "
                        << where_stored(text);
  }
  for (const auto& [code, count] : errors) {
    EXPECT_EQ(code, error_code(Error::shard_communication_error)) << count << " answered " << code;
  }
  std::cout << "[ moves    ] " << acknowledged.size() << " sends acknowledged, "
            << errors[error_code(Error::shard_communication_error)]
            << " answered 11001 (retryable) during the drain\n";
}

// A move whose target dies mid-copy (docs/cluster.md §Moves, "B dies mid-copy"): every node
// advertises a LinkProxy as its link address, and the old owner A's proxy holds its answers, so
// the target B's copy is stuck in its first fetch when B gets SIGKILL. B's lease lapses, the
// controller abandons the move, the assignment stays A's at its epoch, and every send
// acknowledged by A before, during and after is stored there once, read through A and C.
class HarkdMoveCopyKilled : public HarkdMoveCopy {
 protected:
  void SetUp() override {
    for (LinkProxy& proxy : proxies_) ASSERT_TRUE(proxy.start());
    for (uint32_t id = 1; id <= 3; id++) {
      options_.node_args[id] = {"--advertised-link-address", proxies_[id - 1].address()};
    }
    HarkdMoveCopy::SetUp();
  }

  void started() override {
    for (uint32_t id = 1; id <= 3; id++) {
      const std::string upstream = cluster_.bound_link_address(id);
      ASSERT_FALSE(upstream.empty()) << cluster_.node(id).stderr_tail();
      proxies_[id - 1].set_upstream(upstream);
    }
  }

  std::optional<server::cluster::KeyValue> etcd_key(const std::string& key) {
    auto etcd = server::cluster::EtcdGateway::create({.endpoints = {cluster_.etcd().url()},
                                                      .user = EtcdProcess::user,
                                                      .password = EtcdProcess::password});
    if (!etcd.ok()) return std::nullopt;
    auto range = (*etcd)->range(key, false);
    if (!range.ok() || range->kvs.size() != 1) return std::nullopt;
    return range->kvs[0];
  }

  std::array<LinkProxy, 3> proxies_;
};

TEST_F(HarkdMoveCopyKilled, ATargetKilledMidCopyAbandonsTheMoveAndTheOwnerKeepsServing) {
  const uint32_t a = owner_;
  const uint32_t b = other_than(a);
  const uint32_t c = 6 - a - b;
  const core::PartitionKey key{StreamId(0), TopicId(0), PartitionId(0)};
  const server::cluster::Keys keys("e2e");
  std::set<std::string> acknowledged;
  int next = 0;
  const auto send_at_a = [&] {
    const std::string text = "k" + std::to_string(next++);
    const Status sent = send_to_partition(*clients_[a], 0, text);
    EXPECT_TRUE(sent.ok()) << text << ": " << (sent.ok() ? "" : error_name(sent.error()));
    if (sent.ok()) acknowledged.insert(text);
  };
  for (int i = 0; i < 100; i++) send_at_a();
  const auto assignment = etcd_key(keys.assignment(key));
  ASSERT_TRUE(assignment);
  const auto before = server::cluster::decode_assignment(assignment->value);
  ASSERT_TRUE(before && before->node == a);

  // A's answers on the links are held: B's copy waits on its first fetch. The move is written
  // as the controller plans one (NodeAgent::move_partition), so the target is known.
  proxies_[a - 1].hold(LinkProxy::Direction::to_entry);
  auto etcd = server::cluster::EtcdGateway::create({.endpoints = {cluster_.etcd().url()},
                                                    .user = EtcdProcess::user,
                                                    .password = EtcdProcess::password});
  ASSERT_TRUE(etcd.ok());
  const server::cluster::Move move{.from = a, .to = b, .epoch = before->epoch, .by = a};
  ASSERT_TRUE((*etcd)->put(keys.move(key), server::cluster::encode_move(move), 0).ok());
  ASSERT_TRUE(wait_until([&] { return proxies_[a - 1].held(LinkProxy::Direction::to_entry) > 0; }))
      << cluster_.node(b).stderr_tail();
  cluster_.kill(b);
  // A serves sends all along; the move goes once B's lease lapses.
  EXPECT_TRUE(wait_until(
      [&] {
        send_at_a();
        return !etcd_key(keys.move(key));
      },
      20s))
      << cluster_.node(a).stderr_tail();
  const auto after = etcd_key(keys.assignment(key));
  ASSERT_TRUE(after);
  EXPECT_EQ(server::cluster::decode_assignment(after->value), before);  // Untouched.
  for (int i = 0; i < 20; i++) send_at_a();

  // Links to A work again: C reaches A's partition and reads what A acknowledged, once each.
  proxies_[a - 1].drop_all();
  for (const uint32_t via : {a, c}) {
    std::vector<protocol::Bytes> stored;
    EXPECT_TRUE(wait_until([&] {
      return (stored = all_messages(via)).size() >= acknowledged.size();
    })) << "via node "
        << via << ": " << stored.size() << " of " << acknowledged.size();
    std::map<std::string, int> copies;
    for (const protocol::Bytes& message : stored) copies[payload_text(message)]++;
    for (const std::string& text : acknowledged) {
      EXPECT_EQ(copies[text], 1) << text << " via node " << via << "; " << where_stored(text);
    }
    EXPECT_EQ(stored.size(), acknowledged.size()) << "via node " << via;
  }
  EXPECT_EQ(cluster_.node(a).stats()->forwarded_not_hosted, 0u);
  ASSERT_EQ(cluster_.restart(b), "");  // Back for TearDown's clean stop.
  std::cout << "[ moves    ] " << acknowledged.size()
            << " sends acknowledged by the owner while the move to the killed node was abandoned\n";
}

}  // namespace
}  // namespace hark::test
