#include "hark/protocol/group_requests.h"

#include "hark/protocol/primitives.h"

namespace hark::protocol {
namespace {

template <typename T>
Status decode_stream_topic(Reader& reader, T& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.topic_id, read_identifier(reader));
  return ok_status();
}

// [stream Id][topic Id][group Id]: get, delete, join and leave.
template <typename T>
Status decode_group(Reader& reader, T& request) {
  HARK_TRY(decode_stream_topic(reader, request));
  HARK_TRY_ASSIGN(request.group_id, read_identifier(reader));
  return ok_status();
}

template <typename T>
void encode_group(const T& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
  write_identifier(writer, request.topic_id);
  write_identifier(writer, request.group_id);
}

}  // namespace

void encode(const GetConsumerGroupRequest& request, Writer& writer) {
  encode_group(request, writer);
}

Status decode(Reader& reader, GetConsumerGroupRequest& request) {
  return decode_group(reader, request);
}

void encode(const GetConsumerGroupsRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
  write_identifier(writer, request.topic_id);
}

Status decode(Reader& reader, GetConsumerGroupsRequest& request) {
  return decode_stream_topic(reader, request);
}

void encode(const CreateConsumerGroupRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
  write_identifier(writer, request.topic_id);
  write_wire_name(writer, request.name);
}

Status decode(Reader& reader, CreateConsumerGroupRequest& request) {
  HARK_TRY(decode_stream_topic(reader, request));
  HARK_TRY_ASSIGN(request.name, read_wire_name(reader));
  return ok_status();
}

void encode(const DeleteConsumerGroupRequest& request, Writer& writer) {
  encode_group(request, writer);
}

Status decode(Reader& reader, DeleteConsumerGroupRequest& request) {
  return decode_group(reader, request);
}

void encode(const JoinConsumerGroupRequest& request, Writer& writer) {
  encode_group(request, writer);
}

Status decode(Reader& reader, JoinConsumerGroupRequest& request) {
  return decode_group(reader, request);
}

void encode(const LeaveConsumerGroupRequest& request, Writer& writer) {
  encode_group(request, writer);
}

Status decode(Reader& reader, LeaveConsumerGroupRequest& request) {
  return decode_group(reader, request);
}

}  // namespace hark::protocol
