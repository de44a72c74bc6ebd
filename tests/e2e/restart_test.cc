// Covers what survives harkd: a clean restart on the same data directory keeps streams,
// topics, partitions, messages, stored offsets (consumer and group) and groups (members are
// connections, so groups come back empty); and SIGKILL during creates and sends under
// durability "never", a few cycles: every acknowledged create is there after the restart, the
// catalog reads back consistent, and every message that can be read is intact (contiguous
// offsets, the payloads the producer sent, in its order); and SIGKILL during concurrent sends
// under durability "always" (issue #8): every acknowledged send is there after the restart, in
// each producer's order, and a poll parked on the restarted server is woken by a new send.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

class HarkdRestart : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hark-restart-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
  }
  void TearDown() override {
    if (HasFailure() && harkd_ != nullptr) std::cerr << harkd_->stderr_tail();
    harkd_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

  // (Re)starts harkd on the test's data directory.
  void start(const std::string& durability = "never") {
    harkd_ = std::make_unique<HarkdProcess>();
    HarkdProcess::Options options;
    options.harkd_path = harkd_path();
    options.data_directory = directory_;
    options.extra_args = {"--durability", durability};
    ASSERT_TRUE(harkd_->start(options)) << harkd_->error_text() << "\n" << harkd_->stderr_tail();
    client_ = connect();
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<client::Client> connect() {
    auto client = std::make_unique<client::Client>();
    if (!client->connect(harkd_->address()).ok()) return nullptr;
    if (!client->login("iggy", "iggy").ok()) return nullptr;
    return client;
  }

  Status send(client::Client& client, uint32_t stream, uint32_t partition,
              const std::string& text) {
    const protocol::Bytes payload = bytes_of(text);
    const protocol::OutgoingMessage message{.payload = payload};
    return client.send_messages({.stream_id = Identifier::numeric(stream),
                                 .topic_id = Identifier::numeric(0),
                                 .partitioning = protocol::Partitioning::partition(partition)},
                                {&message, 1});
  }

  // Every message of a partition, read from offset 0 in pages.
  std::vector<std::pair<uint64_t, std::string>> read_all(uint32_t stream, uint32_t partition) {
    std::vector<std::pair<uint64_t, std::string>> all;
    while (true) {
      protocol::PollMessagesRequest request =
          poll_request(1, partition, offset_strategy(all.size()), 1000, 0us);
      request.stream_id = Identifier::numeric(stream);
      const auto polled = client_->poll_messages(request);
      EXPECT_TRUE(polled.ok()) << error_name(polled.error());
      if (!polled.ok() || polled->messages().count() == 0) return all;
      const std::vector<uint64_t> offsets = offsets_of(polled->messages());
      const std::vector<std::string> payloads = payloads_of(polled->messages());
      for (size_t i = 0; i < offsets.size(); i++) all.emplace_back(offsets[i], payloads[i]);
    }
  }

  // Bytes harkd has written to the segments of stream `stream`'s partition 0/0: they are in
  // the page cache, so a SIGKILL keeps them (the signal that the background writer wrote).
  uintmax_t written_bytes(uint32_t stream) const {
    const std::filesystem::path partition = std::filesystem::path(directory_) / "streams" /
                                            std::to_string(stream) / "topics/0/partitions/0";
    uintmax_t total = 0;
    std::error_code error;
    for (auto it = std::filesystem::directory_iterator(partition, error);
         !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
      std::error_code size_error;
      const uintmax_t size = it->file_size(size_error);
      if (it->path().extension() == ".log" && !size_error) total += size;
    }
    return total;
  }

  std::string directory_;
  std::unique_ptr<HarkdProcess> harkd_;
  std::unique_ptr<client::Client> client_;
};

// Issue #9: users, their permissions and passwords, and tokens live in <data>/users.log.
TEST_F(HarkdRestart, UsersPermissionsAndTokensSurviveARestart) {
  start();
  protocol::Permissions permissions;
  permissions.global.read_streams = true;
  permissions.streams.push_back({.stream_id = 3, .send_messages = true});
  const auto created = client_->create_user(
      {.username = "kate", .password = "first", .status = 1, .permissions = permissions});
  ASSERT_TRUE(created.ok()) << error_name(created.error());
  auto kate = std::make_unique<client::Client>();
  ASSERT_TRUE(kate->connect(harkd_->address()).ok());
  ASSERT_TRUE(kate->login("kate", "first").ok());
  ASSERT_TRUE(kate->change_password({.user_id = Identifier::numeric(created->user.id),
                                     .current_password = "first",
                                     .new_password = "second"})
                  .ok());
  const auto token = kate->create_personal_access_token({.name = "deploy"});
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(kate->create_personal_access_token({.name = "gone"}).ok());
  ASSERT_TRUE(kate->delete_personal_access_token({.name = "gone"}).ok());
  ASSERT_TRUE(client_->create_user({.username = "temp", .password = "temp", .status = 1}).ok());
  ASSERT_TRUE(client_->delete_user({.user_id = *Identifier::named("temp")}).ok());
  kate.reset();
  client_.reset();
  ASSERT_TRUE(harkd_->stop().clean());

  start();
  const auto users = client_->get_users();
  ASSERT_TRUE(users.ok());
  ASSERT_EQ(users->users.size(), 2u);
  const auto kate_after = client_->get_user({.user_id = *Identifier::named("kate")});
  ASSERT_TRUE(kate_after.ok() && kate_after->has_value());
  EXPECT_EQ((*kate_after)->user.id, created->user.id);
  EXPECT_EQ((*kate_after)->user.created_at, created->user.created_at);
  EXPECT_EQ((*kate_after)->permissions, permissions);
  client::Client again;
  ASSERT_TRUE(again.connect(harkd_->address()).ok());
  EXPECT_EQ(again.login("kate", "first").error(), Error::invalid_credentials);
  EXPECT_TRUE(again.login("kate", "second").ok());
  const auto tokens = again.get_personal_access_tokens();
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->tokens.size(), 1u);
  EXPECT_EQ(tokens->tokens[0].name, "deploy");
  client::Client with_token;
  ASSERT_TRUE(with_token.connect(harkd_->address()).ok());
  const auto login = with_token.login_with_token(token->token);
  ASSERT_TRUE(login.ok()) << error_name(login.error());
  EXPECT_EQ(login->user_id, created->user.id);
  // A new user gets a fresh id, never the deleted one's.
  const auto next = client_->create_user({.username = "next", .password = "next", .status = 1});
  ASSERT_TRUE(next.ok());
  EXPECT_GT(next->user.id, created->user.id + 1);
  // The file holds hashes only.
  std::string bytes;
  {
    FILE* file = fopen((directory_ + "/users.log").c_str(), "rb");
    ASSERT_NE(file, nullptr);
    char buffer[65536];
    bytes.assign(buffer, fread(buffer, 1, sizeof(buffer), file));
    fclose(file);
  }
  EXPECT_EQ(bytes.find("second"), std::string::npos);
  EXPECT_EQ(bytes.find(token->token), std::string::npos);
  EXPECT_NE(bytes.find("$y$"), std::string::npos) << "yescrypt hashes";
}

TEST_F(HarkdRestart, ACleanRestartKeepsTheCatalogMessagesOffsetsAndGroups) {
  start();
  ASSERT_TRUE(client_->create_stream({.name = "orders"}).ok());
  protocol::CreateTopicRequest topic;
  topic.stream_id = Identifier::numeric(0);
  topic.partitions_count = 3;
  topic.message_expiry = 60'000'000;
  topic.name = "created";
  ASSERT_TRUE(client_->create_topic(topic).ok());
  ASSERT_TRUE(client_
                  ->create_consumer_group({.stream_id = Identifier::numeric(0),
                                           .topic_id = Identifier::numeric(0),
                                           .name = "workers"})
                  .ok());
  for (int i = 0; i < 5; i++) ASSERT_TRUE(send(*client_, 0, 0, "m" + std::to_string(i)).ok());
  protocol::StoreConsumerOffsetRequest store;
  store.consumer = {.kind = protocol::ConsumerKind::consumer, .id = Identifier::numeric(7)};
  store.stream_id = Identifier::numeric(0);
  store.topic_id = Identifier::numeric(0);
  store.partition_id = 0;
  store.offset = 2;
  ASSERT_TRUE(client_->store_consumer_offset(store).ok());
  ASSERT_TRUE(client_
                  ->join_consumer_group({.stream_id = Identifier::numeric(0),
                                         .topic_id = Identifier::numeric(0),
                                         .group_id = Identifier::numeric(0)})
                  .ok());
  store.consumer = {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(0)};
  store.offset = 3;
  ASSERT_TRUE(client_->store_consumer_offset(store).ok());
  client_.reset();
  ASSERT_TRUE(harkd_->stop().clean());

  start();
  const auto stream = client_->get_stream({.stream_id = *Identifier::named("orders")});
  ASSERT_TRUE(stream.ok() && stream->has_value());
  ASSERT_EQ((*stream)->topics.size(), 1u);
  EXPECT_EQ((*stream)->topics[0].name, "created");
  EXPECT_EQ((*stream)->topics[0].partitions_count, 3u);
  EXPECT_EQ((*stream)->topics[0].message_expiry, 60'000'000u);
  const auto messages = read_all(0, 0);
  ASSERT_EQ(messages.size(), 5u);
  for (uint64_t i = 0; i < 5; i++) {
    EXPECT_EQ(messages[i], std::make_pair(i, "m" + std::to_string(i)));
  }
  const auto consumer_offset = client_->get_consumer_offset(
      {.consumer = {.kind = protocol::ConsumerKind::consumer, .id = Identifier::numeric(7)},
       .stream_id = Identifier::numeric(0),
       .topic_id = Identifier::numeric(0),
       .partition_id = 0});
  ASSERT_TRUE(consumer_offset.ok() && consumer_offset->has_value());
  EXPECT_EQ((*consumer_offset)->stored_offset, 2u);
  const auto group = client_->get_consumer_group({.stream_id = Identifier::numeric(0),
                                                  .topic_id = Identifier::numeric(0),
                                                  .group_id = *Identifier::named("workers")});
  ASSERT_TRUE(group.ok() && group->has_value());
  EXPECT_EQ((*group)->group.id, 0u);
  EXPECT_TRUE((*group)->members.empty()) << "members are connections: none after a restart";
  const auto group_offset = client_->get_consumer_offset(
      {.consumer = {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(0)},
       .stream_id = Identifier::numeric(0),
       .topic_id = Identifier::numeric(0),
       .partition_id = 0});
  ASSERT_TRUE(group_offset.ok()) << error_name(group_offset.error());
  ASSERT_TRUE(group_offset->has_value());
  EXPECT_EQ((*group_offset)->stored_offset, 3u);
  // Appends continue after the recovered messages.
  ASSERT_TRUE(send(*client_, 0, 0, "after").ok());
  EXPECT_EQ(read_all(0, 0).back(), std::make_pair(uint64_t{5}, std::string("after")));
}

TEST_F(HarkdRestart, SigkillDuringCreatesAndSendsLosesNoAcknowledgedCreateAndNoIntegrity) {
  constexpr int cycles = 3;
  start();
  ASSERT_TRUE(client_->create_stream({.name = "data"}).ok());
  protocol::CreateTopicRequest topic;
  topic.stream_id = Identifier::numeric(0);
  topic.partitions_count = 1;
  topic.name = "t";
  ASSERT_TRUE(client_->create_topic(topic).ok());
  std::vector<std::string> acknowledged;
  for (int cycle = 0; cycle < cycles; cycle++) {
    if (cycle > 0) start();
    std::atomic<bool> stop{false};
    std::vector<std::string> created;
    std::atomic<int> creates{0};
    std::atomic<int> sends{0};
    std::thread creator([&] {
      auto client = connect();
      for (int i = 0; client != nullptr && !stop.load(); i++) {
        const std::string name = "k" + std::to_string(cycle) + "-" + std::to_string(i);
        if (!client->create_stream({.name = name}).ok()) break;
        created.push_back(name);
        creates++;
      }
    });
    std::thread sender([&] {
      auto client = connect();
      for (int i = 0; client != nullptr && !stop.load(); i++) {
        if (!send(*client, 0, 0, "c" + std::to_string(cycle) + "-" + std::to_string(i)).ok()) {
          break;
        }
        sends++;
      }
    });
    // The kill lands while both keep going, once each has had answers (more each cycle) and
    // the background writer wrote some of this cycle's sends (under `never` a SIGKILL loses
    // what it has not written yet).
    const uintmax_t written_before = written_bytes(0);
    EXPECT_TRUE(wait_until([&] {
      return creates >= 5 * (cycle + 1) && sends >= 20 * (cycle + 1) &&
             written_bytes(0) > written_before;
    }));
    harkd_->signal(SIGKILL);
    stop.store(true);
    creator.join();
    sender.join();
    acknowledged.insert(acknowledged.end(), created.begin(), created.end());
    client_.reset();
  }

  start();
  const auto streams = client_->get_streams();
  ASSERT_TRUE(streams.ok()) << error_name(streams.error());
  std::set<std::string> names;
  for (const auto& stream : streams->streams) {
    EXPECT_TRUE(names.insert(stream.name).second) << "duplicate stream " << stream.name;
  }
  for (const std::string& name : acknowledged) {
    EXPECT_TRUE(names.count(name) == 1) << "acknowledged stream " << name << " is missing";
  }
  const auto data = client_->get_topic(
      {.stream_id = *Identifier::named("data"), .topic_id = Identifier::numeric(0)});
  ASSERT_TRUE(data.ok() && data->has_value());
  ASSERT_EQ((*data)->partitions.size(), 1u);

  // Every readable message is intact: offsets 0..n-1, and each cycle's sends in order with no
  // gap inside what survived of that cycle.
  const auto messages = read_all(0, 0);
  EXPECT_FALSE(messages.empty());
  int last_cycle = -1;
  int last_index = -1;
  for (size_t i = 0; i < messages.size(); i++) {
    EXPECT_EQ(messages[i].first, i);
    const std::string& payload = messages[i].second;
    int cycle = -1;
    int index = -1;
    ASSERT_EQ(sscanf(payload.c_str(), "c%d-%d", &cycle, &index), 2) << payload;
    if (cycle != last_cycle) {
      EXPECT_GT(cycle, last_cycle) << payload;
      EXPECT_EQ(index, 0) << payload;
    } else {
      EXPECT_EQ(index, last_index + 1) << payload;
    }
    last_cycle = cycle;
    last_index = index;
  }
}

TEST_F(HarkdRestart, SigkillUnderAlwaysKeepsEveryAcknowledgedSendAndParkedPollsSeeThem) {
  constexpr int cycles = 3;
  constexpr int producers = 4;  // Concurrent sends to one partition share fdatasyncs.
  start("always");
  ASSERT_TRUE(client_->create_stream({.name = "durable"}).ok());
  protocol::CreateTopicRequest topic;
  topic.stream_id = Identifier::numeric(0);
  topic.partitions_count = 1;
  topic.name = "t";
  ASSERT_TRUE(client_->create_topic(topic).ok());
  std::set<std::string> acknowledged;
  for (int cycle = 0; cycle < cycles; cycle++) {
    if (cycle > 0) start("always");
    std::atomic<bool> stop{false};
    std::vector<std::vector<std::string>> acked(producers);
    std::atomic<int> acked_count{0};
    std::vector<std::thread> senders;
    for (int p = 0; p < producers; p++) {
      senders.emplace_back([&, p] {
        auto client = connect();
        for (int i = 0; client != nullptr && !stop.load(); i++) {
          const std::string text =
              "p" + std::to_string(p) + "-c" + std::to_string(cycle) + "-" + std::to_string(i);
          if (!send(*client, 0, 0, text).ok()) break;
          acked[p].push_back(text);  // Answered: committed under always.
          acked_count++;
        }
      });
    }
    // The kill lands while they keep sending, once they have had answers (more each cycle).
    EXPECT_TRUE(wait_until([&] { return acked_count >= 10 * (cycle + 1); }));
    harkd_->signal(SIGKILL);
    stop.store(true);
    for (std::thread& sender : senders) sender.join();
    for (const auto& texts : acked) acknowledged.insert(texts.begin(), texts.end());
    client_.reset();
  }
  ASSERT_FALSE(acknowledged.empty()) << "no send was acknowledged: the test proves nothing";

  start("always");
  const auto messages = read_all(0, 0);
  std::set<std::string> present;
  std::vector<std::pair<int, int>> last(producers * cycles, {-1, -1});
  for (size_t i = 0; i < messages.size(); i++) {
    EXPECT_EQ(messages[i].first, i);
    present.insert(messages[i].second);
    int p = -1;
    int cycle = -1;
    int index = -1;
    ASSERT_EQ(sscanf(messages[i].second.c_str(), "p%d-c%d-%d", &p, &cycle, &index), 3);
    auto& [seen_cycle, seen_index] = last[static_cast<size_t>(p)];
    if (cycle == seen_cycle) {
      EXPECT_EQ(index, seen_index + 1) << "a producer's sends out of order or with a gap";
    }
    seen_cycle = cycle;
    seen_index = index;
  }
  for (const std::string& text : acknowledged) {
    EXPECT_EQ(present.count(text), 1u) << "acknowledged send " << text << " is missing";
  }

  // A poll parked on the restarted server wakes on the next committed send.
  AsyncPoll poll(harkd_->address(), poll_request(9, 0, offset_strategy(messages.size()), 10,
                                                 std::chrono::seconds(20)));
  EXPECT_TRUE(wait_until_parked(*harkd_, 1));
  EXPECT_FALSE(poll.answered());
  ASSERT_TRUE(send(*client_, 0, 0, "after-restart").ok());
  const PollOutcome& outcome = poll.wait(std::chrono::seconds(20));
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  ASSERT_EQ(outcome.payloads.size(), 1u);
  EXPECT_EQ(outcome.payloads[0], "after-restart");
  EXPECT_EQ(outcome.offsets[0], messages.size());
}

}  // namespace
}  // namespace hark::test
