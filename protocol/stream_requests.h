#pragma once

#include <cstdint>
#include <string>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Requests of the stream and topic commands (docs/wire.md §Requests).
// Since 0.8.0 the server assigns stream and topic ids: create requests carry no id.

struct GetStreamRequest {
  static constexpr Command code = Command::get_stream;
  Identifier stream_id;
  bool operator==(const GetStreamRequest&) const = default;
};

struct GetStreamsRequest {
  static constexpr Command code = Command::get_streams;
  bool operator==(const GetStreamsRequest&) const = default;
};

struct CreateStreamRequest {
  static constexpr Command code = Command::create_stream;
  std::string name;
  bool operator==(const CreateStreamRequest&) const = default;
};

struct DeleteStreamRequest {
  static constexpr Command code = Command::delete_stream;
  Identifier stream_id;
  bool operator==(const DeleteStreamRequest&) const = default;
};

struct UpdateStreamRequest {
  static constexpr Command code = Command::update_stream;
  Identifier stream_id;
  std::string name;
  bool operator==(const UpdateStreamRequest&) const = default;
};

struct PurgeStreamRequest {
  static constexpr Command code = Command::purge_stream;
  Identifier stream_id;
  bool operator==(const PurgeStreamRequest&) const = default;
};

struct GetTopicRequest {
  static constexpr Command code = Command::get_topic;
  Identifier stream_id;
  Identifier topic_id;
  bool operator==(const GetTopicRequest&) const = default;
};

struct GetTopicsRequest {
  static constexpr Command code = Command::get_topics;
  Identifier stream_id;
  bool operator==(const GetTopicsRequest&) const = default;
};

// message_expiry µs (0 = server default, UINT64_MAX = never); max_topic_size bytes (0 = server
// default, UINT64_MAX = unlimited); compression_algorithm 1 none, 2 gzip.
struct CreateTopicRequest {
  static constexpr Command code = Command::create_topic;
  Identifier stream_id;
  uint32_t partitions_count = 0;
  uint8_t compression_algorithm = 1;
  uint64_t message_expiry = 0;
  uint64_t max_topic_size = 0;
  uint8_t replication_factor = 1;
  std::string name;
  bool operator==(const CreateTopicRequest&) const = default;
};

struct DeleteTopicRequest {
  static constexpr Command code = Command::delete_topic;
  Identifier stream_id;
  Identifier topic_id;
  bool operator==(const DeleteTopicRequest&) const = default;
};

struct UpdateTopicRequest {
  static constexpr Command code = Command::update_topic;
  Identifier stream_id;
  Identifier topic_id;
  uint8_t compression_algorithm = 1;
  uint64_t message_expiry = 0;
  uint64_t max_topic_size = 0;
  uint8_t replication_factor = 1;
  std::string name;
  bool operator==(const UpdateTopicRequest&) const = default;
};

struct PurgeTopicRequest {
  static constexpr Command code = Command::purge_topic;
  Identifier stream_id;
  Identifier topic_id;
  bool operator==(const PurgeTopicRequest&) const = default;
};

void encode(const GetStreamRequest& request, Writer& writer);
Status decode(Reader& reader, GetStreamRequest& request);
void encode(const GetStreamsRequest& request, Writer& writer);
Status decode(Reader& reader, GetStreamsRequest& request);
void encode(const CreateStreamRequest& request, Writer& writer);
Status decode(Reader& reader, CreateStreamRequest& request);
void encode(const DeleteStreamRequest& request, Writer& writer);
Status decode(Reader& reader, DeleteStreamRequest& request);
void encode(const UpdateStreamRequest& request, Writer& writer);
Status decode(Reader& reader, UpdateStreamRequest& request);
void encode(const PurgeStreamRequest& request, Writer& writer);
Status decode(Reader& reader, PurgeStreamRequest& request);
void encode(const GetTopicRequest& request, Writer& writer);
Status decode(Reader& reader, GetTopicRequest& request);
void encode(const GetTopicsRequest& request, Writer& writer);
Status decode(Reader& reader, GetTopicsRequest& request);
void encode(const CreateTopicRequest& request, Writer& writer);
Status decode(Reader& reader, CreateTopicRequest& request);
void encode(const DeleteTopicRequest& request, Writer& writer);
Status decode(Reader& reader, DeleteTopicRequest& request);
void encode(const UpdateTopicRequest& request, Writer& writer);
Status decode(Reader& reader, UpdateTopicRequest& request);
void encode(const PurgeTopicRequest& request, Writer& writer);
Status decode(Reader& reader, PurgeTopicRequest& request);

}  // namespace hark::protocol
