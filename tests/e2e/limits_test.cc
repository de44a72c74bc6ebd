// Covers harkd's limits end to end, each producing its Iggy error: connections over
// limits.connections_max are refused with CannotEstablishConnection (9) while open ones keep
// working; a send over limits.send_payload_max is InvalidSizeBytes (80) and closes only that
// connection; a message over limits.message_payload_max is TooBigMessagePayload (4022); parked
// polls over limits.parked_polls_per_shard / _total are FeatureUnavailable (5); a too large
// connections_max for RLIMIT_NOFILE, or an unknown durability policy, stops harkd at start
// (exit 2).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

// One harkd started with extra flags.
class HarkdLimits : public ::testing::Test {
 protected:
  void start(std::vector<std::string> args, uint32_t shards = 2) {
    HarkdProcess::Options options;
    options.harkd_path = harkd_path();
    options.shards_count = shards;
    options.extra_args = std::move(args);
    ASSERT_TRUE(harkd_.start(options)) << harkd_.error_text() << "\n" << harkd_.stderr_tail();
    admin_ = connect();
    ASSERT_NE(admin_, nullptr);
    ASSERT_TRUE(admin_->create_stream({.name = "s"}).ok());
    protocol::CreateTopicRequest topic;
    topic.stream_id = Identifier::numeric(0);
    topic.partitions_count = 1;
    topic.name = "t";
    ASSERT_TRUE(admin_->create_topic(topic).ok());
  }

  std::unique_ptr<client::Client> connect() {
    auto client = std::make_unique<client::Client>();
    if (!client->connect(harkd_.address()).ok()) return nullptr;
    if (!client->login("iggy", "iggy").ok()) return nullptr;
    return client;
  }

  Status send_payload(client::Client& client, size_t bytes) {
    const protocol::Bytes payload(bytes, std::byte{'x'});
    const protocol::OutgoingMessage message{.payload = payload};
    return client.send_messages({.stream_id = Identifier::numeric(0),
                                 .topic_id = Identifier::numeric(0),
                                 .partitioning = protocol::Partitioning::partition(0)},
                                {&message, 1});
  }

  // Parks `limit` polls, checks that one more is refused with FeatureUnavailable, then wakes
  // the parked ones with a send.
  void expect_parked_then_refused(uint32_t limit) {
    std::vector<std::unique_ptr<AsyncPoll>> parked;
    for (uint32_t consumer = 1; consumer <= limit; consumer++) {
      parked.push_back(std::make_unique<AsyncPoll>(
          harkd_.address(), poll_request(consumer, 0, next_strategy(), 1, 20s)));
    }
    EXPECT_TRUE(wait_until_parked(harkd_, limit));
    for (const auto& poll : parked) EXPECT_FALSE(poll->answered());
    auto extra = connect();
    ASSERT_NE(extra, nullptr);
    const auto refused = extra->poll_messages(poll_request(99, 0, next_strategy(), 1, 20s));
    EXPECT_EQ(refused.error(), Error::feature_unavailable);
    EXPECT_TRUE(extra->ping().ok()) << "the connection stays usable";
    ASSERT_TRUE(send_payload(*admin_, 10).ok());
    for (const auto& poll : parked) {
      const PollOutcome& outcome = poll->wait(at_once_bound);
      EXPECT_TRUE(outcome.answered);
      EXPECT_EQ(outcome.offsets, (std::vector<uint64_t>{0}));
    }
  }

  void TearDown() override {
    if (HasFailure()) std::cerr << harkd_.stderr_tail();
  }

  HarkdProcess harkd_;
  std::unique_ptr<client::Client> admin_;
};

TEST_F(HarkdLimits, ConnectionsOverTheLimitAreRefusedWithCannotEstablishConnection) {
  start({"--connections-max", "4"}, 1);
  std::vector<std::unique_ptr<client::Client>> open;
  for (int i = 0; i < 3; i++) open.push_back(connect());
  for (const auto& client : open) ASSERT_NE(client, nullptr);
  RawConnection refused;
  ASSERT_TRUE(refused.connect(harkd_.address()));
  const auto answer = refused.read_response(SteadyClock::now() + at_once_bound);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, error_code(Error::cannot_establish_connection));
  for (const auto& client : open) EXPECT_TRUE(client->ping().ok());
  open.pop_back();  // A slot frees up once harkd sees the close.
  std::unique_ptr<client::Client> again;
  wait_until([&] { return (again = connect()) != nullptr; }, at_once_bound, 20ms);
  EXPECT_NE(again, nullptr);
}

TEST_F(HarkdLimits, OversizedSendsAndMessagesGetTheirErrors) {
  start({"--send-payload-max", "64KiB", "--message-payload-max", "1000"});
  EXPECT_TRUE(send_payload(*admin_, 1000).ok());
  EXPECT_EQ(send_payload(*admin_, 1001).error(), Error::too_big_message_payload);
  EXPECT_TRUE(admin_->ping().ok()) << "a too big message keeps the connection";

  auto other = connect();
  const protocol::Bytes payload(100'000, std::byte{'y'});
  std::vector<protocol::OutgoingMessage> messages(1, {.payload = {payload.data(), 900}});
  messages.resize(100, messages.front());  // 100 × (64 + 900) bytes: over 64 KiB.
  EXPECT_EQ(other
                ->send_messages({.stream_id = Identifier::numeric(0),
                                 .topic_id = Identifier::numeric(0),
                                 .partitioning = protocol::Partitioning::partition(0)},
                                messages)
                .error(),
            Error::invalid_size_bytes);
  EXPECT_TRUE(admin_->ping().ok()) << "another connection is not disturbed";
}

TEST_F(HarkdLimits, ParkedPollsOverTheShardLimitAreFeatureUnavailable) {
  start({"--parked-polls-per-shard", "2"}, 1);
  expect_parked_then_refused(2);
}

TEST_F(HarkdLimits, ParkedPollsOverTheTotalLimitAreFeatureUnavailable) {
  // Each shard could hold all three: only the total refuses the fourth.
  start({"--parked-polls-per-shard", "3", "--parked-polls-total", "3"}, 2);
  expect_parked_then_refused(3);
}

// harkd run to its exit with `args`: the exit code and what it wrote to stderr.
std::pair<ProcessExit, std::string> run_to_exit(std::vector<std::string> args) {
  HarkdProcess::Options options;
  options.harkd_path = harkd_path();
  options.extra_args = std::move(args);
  options.ready_timeout = 10s;
  HarkdProcess harkd;
  EXPECT_FALSE(harkd.start(options)) << "harkd started";
  return {ProcessExit{}, harkd.error_text() + "\n" + harkd.stderr_tail()};
}

TEST(HarkdStartLimits, ImpossibleSettingsStopHarkdAtStartWithAReason) {
  const auto [nofile_exit, nofile_text] = run_to_exit({"--connections-max", "100000"});
  EXPECT_NE(nofile_text.find("RLIMIT_NOFILE"), std::string::npos) << nofile_text;
  EXPECT_NE(nofile_text.find("exited 2"), std::string::npos) << nofile_text;
  const auto [policy_exit, policy_text] = run_to_exit({"--durability", "sometimes"});
  EXPECT_NE(policy_text.find("storage.durability"), std::string::npos) << policy_text;
  EXPECT_NE(policy_text.find("write, interval, always or memory"), std::string::npos)
      << policy_text;
  EXPECT_NE(policy_text.find("exited 2"), std::string::npos) << policy_text;
}

}  // namespace
}  // namespace hark::test
