// Round-trip properties for every request and response type: encoding a generated value and
// decoding the bytes gives the value back with no byte left over; requests also survive the
// whole path a server takes (frame scan, dispatch by code). rapidcheck prints the seed.
#include <variant>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/framing.h"
#include "hark/protocol/request.h"
#include "hark/tests/protocol/generators.h"

namespace hark::protocol {
namespace {

template <typename T>
void expect_payload_round_trip(const T& value) {
  Bytes bytes;
  RC_ASSERT(encode_payload(value, bytes).ok());
  const Result<Decoded<T>> decoded = decode_payload<T>(bytes);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(decoded->value == value);
  RC_ASSERT(decoded->trailing_bytes == 0u);
}

template <typename T>
void expect_request_round_trip(const T& request) {
  expect_payload_round_trip(request);
  Bytes frame;
  RC_ASSERT(encode_request(request, frame).ok());
  const FrameScan scan = scan_request(frame, FrameLimits{});
  RC_ASSERT(scan.state == FrameState::ready);
  RC_ASSERT(scan.code == command_code(T::code));
  RC_ASSERT(scan.frame_size == frame.size());
  const Result<DecodedRequest> decoded = decode_request(scan.code, scan.payload);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(std::holds_alternative<T>(decoded->request));
  RC_ASSERT(std::get<T>(decoded->request) == request);
  RC_ASSERT(request_code(decoded->request) == command_code(T::code));
}

#define HARK_REQUEST_ROUND_TRIP(Type)                            \
  RC_GTEST_PROP(RequestRoundTrip, Type, (const Type& request)) { \
    expect_request_round_trip(request);                          \
  }

#define HARK_RESPONSE_ROUND_TRIP(Type)                             \
  RC_GTEST_PROP(ResponseRoundTrip, Type, (const Type& response)) { \
    expect_payload_round_trip(response);                           \
  }

HARK_REQUEST_ROUND_TRIP(GetSnapshotRequest)
HARK_REQUEST_ROUND_TRIP(GetClientRequest)
HARK_REQUEST_ROUND_TRIP(GetUserRequest)
HARK_REQUEST_ROUND_TRIP(CreateUserRequest)
HARK_REQUEST_ROUND_TRIP(DeleteUserRequest)
HARK_REQUEST_ROUND_TRIP(UpdateUserRequest)
HARK_REQUEST_ROUND_TRIP(UpdatePermissionsRequest)
HARK_REQUEST_ROUND_TRIP(ChangePasswordRequest)
HARK_REQUEST_ROUND_TRIP(LoginUserRequest)
HARK_REQUEST_ROUND_TRIP(CreatePersonalAccessTokenRequest)
HARK_REQUEST_ROUND_TRIP(DeletePersonalAccessTokenRequest)
HARK_REQUEST_ROUND_TRIP(LoginWithPersonalAccessTokenRequest)
HARK_REQUEST_ROUND_TRIP(GetStreamRequest)
HARK_REQUEST_ROUND_TRIP(CreateStreamRequest)
HARK_REQUEST_ROUND_TRIP(DeleteStreamRequest)
HARK_REQUEST_ROUND_TRIP(UpdateStreamRequest)
HARK_REQUEST_ROUND_TRIP(PurgeStreamRequest)
HARK_REQUEST_ROUND_TRIP(GetTopicRequest)
HARK_REQUEST_ROUND_TRIP(GetTopicsRequest)
HARK_REQUEST_ROUND_TRIP(CreateTopicRequest)
HARK_REQUEST_ROUND_TRIP(DeleteTopicRequest)
HARK_REQUEST_ROUND_TRIP(UpdateTopicRequest)
HARK_REQUEST_ROUND_TRIP(PurgeTopicRequest)
HARK_REQUEST_ROUND_TRIP(CreatePartitionsRequest)
HARK_REQUEST_ROUND_TRIP(DeletePartitionsRequest)
HARK_REQUEST_ROUND_TRIP(DeleteSegmentsRequest)
HARK_REQUEST_ROUND_TRIP(GetConsumerGroupRequest)
HARK_REQUEST_ROUND_TRIP(GetConsumerGroupsRequest)
HARK_REQUEST_ROUND_TRIP(CreateConsumerGroupRequest)
HARK_REQUEST_ROUND_TRIP(DeleteConsumerGroupRequest)
HARK_REQUEST_ROUND_TRIP(JoinConsumerGroupRequest)
HARK_REQUEST_ROUND_TRIP(LeaveConsumerGroupRequest)
HARK_REQUEST_ROUND_TRIP(PollMessagesRequest)
HARK_REQUEST_ROUND_TRIP(FlushUnsavedBufferRequest)
HARK_REQUEST_ROUND_TRIP(GetConsumerOffsetRequest)
HARK_REQUEST_ROUND_TRIP(StoreConsumerOffsetRequest)
HARK_REQUEST_ROUND_TRIP(DeleteConsumerOffsetRequest)

HARK_RESPONSE_ROUND_TRIP(StreamResponse)
HARK_RESPONSE_ROUND_TRIP(TopicResponse)
HARK_RESPONSE_ROUND_TRIP(PartitionResponse)
HARK_RESPONSE_ROUND_TRIP(StreamDetailsResponse)
HARK_RESPONSE_ROUND_TRIP(StreamsResponse)
HARK_RESPONSE_ROUND_TRIP(TopicDetailsResponse)
HARK_RESPONSE_ROUND_TRIP(TopicsResponse)
HARK_RESPONSE_ROUND_TRIP(ConsumerGroupResponse)
HARK_RESPONSE_ROUND_TRIP(ConsumerGroupDetailsResponse)
HARK_RESPONSE_ROUND_TRIP(ConsumerGroupsResponse)
HARK_RESPONSE_ROUND_TRIP(ConsumerOffsetResponse)
HARK_RESPONSE_ROUND_TRIP(IdentityResponse)
HARK_RESPONSE_ROUND_TRIP(ClientResponse)
HARK_RESPONSE_ROUND_TRIP(ClientDetailsResponse)
HARK_RESPONSE_ROUND_TRIP(ClientsResponse)
HARK_RESPONSE_ROUND_TRIP(StatsResponse)
HARK_RESPONSE_ROUND_TRIP(ClusterMetadataResponse)
HARK_RESPONSE_ROUND_TRIP(SnapshotResponse)
HARK_RESPONSE_ROUND_TRIP(UserResponse)
HARK_RESPONSE_ROUND_TRIP(UserDetailsResponse)
HARK_RESPONSE_ROUND_TRIP(UsersResponse)
HARK_RESPONSE_ROUND_TRIP(RawPersonalAccessTokenResponse)
HARK_RESPONSE_ROUND_TRIP(PersonalAccessTokensResponse)

// The requests without fields encode to an empty payload and decode from one.
TEST(RequestRoundTrip, EmptyRequestsHaveEmptyPayloads) {
  const Request empty_requests[] = {
      PingRequest{},       GetStatsRequest{},   GetClusterMetadataRequest{},
      GetMeRequest{},      GetClientsRequest{}, GetUsersRequest{},
      LogoutUserRequest{}, GetStreamsRequest{}, GetPersonalAccessTokensRequest{}};
  for (const Request& request : empty_requests) {
    Bytes frame;
    ASSERT_TRUE(encode_request_frame(request, frame).ok());
    ASSERT_EQ(frame.size(), request_header_size);
    const FrameScan scan = scan_request(frame, FrameLimits{});
    ASSERT_EQ(scan.state, FrameState::ready);
    EXPECT_EQ(scan.code, request_code(request));
    const Result<DecodedRequest> decoded = decode_request(scan.code, scan.payload);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(decoded->request.index(), request.index());
  }
}

// Every command code 0.8.0 implements has a decoder, and nothing else does.
TEST(RequestRoundTrip, EveryKnownCodeIsDecodableAndNoOther) {
  for (uint32_t code = 0; code < 1000; ++code) {
    const Result<DecodedRequest> decoded = decode_request(code, {});
    if (!command_known(code)) {
      EXPECT_EQ(decoded.error(), Error::invalid_command) << code;
    } else if (decoded.ok()) {
      EXPECT_EQ(request_code(decoded->request), code);
    } else {
      // An empty payload is too short for most commands: a decode error, not "unknown".
      EXPECT_TRUE(decoded.error() == Error::invalid_command ||
                  decoded.error() == Error::invalid_format)
          << code;
    }
  }
}

}  // namespace
}  // namespace hark::protocol
