#include "hark/protocol/poll_response.h"

#include <algorithm>
#include <cstring>

#include "hark/core/base/assert.h"

namespace hark::protocol {

std::array<std::byte, response_header_size + poll_header_size> poll_response_prefix(
    const PollResponseHeader& header, size_t messages_size) {
  HARK_ASSERT(messages_size <= UINT32_MAX - poll_header_size);
  std::array<std::byte, response_header_size + poll_header_size> prefix{};
  const std::array<std::byte, response_header_size> frame =
      ok_response_header(poll_header_size + messages_size);
  std::copy(frame.begin(), frame.end(), prefix.begin());
  std::byte* at = prefix.data() + response_header_size;
  std::memcpy(at, &header.partition_id, 4);
  std::memcpy(at + 4, &header.current_offset, 8);
  std::memcpy(at + 12, &header.messages_count, 4);
  return prefix;
}

bool PollMessagesResponse::operator==(const PollMessagesResponse& other) const {
  return header == other.header && messages.count() == other.messages.count() &&
         std::ranges::equal(messages.bytes(), other.messages.bytes());
}

Status decode(Reader& reader, PollMessagesResponse& response) {
  HARK_TRY_ASSIGN(response.header.partition_id, reader.u32());
  HARK_TRY_ASSIGN(response.header.current_offset, reader.u64());
  HARK_TRY_ASSIGN(response.header.messages_count, reader.u32());
  HARK_TRY_ASSIGN(response.messages,
                  MessageBatchView::parse(reader.rest(), response.header.messages_count));
  return ok_status();
}

void encode(const PollMessagesResponse& response, Writer& writer) {
  HARK_ASSERT(response.header.messages_count == response.messages.count());
  writer.u32(response.header.partition_id);
  writer.u64(response.header.current_offset);
  writer.u32(response.header.messages_count);
  writer.bytes(response.messages.bytes());
}

}  // namespace hark::protocol
