#include "hark/protocol/group_responses.h"

#include "hark/protocol/primitives.h"
#include "hark/protocol/response_lists.h"

namespace hark::protocol {

void encode(const ConsumerGroupResponse& response, Writer& writer) {
  writer.u32(response.id);
  writer.u32(response.partitions_count);
  writer.u32(response.members_count);
  write_wire_name(writer, response.name);
}

Status decode(Reader& reader, ConsumerGroupResponse& response) {
  HARK_TRY_ASSIGN(response.id, reader.u32());
  HARK_TRY_ASSIGN(response.partitions_count, reader.u32());
  HARK_TRY_ASSIGN(response.members_count, reader.u32());
  HARK_TRY_ASSIGN(response.name, read_wire_name(reader));
  return ok_status();
}

void encode(const ConsumerGroupMember& member, Writer& writer) {
  writer.u32(member.id);
  writer.u32(static_cast<uint32_t>(member.partitions.size()));
  for (const uint32_t partition_id : member.partitions) writer.u32(partition_id);
}

Status decode(Reader& reader, ConsumerGroupMember& member) {
  HARK_TRY_ASSIGN(member.id, reader.u32());
  HARK_TRY_ASSIGN(const uint32_t partitions_count, reader.u32());
  // Check the whole list is present before growing the vector by a count from the input.
  if (reader.remaining() / sizeof(uint32_t) < partitions_count) return Error::invalid_command;
  member.partitions.clear();
  member.partitions.reserve(partitions_count);
  for (uint32_t i = 0; i < partitions_count; ++i) {
    HARK_TRY_ASSIGN(const uint32_t partition_id, reader.u32());
    member.partitions.push_back(partition_id);
  }
  return ok_status();
}

void encode(const ConsumerGroupDetailsResponse& response, Writer& writer) {
  encode(response.group, writer);
  encode_all(response.members, writer);
}

Status decode(Reader& reader, ConsumerGroupDetailsResponse& response) {
  HARK_TRY(decode(reader, response.group));
  return decode_counted(reader, response.group.members_count, response.members);
}

void encode(const ConsumerGroupsResponse& response, Writer& writer) {
  encode_all(response.groups, writer);
}

Status decode(Reader& reader, ConsumerGroupsResponse& response) {
  return decode_run(reader, response.groups);
}

void encode(const ConsumerOffsetResponse& response, Writer& writer) {
  writer.u32(response.partition_id);
  writer.u64(response.current_offset);
  writer.u64(response.stored_offset);
}

Status decode(Reader& reader, ConsumerOffsetResponse& response) {
  HARK_TRY_ASSIGN(response.partition_id, reader.u32());
  HARK_TRY_ASSIGN(response.current_offset, reader.u64());
  HARK_TRY_ASSIGN(response.stored_offset, reader.u64());
  return ok_status();
}

}  // namespace hark::protocol
