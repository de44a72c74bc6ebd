#pragma once

#include <cstdint>
#include <span>

#include "hark/core/base/message_layout.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"

namespace hark::storage {

// Validating, stamping and checking messages in Iggy's classic format (core/base/
// message_layout.h; docs/storage-format.md). Pure functions over bytes, data plane.

// Iggy 0.8.0 limits (MAX_PAYLOAD_SIZE, MAX_USER_HEADERS_SIZE).
inline constexpr uint64_t payload_bytes_max = 64'000'000;
inline constexpr uint64_t user_headers_bytes_max = 100'000;
// A batch must fit u32 index positions within its segment.
inline constexpr uint64_t batch_bytes_max = UINT32_MAX;

// The size of the message starting at `at` according to its header (64 + payload + user
// headers). Requires: at + 64 <= bytes.size().
uint64_t message_bytes(std::span<const std::byte> bytes, size_t at);

// Checks a batch as a send delivers it: `count` messages back to back filling `messages`
// exactly. Returns the batch's byte size, or the Iggy code of the first problem:
// invalid_messages_count (count 0), too_small_message (fewer than 64 bytes left for a header),
// invalid_reserved_field, too_big_message_payload, too_big_user_headers, invalid_messages_size
// (a message overruns the blob, bytes are left over, or the batch exceeds batch_bytes_max).
Result<uint64_t> validate_batch(std::span<const std::byte> messages, uint32_t count);

// What validate_stored_batch() found in a batch of stored messages.
struct StoredBatch {
  uint64_t bytes = 0;
  Offset first;              // The first message's offset; the others follow it one by one.
  UnixMicros timestamp = 0;  // The last message's timestamp (the batch's newest).
};

// Checks a batch of messages as a partition log stored them (read() hands them out: stamped,
// checksummed), for PartitionLog::append_stored: `count` whole messages back to back filling
// `messages` exactly, each passing check_stored_message, with consecutive offsets and
// timestamps that never decrease, the first at least `timestamp_min`. Never asserts on the
// bytes: they come from another node. Errors: invalid_messages_count (count 0),
// invalid_messages_size (a torn message, bytes left over, over batch_bytes_max),
// invalid_message_checksum (a damaged message: checksum, reserved field or limits),
// invalid_offset (offsets not consecutive), timestamp_out_of_range (a timestamp going back).
Result<StoredBatch> validate_stored_batch(std::span<const std::byte> messages, uint32_t count,
                                          UnixMicros timestamp_min);

// XXH3-64 (seed 0) over the message's bytes [8, end), as Iggy computes it.
uint64_t message_checksum(std::span<const std::byte> message);

// Random UUIDs (version 4) for messages sent with id 0. Seeded once from getrandom(2); then a
// pure function of its state (no syscall per message). Owner shard only.
class IdGenerator {
 public:
  IdGenerator();
  // Writes 16 bytes: a version-4 UUID, as Iggy's little-endian u128.
  void next(std::span<std::byte, 16> id);

 private:
  uint64_t next_word();
  uint64_t state_;
};

// Stamps a validated batch in place: offsets first.., `timestamp`, ids for messages with id 0,
// then each checksum (last, since it covers the other fields). Calls `indexed(offset,
// position_in_batch)` per message. Requires: validate_batch(batch, count) succeeded.
template <typename Indexed>
void stamp_batch(std::span<std::byte> batch, uint32_t count, Offset first, UnixMicros timestamp,
                 IdGenerator& ids, Indexed&& indexed);

enum class MessageCheck : uint8_t {
  ok,
  incomplete,  // The header or the body runs past the end of `bytes` (a torn tail).
  corrupt,     // Complete, but the checksum, reserved field, sizes or offset are wrong.
};

struct CheckedMessage {
  MessageCheck check = MessageCheck::incomplete;
  uint64_t bytes = 0;  // Valid when check != incomplete.
  Offset offset;       // The stored offset, valid when check == ok.
};

// Checks a stored message at `at`: complete, limits, reserved 0, checksum, and its offset at
// least `offset_min`. Never asserts on the bytes: they come from a disk.
CheckedMessage check_stored_message(std::span<const std::byte> bytes, size_t at, Offset offset_min);

template <typename Indexed>
void stamp_batch(std::span<std::byte> batch, uint32_t count, Offset first, UnixMicros timestamp,
                 IdGenerator& ids, Indexed&& indexed) {
  namespace layout = message_layout;
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    const size_t size = static_cast<size_t>(message_bytes(batch, at));
    const std::span<std::byte> message = batch.subspan(at, size);
    if (load_u64(message, layout::id) == 0 && load_u64(message, layout::id + 8) == 0) {
      ids.next(message.subspan<layout::id, 16>());
    }
    store_u64(message, layout::offset, (first + i).value());
    store_u64(message, layout::timestamp, timestamp);
    store_u64(message, layout::checksum, message_checksum(message));
    indexed(first + i, at);
    at += size;
  }
  HARK_ASSERT(at == batch.size());
}

}  // namespace hark::storage
