#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/message.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

enum class PartitioningKind : uint8_t { balanced = 1, partition_id = 2, messages_key = 3 };

// How a send picks its partition: [kind u8][length u8][value]. balanced: length 0;
// partition_id: length 4, u32; messages_key: the key bytes (partition = XXH32(key) % count).
// The key lives inline (at most 255 bytes), so decoding a send never allocates.
class Partitioning {
 public:
  static constexpr size_t key_size_max = 255;

  // Balanced.
  Partitioning() = default;

  static Partitioning balanced() { return Partitioning(); }
  static Partitioning partition(uint32_t partition_id);
  // Error::invalid_format above 255 bytes. An empty key is allowed: 0.8.0's server takes it.
  static Result<Partitioning> messages_key(std::span<const std::byte> key);

  PartitioningKind kind() const { return kind_; }
  // Valid for kind partition_id.
  uint32_t partition_id() const { return partition_id_; }
  // Valid for kind messages_key.
  std::span<const std::byte> key() const { return {key_.data(), key_length_}; }
  size_t encoded_size() const;

  bool operator==(const Partitioning& other) const;

 private:
  PartitioningKind kind_ = PartitioningKind::balanced;
  uint8_t key_length_ = 0;
  uint32_t partition_id_ = 0;
  std::array<std::byte, key_size_max> key_{};
};

// A decoded send_messages payload: views into the received bytes, nothing copied.
//   [metadata_length u32][stream Id][topic Id][Partitioning][messages_count u32]
//   [index: messages_count × 16 B: offset u32 = 0, end position u32, timestamp u64 = 0]
//   [messages: messages_count × (64-byte header + payload + user headers)]
struct SendMessagesRequest {
  static constexpr Command code = Command::send_messages;
  Identifier stream_id;
  Identifier topic_id;
  Partitioning partitioning;
  // The client's index table, messages.count() × 16 bytes, as sent.
  std::span<const std::byte> indexes;
  MessageBatchView messages;

  // Equal fields and byte-equal indexes and messages.
  bool operator==(const SendMessagesRequest& other) const;
};

// Decodes and validates a send payload in 0.8.0's order, with its codes (docs/wire.md §Send):
// - payload or metadata short → invalid_command (3);
// - stream or topic Identifier malformed → invalid_identifier (6);
// - partitioning malformed, messages_count missing → 3;
// - index table or messages past the payload → 3;
// - count 0 → invalid_messages_count (4009); then for each message i:
//   index offset ≠ 0 → 4031; index timestamp ≠ 0 → 4032;
//   slice out of bounds, or shorter than its header announces → missing_index (4033);
//   payload > 64 MB → 4022; user headers > 100 kB → 4017;
//   header offset decreasing → 4100; index position decreasing → 10011;
// - Σ message sizes ≠ blob size → invalid_messages_size (4036).
// Bytes inside metadata_length after messages_count are ignored, as 0.8.0 does. The
// client's checksums, reserved fields and user-header structure are not checked (nor by
// 0.8.0). The Reader is consumed to its end.
Status decode(Reader& reader, SendMessagesRequest& request);

// Re-encodes a decoded request byte for byte (metadata_length is the exact metadata size).
void encode(const SendMessagesRequest& request, Writer& writer);

// Where a client sends: the metadata part of the frame.
struct SendTarget {
  Identifier stream_id;
  Identifier topic_id;
  Partitioning partitioning;
};

// Appends a whole send_messages frame (header, metadata, index table, messages) built from
// `messages`, as the SDKs do. Fails (leaving `out` as it was) with invalid_messages_count for
// no messages, or a size error from write_message(). Restores `out` on failure.
Status encode_send_messages(const SendTarget& target, std::span<const OutgoingMessage> messages,
                            Bytes& out);

}  // namespace hark::protocol
