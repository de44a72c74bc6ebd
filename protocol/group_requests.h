#pragma once

#include <string>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Requests of the consumer-group commands (docs/wire.md §Requests). Every one starts with
// [stream Id][topic Id]; 0.8.0's create carries no group id (the server assigns it).

struct GetConsumerGroupRequest {
  static constexpr Command code = Command::get_consumer_group;
  Identifier stream_id;
  Identifier topic_id;
  Identifier group_id;
  bool operator==(const GetConsumerGroupRequest&) const = default;
};

struct GetConsumerGroupsRequest {
  static constexpr Command code = Command::get_consumer_groups;
  Identifier stream_id;
  Identifier topic_id;
  bool operator==(const GetConsumerGroupsRequest&) const = default;
};

struct CreateConsumerGroupRequest {
  static constexpr Command code = Command::create_consumer_group;
  Identifier stream_id;
  Identifier topic_id;
  std::string name;
  bool operator==(const CreateConsumerGroupRequest&) const = default;
};

struct DeleteConsumerGroupRequest {
  static constexpr Command code = Command::delete_consumer_group;
  Identifier stream_id;
  Identifier topic_id;
  Identifier group_id;
  bool operator==(const DeleteConsumerGroupRequest&) const = default;
};

struct JoinConsumerGroupRequest {
  static constexpr Command code = Command::join_consumer_group;
  Identifier stream_id;
  Identifier topic_id;
  Identifier group_id;
  bool operator==(const JoinConsumerGroupRequest&) const = default;
};

struct LeaveConsumerGroupRequest {
  static constexpr Command code = Command::leave_consumer_group;
  Identifier stream_id;
  Identifier topic_id;
  Identifier group_id;
  bool operator==(const LeaveConsumerGroupRequest&) const = default;
};

void encode(const GetConsumerGroupRequest& request, Writer& writer);
Status decode(Reader& reader, GetConsumerGroupRequest& request);
void encode(const GetConsumerGroupsRequest& request, Writer& writer);
Status decode(Reader& reader, GetConsumerGroupsRequest& request);
void encode(const CreateConsumerGroupRequest& request, Writer& writer);
Status decode(Reader& reader, CreateConsumerGroupRequest& request);
void encode(const DeleteConsumerGroupRequest& request, Writer& writer);
Status decode(Reader& reader, DeleteConsumerGroupRequest& request);
void encode(const JoinConsumerGroupRequest& request, Writer& writer);
Status decode(Reader& reader, JoinConsumerGroupRequest& request);
void encode(const LeaveConsumerGroupRequest& request, Writer& writer);
Status decode(Reader& reader, LeaveConsumerGroupRequest& request);

}  // namespace hark::protocol
