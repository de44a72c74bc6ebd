// Replication in the core (core/broker/replication_operations.h, docs/cluster.md §Replication,
// Built: the core side) through the public API, from threads outside the broker: partition 0 of
// a topic leads a replica set of three, partitions 1 and 2 follow it, and the test is the link
// between them (a follower's fetch is a Poll with `replica`, its bytes go in with AppendStored,
// the commit point it learned with Replicate). Checked: a send is acknowledged, and a parked
// poll woken, only once a second replica's durable end passes it (not at the leader's write); a
// follower fetch parked at the appended end is woken by an append before any commit; the
// refusals (stale epoch, a send to a follower, a fetch past the end); truncation, across a
// restart. Two shards, real disks (durability `write`), so writes complete on their own: the
// test waits on the leader's durable end (Replicate's answer) before asserting "not yet".
#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/core/broker/blocking.h"
#include "hark/core/broker/broker.h"
#include "hark/tests/support/broker_waits.h"
#include "hark/tests/support/wait_until.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> message(std::string_view payload) {
  std::vector<std::byte> bytes(message_layout::header_bytes + payload.size());
  store_u32(bytes, message_layout::payload_length, static_cast<uint32_t>(payload.size()));
  std::memcpy(bytes.data() + message_layout::header_bytes, payload.data(), payload.size());
  return bytes;
}

constexpr uint32_t leader = 0;
constexpr uint64_t epoch = 1;

class ReplicationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("hark_replication_test_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
    start();
    Blocking<CreateStream> stream;
    stream.name = "s";
    ASSERT_TRUE(stream.call(*broker_).ok());
    Blocking<CreateTopic> topic;
    topic.stream = NameOrId::id(0);
    topic.name = "t";
    topic.settings.partitions_count = 3;
    ASSERT_TRUE(topic.call(*broker_).ok());
    ASSERT_TRUE(replicate(leader, ReplicaRole::leader).ok());
    ASSERT_TRUE(replicate(1, ReplicaRole::follower).ok());
    ASSERT_TRUE(replicate(2, ReplicaRole::follower).ok());
  }

  void start() {
    BrokerOptions options;
    options.data_directory = directory_.string();
    options.shards_count = 2;
    options.max_wait = 5s;
    auto broker = Broker::start(options);
    ASSERT_TRUE(broker.ok()) << error_name(broker.error());
    broker_ = std::move(broker).value();
  }

  void TearDown() override {
    if (broker_ != nullptr) broker_->stop();
    broker_.reset();
    std::filesystem::remove_all(directory_);
  }

  template <typename Op>
  static void address(Op& op, uint32_t partition) {
    op.stream = NameOrId::id(0);
    op.topic = NameOrId::id(0);
    op.partition = partition;
  }

  // A partition's three ends, as Replicate answers them.
  struct Ends {
    uint64_t commit_end = 0;
    uint64_t durable_end = 0;
    uint64_t appended_end = 0;
  };

  Status replicate(uint32_t partition, ReplicaRole role, uint64_t in_epoch = epoch,
                   uint64_t leader_commit = 0, Ends* out = nullptr) {
    Blocking<Replicate> op;
    address(op, partition);
    op.role = role;
    op.epoch = in_epoch;
    op.replicas = 3;
    op.leader_commit = leader_commit;
    const Status status = op.call(*broker_);
    if (out != nullptr) {
      out->commit_end = op.commit_end;
      out->durable_end = op.durable_end;
      out->appended_end = op.appended_end;
    }
    return status;
  }

  // A partition's ends now (a Replicate that changes nothing: the same role and epoch).
  Ends ends(uint32_t partition, ReplicaRole role) {
    Ends seen;
    EXPECT_TRUE(replicate(partition, role, epoch, 0, &seen).ok());
    return seen;
  }

  std::future<Status> send(Blocking<Append>& append, const std::vector<std::byte>& bytes) {
    append.stream = NameOrId::id(0);
    append.topic = NameOrId::id(0);
    append.partitioning = Partitioning{Partitioning::Kind::partition, leader};
    append.messages = bytes;
    append.count = 1;
    return std::async(std::launch::async, [&] { return append.call(*broker_); });
  }

  // Follower `member`'s fetch from `from` (its durable end), waiting up to `wait`, naming the
  // version of the leader's offsets it took last.
  void prepare_fetch(Poll& fetch, uint32_t member, uint64_t from, Duration wait,
                     uint64_t in_epoch = epoch) {
    fetch.stream = NameOrId::id(0);
    fetch.topic = NameOrId::id(0);
    fetch.partition = leader;
    fetch.from = PollFrom::offset;
    fetch.value = from;
    fetch.count = 100;
    fetch.wait = wait;
    fetch.replica =
        ReplicaFetch{.member = member,
                     .epoch = in_epoch,
                     .offsets_version = member < held_version_.size() ? held_version_[member] : 0};
  }

  // Follower `member` takes the leader's offsets a fetch brought, as harkd's follower does.
  Status adopt(uint32_t member, const PollResult& answer) {
    if (!answer.offsets.has_value()) return ok_status();
    Blocking<AdoptOffsets> op;
    address(op, member);
    op.offsets = *answer.offsets;
    HARK_TRY(op.call(*broker_));
    held_version_[member] = answer.offsets_version;
    return ok_status();
  }

  std::optional<uint64_t> stored(uint32_t partition, ConsumerRef consumer) {
    Blocking<GetOffset> get;
    get.stream = NameOrId::id(0);
    get.topic = NameOrId::id(0);
    get.partition = partition;
    get.consumer = consumer;
    if (consumer.kind == ConsumerRef::Kind::group) get.group = NameOrId::id(consumer.id);
    EXPECT_TRUE(get.call(*broker_).ok());
    return get.stored;
  }

  // Follower `member` (partition `member`) fetches from its durable end and stores what came.
  Status fetch_and_store(uint32_t member, PollResult& answer) {
    const uint64_t from = ends(member, ReplicaRole::follower).durable_end;
    Blocking<Poll> fetch;
    prepare_fetch(fetch, member, from, Duration(0));
    HARK_TRY(fetch.call(*broker_));
    answer = std::move(fetch.result);
    HARK_TRY(adopt(member, answer));
    if (answer.messages.empty()) return ok_status();
    Blocking<AppendStored> store;
    address(store, member);
    store.messages = answer.messages.bytes();
    store.count = answer.messages.count();
    return store.call(*broker_);  // Answered once durable on the follower.
  }

  // One round of follower `member`: fetch, store, learn the commit point the answer carried.
  Status follow_once(uint32_t member, PollResult* answer = nullptr) {
    PollResult fetched;
    HARK_TRY(fetch_and_store(member, fetched));
    HARK_TRY(replicate(member, ReplicaRole::follower, epoch, fetched.commit_end));
    if (answer != nullptr) *answer = std::move(fetched);
    return ok_status();
  }

  // Waits until the leader's own write made `end` durable, then one more round trip to its
  // owner, so whatever that write's iteration would have answered has been answered.
  bool leader_durable(uint64_t end) {
    const bool durable =
        test::wait_until([&] { return ends(leader, ReplicaRole::leader).durable_end >= end; });
    ends(leader, ReplicaRole::leader);
    return durable;
  }

  std::filesystem::path directory_;
  std::unique_ptr<Broker> broker_;
  std::array<uint64_t, 3> held_version_{};
};

TEST_F(ReplicationTest, ASendIsAcknowledgedOnlyOnceASecondReplicaHoldsIt) {
  const std::vector<std::byte> bytes = message("one");
  Blocking<Append> append;
  std::future<Status> sent = send(append, bytes);
  ASSERT_TRUE(leader_durable(1));
  EXPECT_EQ(sent.wait_for(0s), std::future_status::timeout);  // The leader's write alone.
  EXPECT_EQ(ends(leader, ReplicaRole::leader).commit_end, 0u);
  // Follower 1 fetches and stores it; its next fetch (from 1) is the acknowledgement.
  ASSERT_TRUE(follow_once(1).ok());
  EXPECT_EQ(ends(1, ReplicaRole::follower).durable_end, 1u);
  PollResult answer;
  ASSERT_TRUE(follow_once(1, &answer).ok());
  EXPECT_EQ(answer.commit_end, 1u);
  ASSERT_TRUE(sent.get().ok());
  EXPECT_EQ(ends(leader, ReplicaRole::leader).commit_end, 1u);
  EXPECT_EQ(ends(1, ReplicaRole::follower).commit_end, 1u);  // Learned from the answer.
  EXPECT_EQ(ends(2, ReplicaRole::follower).commit_end, 0u);  // Not fetched yet.
}

TEST_F(ReplicationTest, AParkedPollIsWokenOnlyOnceASecondReplicaHoldsIt) {
  Blocking<Poll> consumer;
  consumer.stream = NameOrId::id(0);
  consumer.topic = NameOrId::id(0);
  consumer.partition = leader;
  consumer.from = PollFrom::offset;
  consumer.count = 10;
  consumer.wait = 5s;
  std::future<Status> polled =
      std::async(std::launch::async, [&] { return consumer.call(*broker_); });
  ASSERT_TRUE(test::wait_until_parked(*broker_, 1));
  const std::vector<std::byte> bytes = message("woken");
  Blocking<Append> append;
  std::future<Status> sent = send(append, bytes);
  ASSERT_TRUE(leader_durable(1));
  const BrokerStats before = test::broker_stats(*broker_);
  EXPECT_EQ(before.waits.woken, 0u);  // The leader's write woke nobody.
  EXPECT_EQ(before.waits.parked_now, 1u);
  EXPECT_EQ(polled.wait_for(0s), std::future_status::timeout);
  ASSERT_TRUE(follow_once(2).ok());
  ASSERT_TRUE(follow_once(2).ok());
  ASSERT_TRUE(polled.get().ok());
  ASSERT_EQ(consumer.result.messages.count(), 1u);
  EXPECT_EQ(consumer.result.messages.first(), Offset(0));
  EXPECT_TRUE(sent.get().ok());
}

TEST_F(ReplicationTest, AParkedFollowerFetchIsWokenByAnAppendBeforeAnyCommit) {
  PollResult first;
  ASSERT_TRUE(fetch_and_store(1, first).ok());  // Takes the leader's offsets (none): may park.
  Blocking<Poll> fetch;
  prepare_fetch(fetch, 1, 0, 5s);
  std::future<Status> fetched =
      std::async(std::launch::async, [&] { return fetch.call(*broker_); });
  ASSERT_TRUE(test::wait_until_parked(*broker_, 1));
  const std::vector<std::byte> bytes = message("early");
  Blocking<Append> append;
  std::future<Status> sent = send(append, bytes);
  ASSERT_TRUE(fetched.get().ok());
  ASSERT_EQ(fetch.result.messages.count(), 1u);
  EXPECT_EQ(fetch.result.messages.first(), Offset(0));
  EXPECT_EQ(fetch.result.commit_end, 0u);  // Answered on the append, not the commit.
  EXPECT_EQ(sent.wait_for(0s), std::future_status::timeout);
  // A consumer's poll sees none of it: the commit point has not moved.
  Blocking<Poll> consumer;
  consumer.stream = NameOrId::id(0);
  consumer.topic = NameOrId::id(0);
  consumer.partition = leader;
  consumer.from = PollFrom::offset;
  ASSERT_TRUE(consumer.call(*broker_).ok());
  EXPECT_TRUE(consumer.result.messages.empty());
  ASSERT_TRUE(follow_once(1).ok());  // From its durable end (0) again: fetched, stored.
  ASSERT_TRUE(follow_once(1).ok());  // From 1: the acknowledgement.
  EXPECT_TRUE(sent.get().ok());
}

TEST_F(ReplicationTest, StaleEpochsFollowersAndFetchesPastTheEndAreRefused) {
  Blocking<Poll> stale;
  prepare_fetch(stale, 1, 0, Duration(0), epoch - 1);
  EXPECT_EQ(stale.call(*broker_).error(), Error::shard_communication_error);
  Blocking<Poll> past;
  prepare_fetch(past, 1, 5, Duration(0));
  EXPECT_EQ(past.call(*broker_).error(), Error::invalid_offset);
  Blocking<Poll> nobody;
  prepare_fetch(nobody, 3, 0, Duration(0));
  EXPECT_EQ(nobody.call(*broker_).error(), Error::invalid_replication_factor);
  Blocking<Poll> at_follower;
  prepare_fetch(at_follower, 1, 0, Duration(0));
  at_follower.partition = 1;
  EXPECT_EQ(at_follower.call(*broker_).error(), Error::shard_communication_error);
  EXPECT_EQ(replicate(leader, ReplicaRole::leader, epoch - 1).error(),
            Error::shard_communication_error);
  const std::vector<std::byte> bytes = message("x");
  Blocking<Append> to_follower;
  to_follower.stream = NameOrId::id(0);
  to_follower.topic = NameOrId::id(0);
  to_follower.partitioning = Partitioning{Partitioning::Kind::partition, 1};
  to_follower.messages = bytes;
  to_follower.count = 1;
  EXPECT_EQ(to_follower.call(*broker_).error(), Error::shard_communication_error);
  Blocking<AppendStored> to_leader;
  address(to_leader, leader);
  to_leader.messages = bytes;
  to_leader.count = 1;
  EXPECT_EQ(to_leader.call(*broker_).error(), Error::shard_communication_error);
}

TEST_F(ReplicationTest, AFollowerTruncatesToTheNewEpochsEndAndARestartKeepsTheCut) {
  const std::vector<std::string> payloads = {"a", "b", "c"};
  for (uint64_t i = 0; i < payloads.size(); i++) {
    const std::vector<std::byte> bytes = message(payloads[i]);
    Blocking<Append> append;
    std::future<Status> sent = send(append, bytes);
    ASSERT_TRUE(leader_durable(i + 1));
    ASSERT_TRUE(follow_once(1).ok());
    ASSERT_TRUE(follow_once(1).ok());
    ASSERT_TRUE(sent.get().ok());
    if (i == 0) {
      ASSERT_TRUE(follow_once(2).ok());  // Holds 0, and knows it committed.
    }
  }
  // Follower 2 fetches 1-2 and stores them, but learns no commit past 1: a new epoch may cut
  // them. Below the commit point nothing can be cut.
  PollResult answer;
  ASSERT_TRUE(fetch_and_store(2, answer).ok());
  ASSERT_EQ(ends(2, ReplicaRole::follower).appended_end, 3u);
  ASSERT_EQ(ends(2, ReplicaRole::follower).commit_end, 1u);
  Blocking<TruncatePartition> below;
  address(below, 2);
  below.end = 0;
  EXPECT_EQ(below.call(*broker_).error(), Error::invalid_offset);
  Blocking<TruncatePartition> cut;
  address(cut, 2);
  cut.end = 2;
  ASSERT_TRUE(cut.call(*broker_).ok());
  EXPECT_EQ(ends(2, ReplicaRole::follower).appended_end, 2u);
  broker_->stop();
  broker_.reset();
  start();
  Blocking<Poll> read;
  read.stream = NameOrId::id(0);
  read.topic = NameOrId::id(0);
  read.partition = 2;
  read.from = PollFrom::offset;
  read.count = 10;
  ASSERT_TRUE(read.call(*broker_).ok());
  EXPECT_EQ(read.result.messages.count(), 2u);
  EXPECT_EQ(read.result.current_offset, 1u);
}

// The replica state (storage/replica_state.h): a leader taking a new epoch records where it
// starts, and fetches carry it; a follower's truncation records the epoch it now holds a prefix
// of; after a restart a replicated partition serves only what its checkpoint knew committed,
// the rest waiting for its replica set again (docs/cluster.md §Replication, Truncation).
TEST_F(ReplicationTest, EpochsAreRecordedAndARestartedReplicaServesOnlyItsCheckpoint) {
  const std::vector<std::byte> bytes = message("a");
  Blocking<Append> append;
  std::future<Status> sent = send(append, bytes);
  ASSERT_TRUE(leader_durable(1));
  PollResult answer;
  ASSERT_TRUE(fetch_and_store(1, answer).ok());  // Follower 1 holds "a", knows no commit.
  ASSERT_TRUE(fetch_and_store(1, answer).ok());  // Its fetch from 1 acknowledges it.
  ASSERT_TRUE(sent.get().ok());
  EXPECT_EQ(answer.epoch_start, 0u);  // Epoch 1 started on an empty log.
  EXPECT_EQ(answer.appended_end, 1u);
  // The leader takes epoch 2 with one message: the epoch starts at 1.
  ASSERT_TRUE(replicate(leader, ReplicaRole::leader, epoch + 1).ok());
  Blocking<Poll> fetch;
  prepare_fetch(fetch, 2, 0, Duration(0), epoch + 1);
  ASSERT_TRUE(fetch.call(*broker_).ok());
  EXPECT_EQ(fetch.result.epoch_start, 1u);
  // Follower 1 records that it holds a prefix of epoch 2's log (nothing to cut).
  Blocking<TruncatePartition> record;
  address(record, 1);
  record.end = 1;
  record.epoch = epoch + 1;
  ASSERT_TRUE(record.call(*broker_).ok());
  Blocking<Replicate> seen;
  address(seen, 1);
  seen.role = ReplicaRole::follower;
  seen.epoch = epoch + 1;
  ASSERT_TRUE(seen.call(*broker_).ok());
  EXPECT_EQ(seen.recorded_epoch, epoch + 1);
  EXPECT_EQ(seen.appended_end, 1u);
  broker_->stop();
  broker_.reset();
  start();
  // Follower 1 knew no commit: after the restart it holds "a" but serves nothing.
  Blocking<Poll> read;
  address(read, 1);
  read.from = PollFrom::offset;
  read.count = 10;
  ASSERT_TRUE(read.call(*broker_).ok());
  EXPECT_EQ(read.result.messages.count(), 0u);
  Blocking<Replicate> after;
  address(after, 1);
  after.role = ReplicaRole::follower;
  after.epoch = epoch + 1;
  ASSERT_TRUE(after.call(*broker_).ok());
  EXPECT_EQ(after.appended_end, 1u);
  EXPECT_EQ(after.commit_end, 0u);
  EXPECT_EQ(after.recorded_epoch, epoch + 1);
}

// Consumer offsets replicate with the partition (docs/cluster.md §Replication, Consumer
// offsets): a follower's fetch naming another version than the leader's brings them all, at
// once; one naming the leader's waits for a change of them as for an append. A store is
// answered only once a majority holds it (here follower 1: 2 of 3), a deletion too; the
// follower holds them on its own disk and takes them again from a reopened leader.
TEST_F(ReplicationTest, StoredOffsetsAreAnsweredOnceAMajorityHoldsThemAndSurviveOnFollowers) {
  const std::vector<std::byte> bytes = message("m");
  Blocking<Append> append;
  std::future<Status> sent = send(append, bytes);
  ASSERT_TRUE(leader_durable(1));
  PollResult answer;
  ASSERT_TRUE(fetch_and_store(1, answer).ok());
  ASSERT_TRUE(answer.offsets.has_value());  // Version 0 is no leader's: the (empty) offsets.
  EXPECT_TRUE(answer.offsets->empty());
  ASSERT_TRUE(fetch_and_store(1, answer).ok());  // Acknowledges the message: committed.
  EXPECT_FALSE(answer.offsets.has_value());      // It holds the leader's version now.
  ASSERT_TRUE(sent.get().ok());

  Blocking<CreateConsumerGroup> created;
  created.stream = NameOrId::id(0);
  created.topic = NameOrId::id(0);
  created.name = "g";
  ASSERT_TRUE(created.call(*broker_).ok());
  const ConsumerRef consumer{ConsumerRef::Kind::consumer, 7};
  const ConsumerRef group{ConsumerRef::Kind::group, created.group.id};
  // Follower 1 parks on the leader's end, holding its offsets' version.
  Blocking<Poll> parked;
  prepare_fetch(parked, 1, 1, 5s);
  std::future<Status> fetched =
      std::async(std::launch::async, [&] { return parked.call(*broker_); });
  ASSERT_TRUE(test::wait_until_parked(*broker_, 1));
  Blocking<StoreOffset> store;
  store.stream = NameOrId::id(0);
  store.topic = NameOrId::id(0);
  store.partition = leader;
  store.consumer = consumer;
  store.offset = 0;
  std::future<Status> stored_at_leader =
      std::async(std::launch::async, [&] { return store.call(*broker_); });
  // Woken by the change, not the 5 s wait, with the offsets and no message.
  ASSERT_EQ(fetched.wait_for(4s), std::future_status::ready);
  ASSERT_TRUE(fetched.get().ok());
  EXPECT_TRUE(parked.result.messages.empty());
  ASSERT_TRUE(parked.result.offsets.has_value());
  EXPECT_EQ(*parked.result.offsets, (std::vector<std::pair<ConsumerRef, uint64_t>>{{consumer, 0}}));
  ASSERT_TRUE(adopt(1, parked.result).ok());
  ASSERT_TRUE(leader_durable(1));  // A round trip to the leader's shard: the store is not
  EXPECT_EQ(stored_at_leader.wait_for(0s), std::future_status::timeout);  // held by 2 yet.
  ASSERT_TRUE(fetch_and_store(1, answer).ok());  // Names the new version: the acknowledgement.
  ASSERT_TRUE(stored_at_leader.get().ok());
  EXPECT_EQ(stored(1, consumer), 0u);
  EXPECT_EQ(stored(2, consumer), std::nullopt);  // Follower 2 has not fetched.

  // A group's offset, then the consumer's deleted: each answered after follower 1's fetches.
  Blocking<StoreOffset> group_store;
  group_store.stream = NameOrId::id(0);
  group_store.topic = NameOrId::id(0);
  group_store.partition = leader;
  group_store.consumer = group;
  group_store.group = NameOrId::id(group.id);
  group_store.offset = 0;
  std::future<Status> group_stored =
      std::async(std::launch::async, [&] { return group_store.call(*broker_); });
  Blocking<DeleteOffset> erase;
  erase.stream = NameOrId::id(0);
  erase.topic = NameOrId::id(0);
  erase.partition = leader;
  erase.consumer = consumer;
  std::future<Status> erased = std::async(std::launch::async, [&] { return erase.call(*broker_); });
  ASSERT_TRUE(test::wait_until([&] {
    EXPECT_TRUE(fetch_and_store(1, answer).ok());
    return erased.wait_for(0s) == std::future_status::ready &&
           group_stored.wait_for(0s) == std::future_status::ready;
  }));
  ASSERT_TRUE(group_stored.get().ok());
  ASSERT_TRUE(erased.get().ok());
  EXPECT_EQ(stored(1, consumer), std::nullopt);  // Deleted on the follower too.
  EXPECT_EQ(stored(1, group), 0u);

  // A follower takes offsets from its leader only; a leader takes none that way.
  Blocking<StoreOffset> at_follower;
  at_follower.stream = NameOrId::id(0);
  at_follower.topic = NameOrId::id(0);
  at_follower.partition = 1;
  at_follower.consumer = consumer;
  EXPECT_EQ(at_follower.call(*broker_).error(), Error::shard_communication_error);
  Blocking<AdoptOffsets> at_leader;
  address(at_leader, leader);
  EXPECT_EQ(at_leader.call(*broker_).error(), Error::shard_communication_error);

  // After a restart the follower's copy is on its disk, and the reopened leader's offsets have
  // a version no earlier opening had: the follower takes them again.
  const uint64_t before = held_version_[1];
  broker_->stop();
  broker_.reset();
  start();
  ASSERT_TRUE(replicate(leader, ReplicaRole::leader).ok());
  ASSERT_TRUE(replicate(1, ReplicaRole::follower).ok());
  EXPECT_EQ(stored(1, group), 0u);
  EXPECT_EQ(stored(1, consumer), std::nullopt);
  ASSERT_TRUE(fetch_and_store(1, answer).ok());
  ASSERT_TRUE(answer.offsets.has_value());
  EXPECT_NE(answer.offsets_version, before);
}

// A deposed leader (docs/cluster.md §Replication, The data path) holds a send it could not
// commit; following the new epoch it cuts it at once, its write perhaps still under way: the
// send gets 11001 (retryable, never stored) and the log goes on from the cut.
TEST_F(ReplicationTest, ADeposedLeaderCutsItsUncommittedSendWhileItsWriteIsUnderWay) {
  uint64_t in_epoch = epoch;
  for (uint64_t round = 0; round < 20; round++) {
    const std::vector<std::byte> zombie = message("zombie");  // Outlives the send.
    Blocking<Append> append;
    std::future<Status> sent = send(append, zombie);
    ASSERT_TRUE(test::wait_until([&] {
      Ends seen;
      return replicate(leader, ReplicaRole::leader, in_epoch, 0, &seen).ok() &&
             seen.appended_end == round + 1;
    }));
    in_epoch++;
    ASSERT_TRUE(replicate(leader, ReplicaRole::follower, in_epoch).ok());
    Blocking<TruncatePartition> cut;
    address(cut, leader);
    cut.end = round;
    cut.epoch = in_epoch;
    ASSERT_TRUE(cut.call(*broker_).ok()) << round;
    EXPECT_EQ(sent.get().error(), Error::shard_communication_error) << round;
    // It leads again, alone (a set of one commits at its own write), and takes the next send
    // where the cut left the log.
    in_epoch++;
    Blocking<Replicate> alone;
    address(alone, leader);
    alone.epoch = in_epoch;
    alone.replicas = 1;
    ASSERT_TRUE(alone.call(*broker_).ok());
    const std::vector<std::byte> kept_bytes = message("kept");
    Blocking<Append> kept;
    ASSERT_TRUE(send(kept, kept_bytes).get().ok()) << round;
    EXPECT_EQ(kept.appended.first, Offset(round)) << round;
    // Back to a set of three for the next round's cut (nothing commits without followers).
    in_epoch++;
    ASSERT_TRUE(replicate(leader, ReplicaRole::leader, in_epoch).ok());
  }
}

}  // namespace
}  // namespace hark::core
