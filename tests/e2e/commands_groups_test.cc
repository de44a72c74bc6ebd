// Covers consumer groups through harkd (2 shards): create/get/list/delete, join/leave with the
// assignment rule (partition p to member p mod members, in join order), a member's leave on
// disconnect, group polls without a partition served round robin from the assignment with
// auto-commit (an immediate one reads only the cursor's partition, as Iggy 0.8.0), a parked member
// woken by a send to any of its partitions, and a parked member re-evaluated on its new assignment
// when a second member joins (the rebalance while parked).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;

class HarkdGroups : public HarkdTest {
 protected:
  // Group 0 of stream 0, topic 0, as any of the requests that name a group.
  template <typename Request = protocol::JoinConsumerGroupRequest>
  static Request group_zero() {
    return {.stream_id = Identifier::numeric(0),
            .topic_id = Identifier::numeric(0),
            .group_id = Identifier::numeric(0)};
  }

  // Creates group "g" (id 0) on stream 0, topic 0.
  void create_group() {
    const auto group = admin_->create_consumer_group(
        {.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0), .name = "g"});
    ASSERT_TRUE(group.ok()) << error_name(group.error());
    ASSERT_EQ(group->id, 0u);
  }

  std::optional<protocol::ConsumerGroupDetailsResponse> group_details() {
    const auto group = admin_->get_consumer_group(group_zero<protocol::GetConsumerGroupRequest>());
    EXPECT_TRUE(group.ok()) << error_name(group.error());
    return group.ok() ? *group : std::nullopt;
  }

  // Waits (bounded) until the group has `members` members.
  bool wait_for_members(size_t members) {
    return wait_until(
        [&] {
          const auto details = group_details();
          return details && details->members.size() == members;
        },
        at_once_bound, 10ms);
  }

  // A poll by group 0 without a partition.
  static protocol::PollMessagesRequest group_poll(uint32_t count, std::chrono::microseconds wait,
                                                  bool auto_commit) {
    protocol::PollMessagesRequest request =
        poll_request(0, 0, next_strategy(), count, wait, auto_commit);
    request.consumer = {.kind = protocol::ConsumerKind::group, .id = Identifier::numeric(0)};
    request.partition_id.reset();
    return request;
  }

  // A raw connection, logged in, that joined group 0.
  bool join_raw(RawConnection& connection) {
    if (!connection.connect_and_login(address())) return false;
    const auto joined = connection.exchange(request_frame(group_zero()));
    return joined && joined->status == 0;
  }
};

TEST_F(HarkdGroups, GroupsAreCreatedListedReadAndDeleted) {
  create_stream_and_topic(3);
  create_group();
  const auto again = admin_->create_consumer_group(
      {.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0), .name = "g"});
  EXPECT_EQ(again.error(), Error::consumer_group_name_already_exists);
  const auto second = admin_->create_consumer_group(
      {.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0), .name = "h"});
  ASSERT_TRUE(second.ok()) << error_name(second.error());
  EXPECT_EQ(second->id, 1u);
  EXPECT_EQ(second->partitions_count, 3u);
  EXPECT_EQ(second->members_count, 0u);

  const auto by_name = admin_->get_consumer_group({.stream_id = Identifier::numeric(0),
                                                   .topic_id = *Identifier::named("t"),
                                                   .group_id = *Identifier::named("h")});
  ASSERT_TRUE(by_name.ok()) << error_name(by_name.error());
  ASSERT_TRUE(by_name->has_value());
  EXPECT_EQ((*by_name)->group.id, 1u);
  EXPECT_EQ((*by_name)->group.name, "h");

  const auto groups = admin_->get_consumer_groups(
      {.stream_id = Identifier::numeric(0), .topic_id = Identifier::numeric(0)});
  ASSERT_TRUE(groups.ok()) << error_name(groups.error());
  ASSERT_EQ(groups->groups.size(), 2u);
  EXPECT_EQ(groups->groups[0].name, "g");
  EXPECT_EQ(groups->groups[1].name, "h");

  EXPECT_TRUE(
      admin_->delete_consumer_group(group_zero<protocol::DeleteConsumerGroupRequest>()).ok());
  const auto gone = admin_->get_consumer_group(group_zero<protocol::GetConsumerGroupRequest>());
  ASSERT_TRUE(gone.ok()) << error_name(gone.error());
  EXPECT_FALSE(gone->has_value()) << "a missing group is OK with an empty payload";
  EXPECT_EQ(
      admin_->delete_consumer_group(group_zero<protocol::DeleteConsumerGroupRequest>()).error(),
      Error::consumer_group_id_not_found);
  EXPECT_EQ(admin_->join_consumer_group(group_zero()).error(), Error::consumer_group_id_not_found);
}

TEST_F(HarkdGroups, MembersAreDealtPartitionsAndLeaveOnDisconnect) {
  create_stream_and_topic(3);
  create_group();
  auto first = connect_client();
  auto second = connect_client();
  ASSERT_TRUE(first->join_consumer_group(group_zero()).ok());
  const auto me = first->get_me();
  ASSERT_TRUE(me.ok()) << error_name(me.error());
  ASSERT_EQ(me->consumer_groups.size(), 1u);
  EXPECT_EQ(me->consumer_groups[0], (protocol::ConsumerGroupInfo{0, 0, 0}));
  EXPECT_EQ(me->client.consumer_groups_count, 1u);

  ASSERT_TRUE(second->join_consumer_group(group_zero()).ok());
  const auto details = group_details();
  ASSERT_TRUE(details.has_value());
  ASSERT_EQ(details->members.size(), 2u);
  EXPECT_EQ(details->members[0].id, me->client.client_id);
  EXPECT_EQ(details->members[0].partitions, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(details->members[1].partitions, (std::vector<uint32_t>{1}));

  EXPECT_TRUE(second->leave_consumer_group(group_zero<protocol::LeaveConsumerGroupRequest>()).ok());
  EXPECT_EQ(second->leave_consumer_group(group_zero<protocol::LeaveConsumerGroupRequest>()).error(),
            Error::consumer_group_member_not_found);
  ASSERT_TRUE(second->join_consumer_group(group_zero()).ok());
  ASSERT_TRUE(wait_for_members(2));

  second->close();  // Gone: it leaves, and the first member gets every partition.
  ASSERT_TRUE(wait_for_members(1));
  const auto after = group_details();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->members[0].partitions, (std::vector<uint32_t>{0, 1, 2}));
}

TEST_F(HarkdGroups, MemberPollsEveryAssignedPartitionWithAutoCommit) {
  create_stream_and_topic(3);
  create_group();
  for (uint32_t partition = 0; partition < 3; partition++) {
    ASSERT_TRUE(send_text(partition, "p" + std::to_string(partition)).ok());
  }
  auto member = connect_client();
  const auto not_member = member->poll_messages(group_poll(10, 0us, true));
  EXPECT_EQ(not_member.error(), Error::consumer_group_member_not_found);
  ASSERT_TRUE(member->join_consumer_group(group_zero()).ok());

  std::vector<std::string> seen;
  for (int i = 0; i < 3; i++) {
    const auto polled = member->poll_messages(group_poll(10, 0us, true));
    ASSERT_TRUE(polled.ok()) << error_name(polled.error());
    for (const std::string& payload : payloads_of(polled->messages())) seen.push_back(payload);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"p0", "p1", "p2"}));
  const auto drained = member->poll_messages(group_poll(10, 0us, true));
  ASSERT_TRUE(drained.ok()) << error_name(drained.error());
  EXPECT_EQ(drained->messages().count(), 0u) << "auto-commit stored the group's offsets";
}

// Iggy 0.8.0 answers an immediate group poll from the one partition its round-robin cursor
// names, empty if that one is; Iggy's Node SDK e2e suite (consumer-group::poll) counts on it.
TEST_F(HarkdGroups, ImmediateMemberPollReadsOnlyTheRoundRobinPartition) {
  create_stream_and_topic(3);
  create_group();
  ASSERT_TRUE(send_text(1, "only on 1").ok());
  auto member = connect_client();
  ASSERT_TRUE(member->join_consumer_group(group_zero()).ok());

  std::vector<uint32_t> partitions;
  std::vector<uint32_t> counts;
  for (int i = 0; i < 4; i++) {
    const auto polled = member->poll_messages(group_poll(10, 0us, true));
    ASSERT_TRUE(polled.ok()) << error_name(polled.error());
    partitions.push_back(polled->header().partition_id);
    counts.push_back(polled->messages().count());
  }
  EXPECT_EQ(partitions, (std::vector<uint32_t>{0, 1, 2, 0}));
  EXPECT_EQ(counts, (std::vector<uint32_t>{0, 1, 0, 0}));
}

TEST_F(HarkdGroups, ParkedMemberIsWokenByASendToAnyOfItsPartitions) {
  create_stream_and_topic(3);
  create_group();
  RawConnection member;
  ASSERT_TRUE(join_raw(member));
  AsyncPoll poll(member, group_poll(10, 20s, false));
  EXPECT_TRUE(wait_until_parked(harkd_, 1));
  EXPECT_FALSE(poll.answered());
  ASSERT_TRUE(send_text(2, "late").ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.header.partition_id, 2u);
  EXPECT_EQ(outcome.payloads, (std::vector<std::string>{"late"}));
}

TEST_F(HarkdGroups, ParkedMemberIsReevaluatedOnItsNewAssignmentAfterARebalance) {
  create_stream_and_topic(2);
  create_group();
  RawConnection first;
  ASSERT_TRUE(join_raw(first));
  AsyncPoll poll(first, group_poll(10, 20s, false));
  ASSERT_TRUE(wait_until_parked(harkd_, 1));
  ASSERT_FALSE(poll.answered());

  // A second member joins: the first keeps partition 0, the second gets partition 1.
  auto second = connect_client();
  ASSERT_TRUE(second->join_consumer_group(group_zero()).ok());
  ASSERT_TRUE(send_text(1, "for the second").ok());
  // The rebalance cancelled the parked poll and parked it again on partition 0 alone; the
  // send to partition 1 (answered after its commit was settled) woke nobody.
  EXPECT_TRUE(wait_for_stats(
      harkd_, [](const HarkdStats& stats) { return stats.parked >= 2 && stats.parked_now == 1; }));
  EXPECT_EQ(harkd_stats().woken, 0u);
  EXPECT_FALSE(poll.answered()) << "partition 1 is no longer the first member's";

  ASSERT_TRUE(send_text(0, "for the first").ok());
  const PollOutcome& outcome = poll.wait(at_once_bound);
  ASSERT_TRUE(outcome.answered);
  EXPECT_EQ(outcome.status, 0u);
  EXPECT_EQ(outcome.header.partition_id, 0u);
  EXPECT_EQ(outcome.payloads, (std::vector<std::string>{"for the first"}));
}

}  // namespace
}  // namespace hark::test
