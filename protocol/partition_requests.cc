#include "hark/protocol/partition_requests.h"

#include "hark/protocol/primitives.h"

namespace hark::protocol {
namespace {

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

// The shape shared by create/delete partitions: [stream Id][topic Id][partitions_count u32].
template <typename T>
Status decode_partitions(Reader& reader, T& request) {
  HARK_TRY(decode_stream_topic(reader, request));
  HARK_TRY_ASSIGN(request.partitions_count, reader.u32());
  return ok_status();
}

template <typename T>
void encode_partitions(const T& request, Writer& writer) {
  encode_stream_topic(request, writer);
  writer.u32(request.partitions_count);
}

}  // namespace

void encode(const CreatePartitionsRequest& request, Writer& writer) {
  encode_partitions(request, writer);
}

Status decode(Reader& reader, CreatePartitionsRequest& request) {
  return decode_partitions(reader, request);
}

void encode(const DeletePartitionsRequest& request, Writer& writer) {
  encode_partitions(request, writer);
}

Status decode(Reader& reader, DeletePartitionsRequest& request) {
  return decode_partitions(reader, request);
}

void encode(const DeleteSegmentsRequest& request, Writer& writer) {
  encode_stream_topic(request, writer);
  writer.u32(request.partition_id);
  writer.u32(request.segments_count);
}

Status decode(Reader& reader, DeleteSegmentsRequest& request) {
  HARK_TRY(decode_stream_topic(reader, request));
  HARK_TRY_ASSIGN(request.partition_id, reader.u32());
  HARK_TRY_ASSIGN(request.segments_count, reader.u32());
  return ok_status();
}

}  // namespace hark::protocol
