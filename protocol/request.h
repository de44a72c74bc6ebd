#pragma once

#include <cstdint>
#include <span>
#include <variant>

#include "hark/core/base/result.h"
#include "hark/protocol/group_requests.h"
#include "hark/protocol/message_requests.h"
#include "hark/protocol/notify_requests.h"
#include "hark/protocol/partition_requests.h"
#include "hark/protocol/send_messages.h"
#include "hark/protocol/stream_requests.h"
#include "hark/protocol/system_requests.h"
#include "hark/protocol/user_requests.h"

namespace hark::protocol {

// Any request a 0.8.0 server accepts, decoded, and hark's notification requests (codes
// extension_code_first..last, docs/wire.md §11). Alternatives are the request structs of
// protocol/; each knows its code (T::code). A SendMessagesRequest holds views into the payload,
// so a decoded Request must not outlive the buffer it was decoded from.
using Request =
    std::variant<PingRequest, GetStatsRequest, GetSnapshotRequest, GetClusterMetadataRequest,
                 GetMeRequest, GetClientRequest, GetClientsRequest, GetUserRequest, GetUsersRequest,
                 CreateUserRequest, DeleteUserRequest, UpdateUserRequest, UpdatePermissionsRequest,
                 ChangePasswordRequest, LoginUserRequest, LogoutUserRequest,
                 GetPersonalAccessTokensRequest, CreatePersonalAccessTokenRequest,
                 DeletePersonalAccessTokenRequest, LoginWithPersonalAccessTokenRequest,
                 PollMessagesRequest, SendMessagesRequest, FlushUnsavedBufferRequest,
                 GetConsumerOffsetRequest, StoreConsumerOffsetRequest, DeleteConsumerOffsetRequest,
                 GetStreamRequest, GetStreamsRequest, CreateStreamRequest, DeleteStreamRequest,
                 UpdateStreamRequest, PurgeStreamRequest, GetTopicRequest, GetTopicsRequest,
                 CreateTopicRequest, DeleteTopicRequest, UpdateTopicRequest, PurgeTopicRequest,
                 CreatePartitionsRequest, DeletePartitionsRequest, DeleteSegmentsRequest,
                 GetConsumerGroupRequest, GetConsumerGroupsRequest, CreateConsumerGroupRequest,
                 DeleteConsumerGroupRequest, JoinConsumerGroupRequest, LeaveConsumerGroupRequest,
                 WaitForMessagesRequest, WaitForLagRequest, WaitForConditionRequest>;

struct DecodedRequest {
  Request request;
  // Bytes after the decoded fields: accepted, and worth a rate-limited warning, as 0.8.0 does
  // ("wire decode: N trailing bytes"). For poll, bytes after wait_timeout_us.
  size_t trailing_bytes = 0;
};

// Decodes the payload of a request with code `code`: an unknown code → invalid_command (3);
// otherwise the errors of the command's decoder (docs/wire.md §Errors). Never allocates more
// than the payload justifies, never asserts on input.
Result<DecodedRequest> decode_request(uint32_t code, std::span<const std::byte> payload);

// The code of a decoded request.
uint32_t request_code(const Request& request);

// Appends the whole frame of `request` (header and payload) to `out`; restores `out` and
// returns the error if a field cannot be carried by the wire.
Status encode_request_frame(const Request& request, Bytes& out);

}  // namespace hark::protocol
