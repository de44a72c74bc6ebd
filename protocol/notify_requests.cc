#include "hark/protocol/notify_requests.h"

#include "hark/protocol/consumer_head.h"

namespace hark::protocol {

Status read_condition_bytes(Reader& reader, Bytes& bytes) {
  HARK_TRY_ASSIGN(const uint32_t length, reader.u32());
  if (length > condition_bytes_max) return Error::invalid_format;
  HARK_TRY_ASSIGN(const std::span<const std::byte> view, reader.bytes(length));
  bytes.assign(view.begin(), view.end());
  return ok_status();
}

void write_condition_bytes(Writer& writer, const Bytes& bytes) {
  if (bytes.size() > condition_bytes_max) writer.fail(Error::invalid_format);
  writer.u32(static_cast<uint32_t>(bytes.size()));
  writer.bytes(bytes);
}

void encode(const WaitForMessagesRequest& request, Writer& writer) {
  if (request.min_messages == 0) writer.fail(Error::invalid_format);
  encode_consumer_head(request, writer);
  write_polling_strategy(writer, request.strategy);
  writer.u64(request.wait_timeout_us);
  writer.u32(request.min_messages);
}

Status decode(Reader& reader, WaitForMessagesRequest& request) {
  HARK_TRY(decode_consumer_head(reader, request));
  HARK_TRY_ASSIGN(request.strategy, read_polling_strategy(reader));
  HARK_TRY_ASSIGN(request.wait_timeout_us, reader.u64());
  HARK_TRY_ASSIGN(request.min_messages, reader.u32());
  if (request.min_messages == 0) return Error::invalid_format;
  return ok_status();
}

void encode(const WaitForLagRequest& request, Writer& writer) {
  encode_consumer_head(request, writer);
  writer.u64(request.wait_timeout_us);
  writer.u8(static_cast<uint8_t>(request.watch));
  writer.u64(request.threshold);
}

Status decode(Reader& reader, WaitForLagRequest& request) {
  HARK_TRY(decode_consumer_head(reader, request));
  HARK_TRY_ASSIGN(request.wait_timeout_us, reader.u64());
  HARK_TRY_ASSIGN(const uint8_t watch, reader.u8());
  if (watch != static_cast<uint8_t>(LagWatch::above) &&
      watch != static_cast<uint8_t>(LagWatch::below)) {
    return Error::invalid_command;  // An unknown discriminant, as PollingStrategy's kind.
  }
  request.watch = static_cast<LagWatch>(watch);
  HARK_TRY_ASSIGN(request.threshold, reader.u64());
  return ok_status();
}

void encode(const WaitForConditionRequest& request, Writer& writer) {
  encode_consumer_head(request, writer);
  writer.u64(request.wait_timeout_us);
  write_wire_name(writer, request.name);
  write_condition_bytes(writer, request.params);
}

Status decode(Reader& reader, WaitForConditionRequest& request) {
  HARK_TRY(decode_consumer_head(reader, request));
  HARK_TRY_ASSIGN(request.wait_timeout_us, reader.u64());
  HARK_TRY_ASSIGN(request.name, read_wire_name(reader));
  return read_condition_bytes(reader, request.params);
}

}  // namespace hark::protocol
