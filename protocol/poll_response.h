#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "hark/core/base/result.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/message.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// The poll_messages response payload (docs/wire.md §Poll response):
//   [partition_id u32][current_offset u64][messages_count u32]     16 bytes
//   messages_count × [64-byte header + payload + user headers]      as stored, no index table
// current_offset is the partition's last offset, 0 when it is empty (ambiguous with "one
// message at offset 0"; never use it to decide whether to wait).
inline constexpr size_t poll_header_size = 16;

struct PollResponseHeader {
  uint32_t partition_id = 0;
  uint64_t current_offset = 0;
  uint32_t messages_count = 0;

  bool operator==(const PollResponseHeader&) const = default;
};

// The response frame header and the poll header in one 24-byte block: status 0, length
// 16 + messages_size, then the 16 bytes above. A server sends this block followed by the
// stored message bytes (writev or linked sends), so messages are never re-encoded or copied.
// Requires: poll_header_size + messages_size <= UINT32_MAX.
std::array<std::byte, response_header_size + poll_header_size> poll_response_prefix(
    const PollResponseHeader& header, size_t messages_size);

// A decoded (or to-be-encoded) poll response: views into the payload, nothing copied.
struct PollMessagesResponse {
  PollResponseHeader header;
  MessageBatchView messages;

  // Equal headers and byte-equal messages.
  bool operator==(const PollMessagesResponse& other) const;
};

// Decodes the header and checks that exactly messages_count whole messages follow
// (MessageBatchView::parse: invalid_command if one is cut short, invalid_format if bytes are
// left over). The Reader is consumed to its end.
Status decode(Reader& reader, PollMessagesResponse& response);

// Copies the header and messages (clients' tests and fake servers; a real server uses
// poll_response_prefix). Requires: response.header.messages_count == messages.count().
void encode(const PollMessagesResponse& response, Writer& writer);

}  // namespace hark::protocol
