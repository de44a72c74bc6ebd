#include "hark/protocol/message_requests.h"

#include "hark/protocol/consumer_head.h"

namespace hark::protocol {
namespace {

constexpr size_t wait_timeout_size = sizeof(uint64_t);

}  // namespace

void encode(const PollMessagesRequest& request, Writer& writer) {
  encode_consumer_head(request, writer);
  write_polling_strategy(writer, request.strategy);
  writer.u32(request.count);
  write_bool(writer, request.auto_commit);
  if (request.wait_timeout_us) writer.u64(*request.wait_timeout_us);
}

Status decode(Reader& reader, PollMessagesRequest& request) {
  HARK_TRY(decode_consumer_head(reader, request));
  HARK_TRY_ASSIGN(request.strategy, read_polling_strategy(reader));
  HARK_TRY_ASSIGN(request.count, reader.u32());
  HARK_TRY_ASSIGN(request.auto_commit, read_bool(reader));
  request.wait_timeout_us.reset();
  if (reader.empty()) return ok_status();
  // A partial field is a malformed extension, not trailing garbage: refusing it tells a buggy
  // client at once instead of silently answering without waiting.
  if (reader.remaining() < wait_timeout_size) return Error::invalid_format;
  HARK_TRY_ASSIGN(request.wait_timeout_us, reader.u64());
  return ok_status();
}

void encode(const FlushUnsavedBufferRequest& request, Writer& writer) {
  write_identifier(writer, request.stream_id);
  write_identifier(writer, request.topic_id);
  writer.u32(request.partition_id);
  write_bool(writer, request.fsync);
}

Status decode(Reader& reader, FlushUnsavedBufferRequest& request) {
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.topic_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.partition_id, reader.u32());
  HARK_TRY_ASSIGN(request.fsync, read_bool(reader));
  return ok_status();
}

void encode(const GetConsumerOffsetRequest& request, Writer& writer) {
  encode_consumer_head(request, writer);
}

Status decode(Reader& reader, GetConsumerOffsetRequest& request) {
  return decode_consumer_head(reader, request);
}

void encode(const StoreConsumerOffsetRequest& request, Writer& writer) {
  encode_consumer_head(request, writer);
  writer.u64(request.offset);
}

Status decode(Reader& reader, StoreConsumerOffsetRequest& request) {
  HARK_TRY(decode_consumer_head(reader, request));
  HARK_TRY_ASSIGN(request.offset, reader.u64());
  return ok_status();
}

void encode(const DeleteConsumerOffsetRequest& request, Writer& writer) {
  encode_consumer_head(request, writer);
}

Status decode(Reader& reader, DeleteConsumerOffsetRequest& request) {
  return decode_consumer_head(reader, request);
}

}  // namespace hark::protocol
