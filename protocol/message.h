#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>

#include "hark/core/base/message_layout.h"
#include "hark/core/base/result.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Iggy's classic message format (docs/wire.md §Message), as sent, stored and polled:
//   [64-byte header][payload: payload_length][user headers: user_headers_length]
// Payload first, then user headers. Header field offsets: the one table in
// core/base/message_layout.h, which storage/ shares.
inline constexpr size_t message_checksum_at = message_layout::checksum;                  // u64
inline constexpr size_t message_id_at = message_layout::id;                              // u128
inline constexpr size_t message_offset_at = message_layout::offset;                      // u64
inline constexpr size_t message_timestamp_at = message_layout::timestamp;                // u64, µs
inline constexpr size_t message_origin_timestamp_at = message_layout::origin_timestamp;  // µs
inline constexpr size_t message_user_headers_length_at = message_layout::user_headers_length;
inline constexpr size_t message_payload_length_at = message_layout::payload_length;  // u32
inline constexpr size_t message_reserved_at = message_layout::reserved;              // u64
inline constexpr size_t message_header_size = message_layout::header_bytes;

// Limits 0.8.0 enforces on a send (iggy_message.rs).
inline constexpr uint32_t message_payload_size_max = 64'000'000;
inline constexpr uint32_t message_user_headers_size_max = 100'000;

// A u128 message id, little-endian on the wire: `low` is bytes 8..15 of the header.
struct MessageId {
  uint64_t low = 0;
  uint64_t high = 0;

  bool is_zero() const { return low == 0 && high == 0; }
  auto operator<=>(const MessageId&) const = default;
};

// One message inside a buffer. A MessageView is only made by MessageBatchView, which has
// checked that the buffer holds the whole message; it is a view, valid while the buffer is.
class MessageView {
 public:
  uint64_t checksum() const;
  MessageId id() const;
  uint64_t offset() const;
  uint64_t timestamp() const;
  uint64_t origin_timestamp() const;
  uint32_t user_headers_length() const;
  uint32_t payload_length() const;
  uint64_t reserved() const;

  std::span<const std::byte> payload() const;
  std::span<const std::byte> user_headers() const;
  // The whole message: header, payload, user headers.
  std::span<const std::byte> bytes() const { return bytes_; }

 private:
  friend class MessageBatchView;
  explicit MessageView(std::span<const std::byte> bytes) : bytes_(bytes) {}

  std::span<const std::byte> bytes_;
};

// `count` messages laid end to end, as in a send batch's blob or a poll response. Iterating
// yields MessageViews; nothing is copied.
class MessageBatchView {
 public:
  class Iterator;

  MessageBatchView() = default;

  // Checks that exactly `count` whole messages fill `bytes`: a message that runs past the end
  // → invalid_command; bytes left over → invalid_format. O(count), reads headers only.
  static Result<MessageBatchView> parse(std::span<const std::byte> bytes, uint32_t count);

  uint32_t count() const { return count_; }
  std::span<const std::byte> bytes() const { return bytes_; }
  Iterator begin() const;
  Iterator end() const;

 private:
  MessageBatchView(std::span<const std::byte> bytes, uint32_t count)
      : bytes_(bytes), count_(count) {}

  std::span<const std::byte> bytes_;
  uint32_t count_ = 0;
};

class MessageBatchView::Iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = MessageView;
  using difference_type = std::ptrdiff_t;

  MessageView operator*() const;
  Iterator& operator++();
  bool operator==(const Iterator& other) const { return rest_.data() == other.rest_.data(); }

 private:
  friend class MessageBatchView;
  explicit Iterator(std::span<const std::byte> rest) : rest_(rest) {}

  std::span<const std::byte> rest_;
};

// The size of the message whose header starts `bytes` (64 + payload + user headers).
// Requires: bytes.size() >= message_header_size.
uint64_t message_size(std::span<const std::byte> bytes);

// A message as a producer hands it to the client library.
struct OutgoingMessage {
  MessageId id;                   // 0 asks the server to assign a random one.
  uint64_t origin_timestamp = 0;  // µs since the epoch, the producer's clock.
  std::span<const std::byte> payload;
  std::span<const std::byte> user_headers;
};

// Appends one message as clients send it: checksum, offset, timestamp and reserved are 0.
// Fails the writer with too_big_message_payload (4022) or too_big_user_headers (4017) above
// 0.8.0's limits, so a client never sends what the server would refuse for size.
void write_message(Writer& writer, const OutgoingMessage& message);

// What the server sets on a message when it appends it (0.8.0 prepare_for_persistence).
struct MessageStamp {
  uint64_t offset = 0;
  uint64_t timestamp = 0;  // µs, one value for the whole batch.
  MessageId id_if_zero;    // Used only if the message's id is 0.
};

// Stamps one message in place, then writes its checksum (XXH3-64 over bytes [8, end)).
// Requires: `message` is exactly one whole message (as a MessageView of a parsed batch is).
void stamp_message(std::span<std::byte> message, const MessageStamp& stamp);

}  // namespace hark::protocol
