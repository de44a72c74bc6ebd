#include "hark/protocol/stream_responses.h"

#include "hark/protocol/primitives.h"
#include "hark/protocol/response_lists.h"

namespace hark::protocol {

void encode(const StreamResponse& response, Writer& writer) {
  writer.u32(response.id);
  writer.u64(response.created_at);
  writer.u32(response.topics_count);
  writer.u64(response.size_bytes);
  writer.u64(response.messages_count);
  write_wire_name(writer, response.name);
}

Status decode(Reader& reader, StreamResponse& response) {
  HARK_TRY_ASSIGN(response.id, reader.u32());
  HARK_TRY_ASSIGN(response.created_at, reader.u64());
  HARK_TRY_ASSIGN(response.topics_count, reader.u32());
  HARK_TRY_ASSIGN(response.size_bytes, reader.u64());
  HARK_TRY_ASSIGN(response.messages_count, reader.u64());
  HARK_TRY_ASSIGN(response.name, read_wire_name(reader));
  return ok_status();
}

void encode(const TopicResponse& response, Writer& writer) {
  writer.u32(response.id);
  writer.u64(response.created_at);
  writer.u32(response.partitions_count);
  writer.u64(response.message_expiry);
  writer.u8(response.compression_algorithm);
  writer.u64(response.max_topic_size);
  writer.u8(response.replication_factor);
  writer.u64(response.size_bytes);
  writer.u64(response.messages_count);
  write_wire_name(writer, response.name);
}

Status decode(Reader& reader, TopicResponse& response) {
  HARK_TRY_ASSIGN(response.id, reader.u32());
  HARK_TRY_ASSIGN(response.created_at, reader.u64());
  HARK_TRY_ASSIGN(response.partitions_count, reader.u32());
  HARK_TRY_ASSIGN(response.message_expiry, reader.u64());
  HARK_TRY_ASSIGN(response.compression_algorithm, reader.u8());
  HARK_TRY_ASSIGN(response.max_topic_size, reader.u64());
  HARK_TRY_ASSIGN(response.replication_factor, reader.u8());
  HARK_TRY_ASSIGN(response.size_bytes, reader.u64());
  HARK_TRY_ASSIGN(response.messages_count, reader.u64());
  HARK_TRY_ASSIGN(response.name, read_wire_name(reader));
  return ok_status();
}

void encode(const PartitionResponse& response, Writer& writer) {
  writer.u32(response.id);
  writer.u64(response.created_at);
  writer.u32(response.segments_count);
  writer.u64(response.current_offset);
  writer.u64(response.size_bytes);
  writer.u64(response.messages_count);
}

Status decode(Reader& reader, PartitionResponse& response) {
  HARK_TRY_ASSIGN(response.id, reader.u32());
  HARK_TRY_ASSIGN(response.created_at, reader.u64());
  HARK_TRY_ASSIGN(response.segments_count, reader.u32());
  HARK_TRY_ASSIGN(response.current_offset, reader.u64());
  HARK_TRY_ASSIGN(response.size_bytes, reader.u64());
  HARK_TRY_ASSIGN(response.messages_count, reader.u64());
  return ok_status();
}

void encode(const StreamDetailsResponse& response, Writer& writer) {
  encode(response.stream, writer);
  encode_all(response.topics, writer);
}

Status decode(Reader& reader, StreamDetailsResponse& response) {
  HARK_TRY(decode(reader, response.stream));
  HARK_TRY(decode_run(reader, response.topics));
  if (response.topics.size() != response.stream.topics_count) return Error::invalid_format;
  return ok_status();
}

void encode(const StreamsResponse& response, Writer& writer) {
  encode_all(response.streams, writer);
}

Status decode(Reader& reader, StreamsResponse& response) {
  return decode_run(reader, response.streams);
}

void encode(const TopicDetailsResponse& response, Writer& writer) {
  encode(response.topic, writer);
  encode_all(response.partitions, writer);
}

Status decode(Reader& reader, TopicDetailsResponse& response) {
  HARK_TRY(decode(reader, response.topic));
  HARK_TRY(decode_run(reader, response.partitions));
  if (response.partitions.size() != response.topic.partitions_count) return Error::invalid_format;
  return ok_status();
}

void encode(const TopicsResponse& response, Writer& writer) { encode_all(response.topics, writer); }

Status decode(Reader& reader, TopicsResponse& response) {
  return decode_run(reader, response.topics);
}

}  // namespace hark::protocol
