#include "hark/protocol/stream_requests.h"

#include "hark/protocol/primitives.h"

namespace hark::protocol {
namespace {

// The shape shared by get/delete/purge topic: [stream Id][topic Id].
template <typename T>
Status decode_stream_topic(Reader& reader, T& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.topic_id, read_identifier(reader));
  return ok_status();
}

template <typename T>
void encode_stream_topic(const T& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
  write_identifier(writer, request.topic_id);
}

// [compression u8][message_expiry u64][max_topic_size u64][replication_factor u8][WireName].
template <typename T>
Status decode_topic_settings(Reader& reader, T& request) {
  HARK_TRY_ASSIGN(request.compression_algorithm, reader.u8());
  HARK_TRY_ASSIGN(request.message_expiry, reader.u64());
  HARK_TRY_ASSIGN(request.max_topic_size, reader.u64());
  HARK_TRY_ASSIGN(request.replication_factor, reader.u8());
  HARK_TRY_ASSIGN(request.name, read_wire_name(reader));
  return ok_status();
}

template <typename T>
void encode_topic_settings(const T& request, Writer& writer) {
  writer.u8(request.compression_algorithm);
  writer.u64(request.message_expiry);
  writer.u64(request.max_topic_size);
  writer.u8(request.replication_factor);
  write_wire_name(writer, request.name);
}

}  // namespace

void encode(const GetStreamRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
}

Status decode(Reader& reader, GetStreamRequest& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  return ok_status();
}

void encode(const GetStreamsRequest&, Writer&) {}
Status decode(Reader&, GetStreamsRequest&) { return ok_status(); }

void encode(const CreateStreamRequest& request, Writer& writer) {
  write_wire_name(writer, request.name);
}

Status decode(Reader& reader, CreateStreamRequest& request) {
  HARK_TRY_ASSIGN(request.name, read_wire_name(reader));
  return ok_status();
}

void encode(const DeleteStreamRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
}

Status decode(Reader& reader, DeleteStreamRequest& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  return ok_status();
}

void encode(const UpdateStreamRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
  write_wire_name(writer, request.name);
}

Status decode(Reader& reader, UpdateStreamRequest& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.name, read_wire_name(reader));
  return ok_status();
}

void encode(const PurgeStreamRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
}

Status decode(Reader& reader, PurgeStreamRequest& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  return ok_status();
}

void encode(const GetTopicRequest& request, Writer& writer) {
  encode_stream_topic(request, writer);
}

Status decode(Reader& reader, GetTopicRequest& request) {
  return decode_stream_topic(reader, request);
}

void encode(const GetTopicsRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
}

Status decode(Reader& reader, GetTopicsRequest& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  return ok_status();
}

void encode(const CreateTopicRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
  writer.u32(request.partitions_count);
  encode_topic_settings(request, writer);
}

Status decode(Reader& reader, CreateTopicRequest& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.partitions_count, reader.u32());
  return decode_topic_settings(reader, request);
}

void encode(const DeleteTopicRequest& request, Writer& writer) {
  encode_stream_topic(request, writer);
}

Status decode(Reader& reader, DeleteTopicRequest& request) {
  return decode_stream_topic(reader, request);
}

void encode(const UpdateTopicRequest& request, Writer& writer) {
  encode_stream_topic(request, writer);
  encode_topic_settings(request, writer);
}

Status decode(Reader& reader, UpdateTopicRequest& request) {
  HARK_TRY(decode_stream_topic(reader, request));
  return decode_topic_settings(reader, request);
}

void encode(const PurgeTopicRequest& request, Writer& writer) {
  encode_stream_topic(request, writer);
}

Status decode(Reader& reader, PurgeTopicRequest& request) {
  return decode_stream_topic(reader, request);
}

}  // namespace hark::protocol
