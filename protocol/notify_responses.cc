#include "hark/protocol/notify_responses.h"

#include "hark/protocol/notify_requests.h"
#include "hark/protocol/response_lists.h"

namespace hark::protocol {

void encode(const ReadyPartition& entry, Writer& writer) {
  writer.u32(entry.partition_id);
  writer.u64(entry.first_offset);
  writer.u64(entry.next_offset);
}

Status decode(Reader& reader, ReadyPartition& entry) {
  HARK_TRY_ASSIGN(entry.partition_id, reader.u32());
  HARK_TRY_ASSIGN(entry.first_offset, reader.u64());
  HARK_TRY_ASSIGN(entry.next_offset, reader.u64());
  return ok_status();
}

void encode(const WaitForMessagesResponse& response, Writer& writer) {
  encode_all(response.partitions, writer);
}

Status decode(Reader& reader, WaitForMessagesResponse& response) {
  return decode_run(reader, response.partitions);
}

void encode(const PartitionLag& entry, Writer& writer) {
  writer.u32(entry.partition_id);
  writer.u64(entry.next_offset);
  writer.u8(entry.stored_offset.has_value() ? 1 : 0);
  writer.u64(entry.stored_offset.value_or(0));
  writer.u64(entry.lag);
}

Status decode(Reader& reader, PartitionLag& entry) {
  HARK_TRY_ASSIGN(entry.partition_id, reader.u32());
  HARK_TRY_ASSIGN(entry.next_offset, reader.u64());
  HARK_TRY_ASSIGN(const uint8_t has_stored, reader.u8());
  if (has_stored > 1) return Error::invalid_command;
  HARK_TRY_ASSIGN(const uint64_t stored, reader.u64());
  entry.stored_offset = has_stored == 1 ? std::optional<uint64_t>(stored) : std::nullopt;
  HARK_TRY_ASSIGN(entry.lag, reader.u64());
  return ok_status();
}

void encode(const WaitForLagResponse& response, Writer& writer) {
  writer.u64(response.total_lag);
  encode_all(response.partitions, writer);
}

Status decode(Reader& reader, WaitForLagResponse& response) {
  HARK_TRY_ASSIGN(response.total_lag, reader.u64());
  return decode_run(reader, response.partitions);
}

void encode(const ConditionAnswer& entry, Writer& writer) {
  writer.u32(entry.partition_id);
  write_condition_bytes(writer, entry.answer);
}

Status decode(Reader& reader, ConditionAnswer& entry) {
  HARK_TRY_ASSIGN(entry.partition_id, reader.u32());
  return read_condition_bytes(reader, entry.answer);
}

void encode(const WaitForConditionResponse& response, Writer& writer) {
  encode_all(response.partitions, writer);
}

Status decode(Reader& reader, WaitForConditionResponse& response) {
  return decode_run(reader, response.partitions);
}

}  // namespace hark::protocol
