#pragma once

#include "hark/core/base/result.h"
#include "hark/protocol/primitives.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// [Consumer][stream Id][topic Id][OptPartition]: the head of poll_messages, the consumer-offset
// commands and the notification commands (docs/wire.md §2, §11). T has the members consumer,
// stream_id, topic_id and partition_id.
template <typename T>
Status decode_consumer_head(Reader& reader, T& request) {
  HARK_TRY_ASSIGN(request.consumer, read_consumer(reader));
  HARK_TRY_ASSIGN(request.stream_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.topic_id, read_identifier(reader));
  HARK_TRY_ASSIGN(request.partition_id, read_optional_partition(reader));
  return ok_status();
}

template <typename T>
void encode_consumer_head(const T& request, Writer& writer) {
  write_consumer(writer, request.consumer);
  write_identifier(writer, request.stream_id);
  write_identifier(writer, request.topic_id);
  write_optional_partition(writer, request.partition_id);
}

}  // namespace hark::protocol
