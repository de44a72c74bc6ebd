#include "hark/protocol/message.h"

#include <cstring>

#include "hark/core/base/assert.h"
#include "hark/protocol/hash.h"
#include "hark/protocol/reader.h"

namespace hark::protocol {
namespace {

static_assert(message_reserved_at + sizeof(uint64_t) == message_header_size);
static_assert(message_payload_length_at + sizeof(uint32_t) == message_reserved_at);

void store_u64(std::span<std::byte> bytes, size_t at, uint64_t value) {
  HARK_ASSERT(bytes.size() >= at + sizeof value);
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

}  // namespace

uint64_t MessageView::checksum() const { return load_u64(bytes_, message_checksum_at); }

MessageId MessageView::id() const {
  return MessageId{load_u64(bytes_, message_id_at), load_u64(bytes_, message_id_at + 8)};
}

uint64_t MessageView::offset() const { return load_u64(bytes_, message_offset_at); }
uint64_t MessageView::timestamp() const { return load_u64(bytes_, message_timestamp_at); }

uint64_t MessageView::origin_timestamp() const {
  return load_u64(bytes_, message_origin_timestamp_at);
}

uint32_t MessageView::user_headers_length() const {
  return load_u32(bytes_, message_user_headers_length_at);
}

uint32_t MessageView::payload_length() const { return load_u32(bytes_, message_payload_length_at); }
uint64_t MessageView::reserved() const { return load_u64(bytes_, message_reserved_at); }

std::span<const std::byte> MessageView::payload() const {
  return bytes_.subspan(message_header_size, payload_length());
}

std::span<const std::byte> MessageView::user_headers() const {
  return bytes_.subspan(message_header_size + payload_length(), user_headers_length());
}

uint64_t message_size(std::span<const std::byte> bytes) {
  return uint64_t{message_header_size} + load_u32(bytes, message_payload_length_at) +
         load_u32(bytes, message_user_headers_length_at);
}

Result<MessageBatchView> MessageBatchView::parse(std::span<const std::byte> bytes, uint32_t count) {
  size_t at = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const std::span<const std::byte> rest = bytes.subspan(at);
    if (rest.size() < message_header_size) return Error::invalid_command;
    const uint64_t size = message_size(rest);
    if (size > rest.size()) return Error::invalid_command;
    at += static_cast<size_t>(size);
  }
  if (at != bytes.size()) return Error::invalid_format;
  return MessageBatchView(bytes, count);
}

MessageBatchView::Iterator MessageBatchView::begin() const { return Iterator(bytes_); }
MessageBatchView::Iterator MessageBatchView::end() const { return Iterator(bytes_.last(0)); }

MessageView MessageBatchView::Iterator::operator*() const {
  HARK_ASSERT(rest_.size() >= message_header_size);
  return MessageView(rest_.first(static_cast<size_t>(message_size(rest_))));
}

MessageBatchView::Iterator& MessageBatchView::Iterator::operator++() {
  HARK_ASSERT(rest_.size() >= message_header_size);
  rest_ = rest_.subspan(static_cast<size_t>(message_size(rest_)));
  return *this;
}

void write_message(Writer& writer, const OutgoingMessage& message) {
  if (message.payload.size() > message_payload_size_max) {
    writer.fail(Error::too_big_message_payload);
    return;
  }
  if (message.user_headers.size() > message_user_headers_size_max) {
    writer.fail(Error::too_big_user_headers);
    return;
  }
  writer.u64(0);  // Checksum: the server computes it.
  writer.u64(message.id.low);
  writer.u64(message.id.high);
  writer.u64(0);  // Offset: assigned at append.
  writer.u64(0);  // Timestamp: assigned at append.
  writer.u64(message.origin_timestamp);
  writer.u32(static_cast<uint32_t>(message.user_headers.size()));
  writer.u32(static_cast<uint32_t>(message.payload.size()));
  writer.u64(0);  // Reserved.
  writer.bytes(message.payload);
  writer.bytes(message.user_headers);
}

void stamp_message(std::span<std::byte> message, const MessageStamp& stamp) {
  HARK_ASSERT(message.size() >= message_header_size);
  HARK_ASSERT(message_size(message) == message.size());
  store_u64(message, message_offset_at, stamp.offset);
  store_u64(message, message_timestamp_at, stamp.timestamp);
  const bool id_is_zero =
      load_u64(message, message_id_at) == 0 && load_u64(message, message_id_at + 8) == 0;
  if (id_is_zero) {
    store_u64(message, message_id_at, stamp.id_if_zero.low);
    store_u64(message, message_id_at + 8, stamp.id_if_zero.high);
  }
  store_u64(message, message_checksum_at, message_checksum(message));
}

}  // namespace hark::protocol
