#include "hark/protocol/send_messages.h"

#include <algorithm>

#include "hark/protocol/framing.h"
#include "hark/protocol/primitives.h"

namespace hark::protocol {
namespace {

constexpr size_t index_entry_size = 16;
constexpr size_t index_position_at = 4;
constexpr size_t index_timestamp_at = 8;
constexpr uint8_t partition_id_size = 4;

// 0.8.0 parses the send metadata with its older domain parser (Identifier::from_raw_bytes),
// whose every failure is InvalidIdentifier (6), and which does not check UTF-8.
Result<Identifier> read_send_identifier(Reader& reader) {
  Result<uint8_t> kind = reader.u8();
  if (!kind.ok() || (*kind != 1 && *kind != 2)) return Error::invalid_identifier;
  Result<uint8_t> length = reader.u8();
  if (!length.ok() || *length == 0) return Error::invalid_identifier;
  Result<std::span<const std::byte>> value = reader.bytes(*length);
  if (!value.ok()) return Error::invalid_identifier;
  if (*kind == 1) {
    if (*length != 4) return Error::invalid_identifier;
    return Identifier::numeric(load_u32(*value, 0));
  }
  return Identifier::named(as_chars(*value));
}

// Partitioning::from_raw_bytes in 0.8.0: every failure is InvalidCommand (3).
Result<Partitioning> read_partitioning(Reader& reader) {
  HARK_TRY_ASSIGN(const uint8_t kind, reader.u8());
  if (kind < 1 || kind > 3) return Error::invalid_command;
  HARK_TRY_ASSIGN(const uint8_t length, reader.u8());
  if (kind == 1 && length != 0) return Error::invalid_command;
  if (kind == 2 && length != partition_id_size) return Error::invalid_command;
  HARK_TRY_ASSIGN(const std::span<const std::byte> value, reader.bytes(length));
  if (kind == 1) return Partitioning::balanced();
  if (kind == 2) return Partitioning::partition(load_u32(value, 0));
  return Partitioning::messages_key(value);
}

void write_partitioning(Writer& writer, const Partitioning& partitioning) {
  writer.u8(static_cast<uint8_t>(partitioning.kind()));
  switch (partitioning.kind()) {
    case PartitioningKind::balanced: writer.u8(0); return;
    case PartitioningKind::partition_id:
      writer.u8(partition_id_size);
      writer.u32(partitioning.partition_id());
      return;
    case PartitioningKind::messages_key:
      writer.u8(static_cast<uint8_t>(partitioning.key().size()));
      writer.bytes(partitioning.key());
      return;
  }
  HARK_UNREACHABLE();
}

// The slice of message i: from the previous index's end position (0 for the first) to this
// index's end position, except that the last message ends at the blob's end (0.8.0's
// IggyMessageBoundaries ignores the last position). Error::missing_index when it is not a
// slice of the blob, or is too short for the header or for what its header announces.
Result<std::span<const std::byte>> message_slice(std::span<const std::byte> indexes,
                                                 std::span<const std::byte> blob, uint32_t i,
                                                 uint32_t count) {
  const size_t start = i == 0 ? 0 : load_u32(indexes, (i - 1) * index_entry_size + 4);
  const size_t end = i + 1 == count ? blob.size() : load_u32(indexes, i * index_entry_size + 4);
  if (start > blob.size() || end > blob.size() || start > end) return Error::missing_index;
  if (end - start < message_header_size) return Error::missing_index;
  const std::span<const std::byte> slice = blob.subspan(start, end - start);
  if (message_size(slice) > slice.size()) return Error::missing_index;
  return slice;
}

// IggyMessagesBatchMut::validate of 0.8.0, check for check and in its order.
Status validate_batch(std::span<const std::byte> indexes, std::span<const std::byte> blob,
                      uint32_t count) {
  if (count == 0) return Error::invalid_messages_count;
  uint64_t previous_offset = 0;
  uint32_t previous_position = 0;
  uint64_t messages_size = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t entry = size_t{i} * index_entry_size;
    if (load_u32(indexes, entry) != 0) return Error::non_zero_offset;
    if (load_u64(indexes, entry + index_timestamp_at) != 0) return Error::non_zero_timestamp;
    HARK_TRY_ASSIGN(const std::span<const std::byte> message,
                    message_slice(indexes, blob, i, count));
    if (load_u32(message, message_payload_length_at) > message_payload_size_max) {
      return Error::too_big_message_payload;
    }
    if (load_u32(message, message_user_headers_length_at) > message_user_headers_size_max) {
      return Error::too_big_user_headers;
    }
    const uint64_t offset = load_u64(message, message_offset_at);
    if (offset < previous_offset) return Error::invalid_offset;
    const uint32_t position = load_u32(indexes, entry + index_position_at);
    if (position < previous_position) return Error::cannot_read_index_position;
    previous_offset = offset;
    previous_position = position;
    messages_size += message_size(message);
  }
  if (messages_size != blob.size()) return Error::invalid_messages_size;
  return ok_status();
}

size_t metadata_size(const SendMessagesRequest& request) {
  return request.stream_id.encoded_size() + request.topic_id.encoded_size() +
         request.partitioning.encoded_size() + sizeof(uint32_t);
}

}  // namespace

Partitioning Partitioning::partition(uint32_t partition_id) {
  Partitioning partitioning;
  partitioning.kind_ = PartitioningKind::partition_id;
  partitioning.partition_id_ = partition_id;
  return partitioning;
}

Result<Partitioning> Partitioning::messages_key(std::span<const std::byte> key) {
  if (key.size() > key_size_max) return Error::invalid_format;
  Partitioning partitioning;
  partitioning.kind_ = PartitioningKind::messages_key;
  partitioning.key_length_ = static_cast<uint8_t>(key.size());
  std::copy(key.begin(), key.end(), partitioning.key_.begin());
  return partitioning;
}

size_t Partitioning::encoded_size() const {
  switch (kind_) {
    case PartitioningKind::balanced: return 2;
    case PartitioningKind::partition_id: return 2 + partition_id_size;
    case PartitioningKind::messages_key: return 2 + size_t{key_length_};
  }
  HARK_UNREACHABLE();
}

bool Partitioning::operator==(const Partitioning& other) const {
  if (kind_ != other.kind_) return false;
  if (kind_ == PartitioningKind::partition_id) return partition_id_ == other.partition_id_;
  return std::ranges::equal(key(), other.key());
}

bool SendMessagesRequest::operator==(const SendMessagesRequest& other) const {
  return stream_id == other.stream_id && topic_id == other.topic_id &&
         partitioning == other.partitioning && messages.count() == other.messages.count() &&
         std::ranges::equal(indexes, other.indexes) &&
         std::ranges::equal(messages.bytes(), other.messages.bytes());
}

Status decode(Reader& reader, SendMessagesRequest& request) {
  HARK_TRY_ASSIGN(const uint32_t declared_metadata_size, reader.u32());
  HARK_TRY_ASSIGN(const std::span<const std::byte> metadata, reader.bytes(declared_metadata_size));
  Reader fields(metadata);
  HARK_TRY_ASSIGN(request.stream_id, read_send_identifier(fields));
  HARK_TRY_ASSIGN(request.topic_id, read_send_identifier(fields));
  HARK_TRY_ASSIGN(request.partitioning, read_partitioning(fields));
  HARK_TRY_ASSIGN(const uint32_t count, fields.u32());
  HARK_TRY_ASSIGN(request.indexes, reader.bytes(uint64_t{count} * index_entry_size));
  const std::span<const std::byte> blob = reader.rest();
  HARK_TRY(validate_batch(request.indexes, blob, count));
  // Validation has shown the index slices tile the blob with exactly one message each, so
  // walking the blob by header sizes finds the same messages.
  HARK_TRY_ASSIGN(request.messages, MessageBatchView::parse(blob, count));
  return ok_status();
}

void encode(const SendMessagesRequest& request, Writer& writer) {
  writer.u32(static_cast<uint32_t>(metadata_size(request)));
  write_identifier(writer, request.stream_id);
  write_identifier(writer, request.topic_id);
  write_partitioning(writer, request.partitioning);
  writer.u32(request.messages.count());
  writer.bytes(request.indexes);
  writer.bytes(request.messages.bytes());
}

Status encode_send_messages(const SendTarget& target, std::span<const OutgoingMessage> messages,
                            Bytes& out) {
  if (messages.empty()) return Error::invalid_messages_count;
  if (messages.size() > UINT32_MAX / index_entry_size) return Error::too_many_messages;
  const size_t start = out.size();
  Writer writer(out);
  writer.u32(0);  // Frame length, patched at the end.
  writer.u32(command_code(Command::send_messages));
  writer.u32(static_cast<uint32_t>(target.stream_id.encoded_size() +
                                   target.topic_id.encoded_size() +
                                   target.partitioning.encoded_size() + sizeof(uint32_t)));
  write_identifier(writer, target.stream_id);
  write_identifier(writer, target.topic_id);
  write_partitioning(writer, target.partitioning);
  writer.u32(static_cast<uint32_t>(messages.size()));
  const size_t index_at = writer.size();
  out.resize(index_at + messages.size() * index_entry_size);  // Zeros; positions patched below.
  const size_t blob_at = writer.size();
  for (size_t i = 0; i < messages.size(); ++i) {
    write_message(writer, messages[i]);
    const size_t end_position = writer.size() - blob_at;
    if (end_position > UINT32_MAX) writer.fail(Error::invalid_size_bytes);
    if (!writer.status().ok()) break;
    writer.patch_u32(index_at + i * index_entry_size + index_position_at,
                     static_cast<uint32_t>(end_position));
  }
  if (out.size() - start - request_header_size + 4 > UINT32_MAX) {
    writer.fail(Error::invalid_size_bytes);
  }
  if (!writer.status().ok()) {
    out.resize(start);
    return writer.status();
  }
  writer.patch_u32(start, static_cast<uint32_t>(out.size() - start - 4));
  return ok_status();
}

}  // namespace hark::protocol
