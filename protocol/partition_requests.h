#pragma once

#include <cstdint>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Requests of the partition and segment commands (docs/wire.md §Requests).

struct CreatePartitionsRequest {
  static constexpr Command code = Command::create_partitions;
  Identifier stream_id;
  Identifier topic_id;
  uint32_t partitions_count = 0;
  bool operator==(const CreatePartitionsRequest&) const = default;
};

// Deletes the last `partitions_count` partitions.
struct DeletePartitionsRequest {
  static constexpr Command code = Command::delete_partitions;
  Identifier stream_id;
  Identifier topic_id;
  uint32_t partitions_count = 0;
  bool operator==(const DeletePartitionsRequest&) const = default;
};

struct DeleteSegmentsRequest {
  static constexpr Command code = Command::delete_segments;
  Identifier stream_id;
  Identifier topic_id;
  uint32_t partition_id = 0;
  uint32_t segments_count = 0;
  bool operator==(const DeleteSegmentsRequest&) const = default;
};

void encode(const CreatePartitionsRequest& request, Writer& writer);
Status decode(Reader& reader, CreatePartitionsRequest& request);
void encode(const DeletePartitionsRequest& request, Writer& writer);
Status decode(Reader& reader, DeletePartitionsRequest& request);
void encode(const DeleteSegmentsRequest& request, Writer& writer);
Status decode(Reader& reader, DeleteSegmentsRequest& request);

}  // namespace hark::protocol
