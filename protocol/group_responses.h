#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Responses of the consumer-group and consumer-offset commands, as 0.8.0 sends them
// (docs/wire.md §Responses). get_consumer_group and get_consumer_offset answer "not found"
// with an empty payload: decode those with decode_optional_payload<T>() (codec.h).

// 13 + name bytes: [id u32][partitions_count u32][members_count u32][name WireName].
// create_consumer_group returns one.
struct ConsumerGroupResponse {
  uint32_t id = 0;
  uint32_t partitions_count = 0;
  uint32_t members_count = 0;
  std::string name;
  bool operator==(const ConsumerGroupResponse&) const = default;
};

// [member_id u32][partitions_count u32][partition_id u32 × partitions_count].
struct ConsumerGroupMember {
  uint32_t id = 0;
  std::vector<uint32_t> partitions;
  bool operator==(const ConsumerGroupMember&) const = default;
};

// get_consumer_group: the group, then group.members_count members.
struct ConsumerGroupDetailsResponse {
  ConsumerGroupResponse group;
  std::vector<ConsumerGroupMember> members;
  bool operator==(const ConsumerGroupDetailsResponse&) const = default;
};

// get_consumer_groups: ConsumerGroupResponses to the end of the payload.
struct ConsumerGroupsResponse {
  std::vector<ConsumerGroupResponse> groups;
  bool operator==(const ConsumerGroupsResponse&) const = default;
};

// 20 bytes: [partition_id u32][current_offset u64][stored_offset u64].
struct ConsumerOffsetResponse {
  uint32_t partition_id = 0;
  uint64_t current_offset = 0;
  uint64_t stored_offset = 0;
  bool operator==(const ConsumerOffsetResponse&) const = default;
};

void encode(const ConsumerGroupResponse& response, Writer& writer);
Status decode(Reader& reader, ConsumerGroupResponse& response);
void encode(const ConsumerGroupMember& member, Writer& writer);
Status decode(Reader& reader, ConsumerGroupMember& member);
void encode(const ConsumerGroupDetailsResponse& response, Writer& writer);
Status decode(Reader& reader, ConsumerGroupDetailsResponse& response);
void encode(const ConsumerGroupsResponse& response, Writer& writer);
Status decode(Reader& reader, ConsumerGroupsResponse& response);
void encode(const ConsumerOffsetResponse& response, Writer& writer);
Status decode(Reader& reader, ConsumerOffsetResponse& response);

}  // namespace hark::protocol
