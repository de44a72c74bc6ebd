// Fuzzes the response decoders a client runs on bytes from a server: the first input byte
// picks the response type, the rest is its payload. Decoding must fail with an error or
// produce a value that re-encodes and decodes to itself; hostile counts must not allocate
// beyond what the bytes present justify (libFuzzer's -rss_limit_mb catches that).
#include <cstddef>
#include <cstdint>
#include <span>

#include "hark/protocol/codec.h"
#include "hark/protocol/group_responses.h"
#include "hark/protocol/notify_responses.h"
#include "hark/protocol/poll_response.h"
#include "hark/protocol/stream_responses.h"
#include "hark/protocol/system_responses.h"
#include "hark/protocol/user_responses.h"

namespace {

using namespace hark::protocol;

template <typename T>
void check(std::span<const std::byte> payload) {
  const hark::Result<Decoded<T>> decoded = decode_payload<T>(payload);
  if (!decoded.ok()) return;
  Bytes encoded;
  if (!encode_payload(decoded->value, encoded).ok()) __builtin_trap();
  const hark::Result<Decoded<T>> again = decode_payload<T>(encoded);
  if (!again.ok() || again->trailing_bytes != 0) __builtin_trap();
  if (!(again->value == decoded->value)) {
    // Floats: a NaN from the input is not equal to itself; compare the bytes instead.
    Bytes reencoded;
    if (!encode_payload(again->value, reencoded).ok() || reencoded != encoded) __builtin_trap();
  }
}

using Check = void (*)(std::span<const std::byte>);

constexpr Check checks[] = {
    &check<StreamDetailsResponse>,
    &check<StreamsResponse>,
    &check<TopicDetailsResponse>,
    &check<TopicsResponse>,
    &check<ConsumerGroupDetailsResponse>,
    &check<ConsumerGroupsResponse>,
    &check<ConsumerOffsetResponse>,
    &check<IdentityResponse>,
    &check<ClientDetailsResponse>,
    &check<ClientsResponse>,
    &check<StatsResponse>,
    &check<ClusterMetadataResponse>,
    &check<UserDetailsResponse>,
    &check<UsersResponse>,
    &check<RawPersonalAccessTokenResponse>,
    &check<PersonalAccessTokensResponse>,
    &check<PollMessagesResponse>,
    &check<StreamResponse>,
    &check<WaitForMessagesResponse>,
    &check<WaitForLagResponse>,
    &check<WaitForConditionResponse>,
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Check check_one = checks[data[0] % (sizeof checks / sizeof checks[0])];
  check_one({reinterpret_cast<const std::byte*>(data + 1), size - 1});
  return 0;
}
