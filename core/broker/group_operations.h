#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hark/core/broker/operation.h"

namespace hark::core {

// Consumer groups: commands and reads.

class CreateConsumerGroup : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;
  std::string name;
  GroupInfo group;  // Out.

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class DeleteConsumerGroup : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;
  NameOrId group;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Makes client `member` a member (idempotent); the group's partitions are reassigned.
class JoinConsumerGroup : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;
  NameOrId group;
  uint32_t member = 0;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// consumer_group_member_not_found (5006) if `member` had not joined.
class LeaveConsumerGroup : public MetadataCommand {
 public:
  NameOrId stream;
  NameOrId topic;
  NameOrId group;
  uint32_t member = 0;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Client `member` went away: it leaves every group it joined.
class LeaveConsumerGroups : public MetadataCommand {
 public:
  uint32_t member = 0;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

// Every member whose id is in [first, last] leaves every group it joined: in cluster mode a
// node's clients, whose ids carry the node's id, when the node is gone or has restarted
// (docs/cluster.md §Consumer groups).
class LeaveMembersInRange : public MetadataCommand {
 public:
  uint32_t first = 0;
  uint32_t last = 0;

 private:
  Status apply(internal::CatalogEdit& edit) override;
};

class GetConsumerGroup : public Operation {
 public:
  NameOrId stream;
  NameOrId topic;
  NameOrId group;
  std::optional<GroupDetails> result;  // Out; nullopt if there is no such group.

 private:
  void step(internal::BrokerShard& shard) override;
};

// One member of one group, by ids.
struct GroupMembership {
  uint32_t member = 0;
  uint32_t stream_id = 0;
  uint32_t topic_id = 0;
  uint32_t group_id = 0;
};

// The groups `member` belongs to, or (no member) every membership of every group: for Iggy's
// get_me, get_client and get_clients. Answered on the home shard from its catalog.
class GetMemberGroups : public Operation {
 public:
  std::optional<uint32_t> member;
  std::vector<GroupMembership> memberships;  // Out, by stream, topic, group.

 private:
  void step(internal::BrokerShard& shard) override;
};

class GetConsumerGroups : public Operation {
 public:
  NameOrId stream;
  NameOrId topic;
  std::vector<GroupInfo> groups;  // Out, by id.

 private:
  void step(internal::BrokerShard& shard) override;
};

}  // namespace hark::core
