#pragma once

#include <cstdint>
#include <optional>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/primitives.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Requests of poll_messages, flush_unsaved_buffer and the consumer-offset commands
// (docs/wire.md §Requests). send_messages has its own header (send_messages.h).

// [Consumer][stream Id][topic Id][opt partition 5B][PollingStrategy 9B][count u32]
// [auto_commit u8][wait_timeout_us u64, optional: the hark/upstream-#3470 extension].
//
// wait_timeout_us: absent on the wire → nullopt, a classic poll (answer at once, unless the
// server gives classic polls a default wait: docs/long-polling.md); 1–7 trailing bytes →
// invalid_format (4); bytes after the 8-byte field are trailing (ignored, reported). The
// encoder writes the field exactly when it has a value (0 included: "answer at once, whatever
// the server's default"), so a classic client's frame is reproduced exactly.
struct PollMessagesRequest {
  static constexpr Command code = Command::poll_messages;
  Consumer consumer;
  Identifier stream_id;
  Identifier topic_id;
  std::optional<uint32_t> partition_id;
  PollingStrategy strategy;
  uint32_t count = 0;
  bool auto_commit = false;
  std::optional<uint64_t> wait_timeout_us;
  bool operator==(const PollMessagesRequest&) const = default;
};

struct FlushUnsavedBufferRequest {
  static constexpr Command code = Command::flush_unsaved_buffer;
  Identifier stream_id;
  Identifier topic_id;
  uint32_t partition_id = 0;
  bool fsync = false;
  bool operator==(const FlushUnsavedBufferRequest&) const = default;
};

struct GetConsumerOffsetRequest {
  static constexpr Command code = Command::get_consumer_offset;
  Consumer consumer;
  Identifier stream_id;
  Identifier topic_id;
  std::optional<uint32_t> partition_id;
  bool operator==(const GetConsumerOffsetRequest&) const = default;
};

struct StoreConsumerOffsetRequest {
  static constexpr Command code = Command::store_consumer_offset;
  Consumer consumer;
  Identifier stream_id;
  Identifier topic_id;
  std::optional<uint32_t> partition_id;
  uint64_t offset = 0;
  bool operator==(const StoreConsumerOffsetRequest&) const = default;
};

struct DeleteConsumerOffsetRequest {
  static constexpr Command code = Command::delete_consumer_offset;
  Consumer consumer;
  Identifier stream_id;
  Identifier topic_id;
  std::optional<uint32_t> partition_id;
  bool operator==(const DeleteConsumerOffsetRequest&) const = default;
};

void encode(const PollMessagesRequest& request, Writer& writer);
Status decode(Reader& reader, PollMessagesRequest& request);
void encode(const FlushUnsavedBufferRequest& request, Writer& writer);
Status decode(Reader& reader, FlushUnsavedBufferRequest& request);
void encode(const GetConsumerOffsetRequest& request, Writer& writer);
Status decode(Reader& reader, GetConsumerOffsetRequest& request);
void encode(const StoreConsumerOffsetRequest& request, Writer& writer);
Status decode(Reader& reader, StoreConsumerOffsetRequest& request);
void encode(const DeleteConsumerOffsetRequest& request, Writer& writer);
Status decode(Reader& reader, DeleteConsumerOffsetRequest& request);

}  // namespace hark::protocol
