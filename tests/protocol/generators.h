#pragma once

// rapidcheck generators for every request and response type of protocol/, producing only
// values the wire can carry (names 1..255 bytes of valid UTF-8, consistent counts), so a
// round trip must reproduce them exactly.

#include <rapidcheck.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hark/protocol/group_requests.h"
#include "hark/protocol/group_responses.h"
#include "hark/protocol/message_requests.h"
#include "hark/protocol/partition_requests.h"
#include "hark/protocol/permissions.h"
#include "hark/protocol/primitives.h"
#include "hark/protocol/stream_requests.h"
#include "hark/protocol/stream_responses.h"
#include "hark/protocol/system_requests.h"
#include "hark/protocol/system_responses.h"
#include "hark/protocol/user_requests.h"
#include "hark/protocol/user_responses.h"

namespace hark::protocol::test {

// Valid UTF-8 of size_min..size_max bytes, mixing 1- to 4-byte characters.
rc::Gen<std::string> gen_text(size_t size_min, size_t size_max);
// A WireName: 1..255 bytes.
inline rc::Gen<std::string> gen_name() { return gen_text(1, 255); }
// Arbitrary bytes.
rc::Gen<Bytes> gen_bytes(size_t size_max);
// Finite floats (NaN would make equality fail for reasons that are not the codec's).
rc::Gen<float> gen_float();
rc::Gen<Identifier> gen_identifier();

template <typename T>
rc::Gen<std::optional<T>> gen_optional(rc::Gen<T> value) {
  return rc::gen::oneOf(rc::gen::just(std::optional<T>()), rc::gen::map(std::move(value), [](T v) {
                          return std::optional<T>(std::move(v));
                        }));
}

}  // namespace hark::protocol::test

namespace rc {

#define HARK_ARBITRARY(Type)                      \
  template <>                                     \
  struct Arbitrary<hark::protocol::Type> {        \
    static Gen<hark::protocol::Type> arbitrary(); \
  }

HARK_ARBITRARY(Identifier);
HARK_ARBITRARY(Consumer);
HARK_ARBITRARY(PollingStrategy);
HARK_ARBITRARY(Permissions);
HARK_ARBITRARY(GetSnapshotRequest);
HARK_ARBITRARY(GetClientRequest);
HARK_ARBITRARY(GetUserRequest);
HARK_ARBITRARY(CreateUserRequest);
HARK_ARBITRARY(DeleteUserRequest);
HARK_ARBITRARY(UpdateUserRequest);
HARK_ARBITRARY(UpdatePermissionsRequest);
HARK_ARBITRARY(ChangePasswordRequest);
HARK_ARBITRARY(LoginUserRequest);
HARK_ARBITRARY(CreatePersonalAccessTokenRequest);
HARK_ARBITRARY(DeletePersonalAccessTokenRequest);
HARK_ARBITRARY(LoginWithPersonalAccessTokenRequest);
HARK_ARBITRARY(GetStreamRequest);
HARK_ARBITRARY(CreateStreamRequest);
HARK_ARBITRARY(DeleteStreamRequest);
HARK_ARBITRARY(UpdateStreamRequest);
HARK_ARBITRARY(PurgeStreamRequest);
HARK_ARBITRARY(GetTopicRequest);
HARK_ARBITRARY(GetTopicsRequest);
HARK_ARBITRARY(CreateTopicRequest);
HARK_ARBITRARY(DeleteTopicRequest);
HARK_ARBITRARY(UpdateTopicRequest);
HARK_ARBITRARY(PurgeTopicRequest);
HARK_ARBITRARY(CreatePartitionsRequest);
HARK_ARBITRARY(DeletePartitionsRequest);
HARK_ARBITRARY(DeleteSegmentsRequest);
HARK_ARBITRARY(GetConsumerGroupRequest);
HARK_ARBITRARY(GetConsumerGroupsRequest);
HARK_ARBITRARY(CreateConsumerGroupRequest);
HARK_ARBITRARY(DeleteConsumerGroupRequest);
HARK_ARBITRARY(JoinConsumerGroupRequest);
HARK_ARBITRARY(LeaveConsumerGroupRequest);
HARK_ARBITRARY(PollMessagesRequest);
HARK_ARBITRARY(FlushUnsavedBufferRequest);
HARK_ARBITRARY(GetConsumerOffsetRequest);
HARK_ARBITRARY(StoreConsumerOffsetRequest);
HARK_ARBITRARY(DeleteConsumerOffsetRequest);
HARK_ARBITRARY(StreamResponse);
HARK_ARBITRARY(TopicResponse);
HARK_ARBITRARY(PartitionResponse);
HARK_ARBITRARY(StreamDetailsResponse);
HARK_ARBITRARY(StreamsResponse);
HARK_ARBITRARY(TopicDetailsResponse);
HARK_ARBITRARY(TopicsResponse);
HARK_ARBITRARY(ConsumerGroupResponse);
HARK_ARBITRARY(ConsumerGroupMember);
HARK_ARBITRARY(ConsumerGroupDetailsResponse);
HARK_ARBITRARY(ConsumerGroupsResponse);
HARK_ARBITRARY(ConsumerOffsetResponse);
HARK_ARBITRARY(IdentityResponse);
HARK_ARBITRARY(ClientResponse);
HARK_ARBITRARY(ConsumerGroupInfo);
HARK_ARBITRARY(ClientDetailsResponse);
HARK_ARBITRARY(ClientsResponse);
HARK_ARBITRARY(CacheMetric);
HARK_ARBITRARY(StatsResponse);
HARK_ARBITRARY(ClusterNode);
HARK_ARBITRARY(ClusterMetadataResponse);
HARK_ARBITRARY(SnapshotResponse);
HARK_ARBITRARY(UserResponse);
HARK_ARBITRARY(UserDetailsResponse);
HARK_ARBITRARY(UsersResponse);
HARK_ARBITRARY(RawPersonalAccessTokenResponse);
HARK_ARBITRARY(PersonalAccessTokenInfo);
HARK_ARBITRARY(PersonalAccessTokensResponse);

#undef HARK_ARBITRARY

}  // namespace rc
