// Covers the default wait harkd gives classic polls (no wait_timeout_us on the wire, as every
// released Iggy SDK sends them; docs/long-polling.md §Classic clients) against a real harkd
// started with --classic-default-wait 20s, scoped to user "alice" and stream "waiting". Polls
// are classic frames (poll_request with wait 0 leaves the field out). In scope, a poll on an
// empty partition parks (harkd's parked counter says so) and a send wakes it; out of scope, and
// with an explicit wait of 0, it answers at once and nothing parks. Without the setting a
// classic poll answers at once: LongPoll.AClassicPollWithoutTheWaitFieldIsAnsweredAtOnce.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

class ClassicWait : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--classic-default-wait",         "20s",
                          "--classic-default-wait-users",   "alice",
                          "--classic-default-wait-streams", "waiting"};
    return options;
  }

  // Stream "s" (id 0) and stream "waiting" (id 1), each with topic "t" of one partition, and
  // user alice, who may poll and send everywhere.
  void create_streams_and_alice() {
    create_stream_and_topic(1);
    const auto waiting = admin_->create_stream({.name = "waiting"});
    ASSERT_TRUE(waiting.ok()) << error_name(waiting.error());
    ASSERT_EQ(waiting->id, 1u);
    protocol::CreateTopicRequest topic;
    topic.stream_id = Identifier::numeric(1);
    topic.partitions_count = 1;
    topic.name = "t";
    ASSERT_TRUE(admin_->create_topic(topic).ok());
    protocol::Permissions permissions;
    permissions.global.read_streams = true;
    permissions.global.read_topics = true;
    permissions.global.poll_messages = true;
    permissions.global.send_messages = true;
    ASSERT_NE(create_user("alice", permissions), UINT32_MAX);
  }

  // A classic poll (no wait_timeout_us) of partition 0 of `stream`'s topic 0.
  static protocol::PollMessagesRequest classic_poll(uint32_t stream) {
    protocol::PollMessagesRequest request = poll_request(7, 0, next_strategy(), 10, 0us);
    request.stream_id = Identifier::numeric(stream);
    EXPECT_FALSE(request.wait_timeout_us.has_value());
    return request;
  }

  Status send_to(uint32_t stream, std::string_view payload) {
    const protocol::Bytes bytes(
        reinterpret_cast<const std::byte*>(payload.data()),
        reinterpret_cast<const std::byte*>(payload.data()) + payload.size());
    const protocol::OutgoingMessage message{.payload = bytes};
    return admin_->send_messages({.stream_id = Identifier::numeric(stream),
                                  .topic_id = Identifier::numeric(0),
                                  .partitioning = protocol::Partitioning::partition(0)},
                                 {&message, 1});
  }

  // Sends `request` on `connection` and expects an empty answer at once, with nothing parked.
  void expect_answered_at_once(RawConnection& connection,
                               const protocol::PollMessagesRequest& request) {
    const PollOutcome outcome =
        poll_outcome(connection.exchange(request_frame(request), at_once_bound));
    ASSERT_TRUE(outcome.answered);
    EXPECT_EQ(outcome.status, 0u);
    EXPECT_EQ(outcome.header.messages_count, 0u);
    EXPECT_EQ(harkd_stats().parked, 0u) << "a poll out of scope was parked";
  }
};

TEST_F(ClassicWait, AClassicPollOfAUserInScopeParksAndASendWakesIt) {
  create_streams_and_alice();
  RawConnection alice;
  ASSERT_TRUE(alice.connect_and_login(address(), "alice", "secret"));
  AsyncPoll poll(alice, classic_poll(0));  // Stream "s" is not in scope; alice is.
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  EXPECT_FALSE(poll.answered()) << "answered before anything could satisfy it";
  ASSERT_TRUE(send_to(0, "for alice").ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.payloads, std::vector<std::string>{"for alice"});
}

TEST_F(ClassicWait, AClassicPollOnAStreamInScopeParksEvenWhenNamedById) {
  create_streams_and_alice();
  RawConnection root;  // iggy: not in the user list; stream 1 is "waiting", listed by name.
  ASSERT_TRUE(root.connect_and_login(address()));
  AsyncPoll poll(root, classic_poll(1));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  EXPECT_FALSE(poll.answered()) << "answered before anything could satisfy it";
  ASSERT_TRUE(send_to(1, "waited").ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.payloads, std::vector<std::string>{"waited"});
}

TEST_F(ClassicWait, OutOfScopeOrWithAnExplicitZeroAClassicPollAnswersAtOnce) {
  create_streams_and_alice();
  RawConnection root;
  ASSERT_TRUE(root.connect_and_login(address()));
  expect_answered_at_once(root, classic_poll(0));  // Neither the user nor the stream listed.
  RawConnection alice;
  ASSERT_TRUE(alice.connect_and_login(address(), "alice", "secret"));
  protocol::PollMessagesRequest explicit_zero = classic_poll(1);
  explicit_zero.wait_timeout_us = 0;  // A hark-aware client asking for an answer at once.
  expect_answered_at_once(alice, explicit_zero);
}

}  // namespace
}  // namespace hark::test
