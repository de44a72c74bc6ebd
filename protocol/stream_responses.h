#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Responses of the stream and topic commands, byte for byte as 0.8.0 sends them
// (docs/wire.md §Responses). Times are µs since the epoch. get_stream and get_topic answer a
// missing stream or topic with an EMPTY payload, not an error: decode those with
// decode_optional_payload<T>() (codec.h).

// 33 + name bytes: [id u32][created_at u64][topics_count u32][size_bytes u64]
// [messages_count u64][name WireName]. create_stream returns one.
struct StreamResponse {
  uint32_t id = 0;
  uint64_t created_at = 0;
  uint32_t topics_count = 0;
  uint64_t size_bytes = 0;
  uint64_t messages_count = 0;
  std::string name;
  bool operator==(const StreamResponse&) const = default;
};

// 51 + name bytes (0.8.0's TopicHeader): [id u32][created_at u64][partitions_count u32]
// [message_expiry u64][compression u8][max_topic_size u64][replication_factor u8]
// [size_bytes u64][messages_count u64][name WireName].
struct TopicResponse {
  uint32_t id = 0;
  uint64_t created_at = 0;
  uint32_t partitions_count = 0;
  uint64_t message_expiry = 0;
  uint8_t compression_algorithm = 1;
  uint64_t max_topic_size = 0;
  uint8_t replication_factor = 1;
  uint64_t size_bytes = 0;
  uint64_t messages_count = 0;
  std::string name;
  bool operator==(const TopicResponse&) const = default;
};

// 40 bytes: [id u32][created_at u64][segments_count u32][current_offset u64][size_bytes u64]
// [messages_count u64].
struct PartitionResponse {
  uint32_t id = 0;
  uint64_t created_at = 0;
  uint32_t segments_count = 0;
  uint64_t current_offset = 0;
  uint64_t size_bytes = 0;
  uint64_t messages_count = 0;
  bool operator==(const PartitionResponse&) const = default;
};

// get_stream: the stream, then its topics to the end of the payload. As in 0.8.0's decoder,
// a topic count other than stream.topics_count is invalid_format.
struct StreamDetailsResponse {
  StreamResponse stream;
  std::vector<TopicResponse> topics;
  bool operator==(const StreamDetailsResponse&) const = default;
};

// get_streams: StreamResponses to the end of the payload (none: empty payload).
struct StreamsResponse {
  std::vector<StreamResponse> streams;
  bool operator==(const StreamsResponse&) const = default;
};

// get_topic, and create_topic too (its handler sends this although the type says "empty"):
// the topic, then its partitions to the end; a count other than partitions_count is
// invalid_format.
struct TopicDetailsResponse {
  TopicResponse topic;
  std::vector<PartitionResponse> partitions;
  bool operator==(const TopicDetailsResponse&) const = default;
};

// get_topics: TopicResponses to the end of the payload.
struct TopicsResponse {
  std::vector<TopicResponse> topics;
  bool operator==(const TopicsResponse&) const = default;
};

void encode(const StreamResponse& response, Writer& writer);
Status decode(Reader& reader, StreamResponse& response);
void encode(const TopicResponse& response, Writer& writer);
Status decode(Reader& reader, TopicResponse& response);
void encode(const PartitionResponse& response, Writer& writer);
Status decode(Reader& reader, PartitionResponse& response);
void encode(const StreamDetailsResponse& response, Writer& writer);
Status decode(Reader& reader, StreamDetailsResponse& response);
void encode(const StreamsResponse& response, Writer& writer);
Status decode(Reader& reader, StreamsResponse& response);
void encode(const TopicDetailsResponse& response, Writer& writer);
Status decode(Reader& reader, TopicDetailsResponse& response);
void encode(const TopicsResponse& response, Writer& writer);
Status decode(Reader& reader, TopicsResponse& response);

}  // namespace hark::protocol
