// Covers malformed input: a table of bad payloads per command with the exact Iggy 0.8.0 code,
// every strict prefix of a valid payload of every request type (truncation at each length),
// and hostile counts in responses, which must fail on the bytes actually present instead of
// allocating what the count asks for.
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hark/protocol/codec.h"
#include "hark/protocol/group_responses.h"
#include "hark/protocol/request.h"
#include "hark/protocol/stream_responses.h"
#include "hark/protocol/system_responses.h"
#include "hark/protocol/user_responses.h"
#include "hark/tests/protocol/generators.h"
#include "hark/tests/protocol/test_bytes.h"

namespace hark::protocol {
namespace {

using test::hex;

struct BadRequest {
  Command command;
  const char* payload_hex;
  Error expected;
  const char* why;
};

const BadRequest bad_requests[] = {
    {Command::get_stream, "", Error::invalid_command, "empty identifier"},
    {Command::get_stream, "01", Error::invalid_command, "identifier length missing"},
    {Command::get_stream, "01 04 000000", Error::invalid_command, "numeric value truncated"},
    {Command::get_stream, "03 04 00000000", Error::invalid_command, "unknown identifier kind"},
    {Command::get_stream, "00 00", Error::invalid_command, "identifier kind 0"},
    {Command::get_stream, "07 09 00", Error::invalid_command, "truncation wins over kind"},
    {Command::get_stream, "01 03 000000", Error::invalid_format, "numeric length 3"},
    {Command::get_stream, "01 05 0000000000", Error::invalid_format, "numeric length 5"},
    {Command::get_stream, "02 00", Error::invalid_format, "empty name identifier"},
    {Command::get_stream, "02 02 c328", Error::invalid_command, "name not UTF-8"},
    {Command::get_stream, "02 03 eda080", Error::invalid_command, "UTF-8 surrogate"},
    {Command::get_stream, "02 02 c081", Error::invalid_command, "overlong UTF-8"},
    {Command::create_stream, "00", Error::invalid_format, "empty stream name"},
    {Command::create_stream, "00 6162", Error::invalid_format, "length 0 checked first"},
    {Command::create_stream, "05 616263", Error::invalid_command, "name truncated"},
    {Command::create_stream, "02 ff61", Error::invalid_command, "name not UTF-8"},
    {Command::update_stream, "01 04 00000000", Error::invalid_command, "name missing"},
    {Command::create_topic, "01 04 00000000 01000000 01", Error::invalid_command, "truncated"},
    {Command::create_topic, "01 04 00000000 01000000 01 0000000000000000 0000000000000000 01 00",
     Error::invalid_format, "empty topic name"},
    {Command::poll_messages, "03 01 04 00000000", Error::invalid_command, "consumer kind 3"},
    {Command::poll_messages, "00 01 04 00000000", Error::invalid_command, "consumer kind 0"},
    {Command::poll_messages,
     "01 01 04 00000000 | 01 04 00000000 | 01 04 00000000 | 01 00000000 | 06 0000000000000000 "
     "| 0a000000 | 01",
     Error::invalid_command, "polling kind 6"},
    {Command::poll_messages,
     "01 01 04 00000000 | 01 04 00000000 | 01 04 00000000 | 01 00000000 | 00",
     Error::invalid_command, "polling kind 0 (checked before the value)"},
    {Command::poll_messages,
     "01 01 04 00000000 | 01 04 00000000 | 01 04 00000000 | 01 00000000 | 01 0000000000000000 "
     "| 0a000000 | 01 | 000000",
     Error::invalid_format, "partial wait_timeout_us"},
    {Command::store_consumer_offset,
     "01 01 04 00000000 | 01 04 00000000 | 01 04 00000000 | 01 00000000 | 00000000",
     Error::invalid_command, "offset truncated"},
    {Command::get_client, "010000", Error::invalid_command, "client id truncated"},
    {Command::get_snapshot_file, "01 05 0102", Error::invalid_command, "types truncated"},
    {Command::login_user, "04 69676779 04 69676779 00000000", Error::invalid_command,
     "context length missing"},
    {Command::login_user, "04 69676779 04 69676779 02000000 ff00 00000000", Error::invalid_command,
     "version not UTF-8"},
    {Command::login_user, "00 04 69676779 00000000 00000000", Error::invalid_format,
     "empty username"},
    {Command::login_user, "04 69676779 09 6967", Error::invalid_command, "password truncated"},
    {Command::create_user, "04 75736572 04 70617373 01 01 05000000 | 00000000000000000000 00",
     Error::invalid_format, "permissions length says 5, blob is 11"},
    {Command::create_user, "04 75736572 04 70617373 01 01 0b000000 | 0000000000",
     Error::invalid_command, "permissions truncated"},
    {Command::update_permissions,
     "01 04 00000000 01 0c000000 | 00000000000000000000 01 | 05000000 000000000000 00",
     Error::invalid_command, "stream permissions truncated"},
    {Command::update_user, "01 04 00000000 01 00", Error::invalid_format, "empty new username"},
    {Command::change_password, "01 04 00000000 03 616263 05 6162", Error::invalid_command,
     "new password truncated"},
    {Command::create_personal_access_token, "03 746f6b 0000", Error::invalid_command,
     "expiry truncated"},
    {Command::login_with_personal_access_token, "00", Error::invalid_format, "empty token"},
    {Command::create_consumer_group, "01 04 00000000 01 04 00000000 00", Error::invalid_format,
     "empty group name"},
    {Command::join_consumer_group, "01 04 00000000 01 04 00000000 02 00", Error::invalid_format,
     "empty group identifier"},
    {Command::delete_segments, "01 04 00000000 01 04 00000000 00000000 0000",
     Error::invalid_command, "segments count truncated"},
    {Command::flush_unsaved_buffer, "01 04 00000000 01 04 00000000 00000000",
     Error::invalid_command, "fsync flag missing"},
};

TEST(MalformedRequests, EachBadPayloadGetsItsIggyCode) {
  for (const BadRequest& bad : bad_requests) {
    const Bytes payload = hex(bad.payload_hex);
    const Result<DecodedRequest> decoded = decode_request(command_code(bad.command), payload);
    EXPECT_EQ(decoded.error(), bad.expected)
        << command_name(command_code(bad.command)) << ": " << bad.why;
  }
}

TEST(MalformedRequests, UnknownCodesAreInvalidCommand) {
  for (const uint32_t code : {0u, 2u, 13u, 40u, 45u, 103u, 606u, 999999u}) {
    EXPECT_EQ(decode_request(code, {}).error(), Error::invalid_command) << code;
  }
}

TEST(MalformedRequests, LenientFieldsFollowZeroEightZero) {
  // Partition flag other than 1 means "no partition"; has_username other than 1 means absent;
  // commands without fields ignore their payload (reported as trailing bytes).
  const Result<DecodedRequest> offset =
      decode_request(command_code(Command::get_consumer_offset),
                     hex("01 01 04 00000000 | 01 04 00000000 | 01 04 00000000 | 02 07000000"));
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(std::get<GetConsumerOffsetRequest>(offset->request).partition_id, std::nullopt);

  const Result<DecodedRequest> update =
      decode_request(command_code(Command::update_user), hex("01 04 00000000 02 00"));
  ASSERT_TRUE(update.ok());
  EXPECT_EQ(std::get<UpdateUserRequest>(update->request).username, std::nullopt);
  EXPECT_EQ(std::get<UpdateUserRequest>(update->request).status, std::nullopt);

  const Result<DecodedRequest> ping = decode_request(command_code(Command::ping), hex("ffff"));
  ASSERT_TRUE(ping.ok());
  EXPECT_EQ(ping->trailing_bytes, 2u);
}

TEST(MalformedRequests, TrailingBytesAreAcceptedAndCounted) {
  const Result<DecodedRequest> decoded =
      decode_request(command_code(Command::delete_stream), hex("01 04 00000000 | aabbcc"));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->trailing_bytes, 3u);
}

// Every strict prefix of a valid payload fails cleanly. The one exception is a poll with a
// wait: its classic prefix (without the 8-byte field) is a complete request, and a prefix that
// cuts the field is invalid_format.
template <typename T>
void expect_prefixes_fail(const T& request) {
  Bytes payload;
  RC_ASSERT(encode_payload(request, payload).ok());
  bool has_wait = false;
  if constexpr (std::is_same_v<T, PollMessagesRequest>)
    has_wait = request.wait_timeout_us.has_value();
  const size_t classic_size = has_wait ? payload.size() - 8 : payload.size();
  for (size_t size = 0; size < payload.size(); ++size) {
    const Result<DecodedRequest> decoded =
        decode_request(command_code(T::code), std::span(payload).first(size));
    if (size == classic_size) {
      RC_ASSERT(decoded.ok());
      continue;
    }
    RC_ASSERT(!decoded.ok());
    RC_ASSERT(decoded.error() ==
              (size > classic_size ? Error::invalid_format : Error::invalid_command));
  }
}

#define HARK_TRUNCATION_PROP(Type) \
  RC_GTEST_PROP(Truncation, Type, (const Type& request)) { expect_prefixes_fail(request); }

HARK_TRUNCATION_PROP(GetSnapshotRequest)
HARK_TRUNCATION_PROP(GetClientRequest)
HARK_TRUNCATION_PROP(CreateUserRequest)
HARK_TRUNCATION_PROP(UpdateUserRequest)
HARK_TRUNCATION_PROP(UpdatePermissionsRequest)
HARK_TRUNCATION_PROP(ChangePasswordRequest)
HARK_TRUNCATION_PROP(LoginUserRequest)
HARK_TRUNCATION_PROP(CreatePersonalAccessTokenRequest)
HARK_TRUNCATION_PROP(LoginWithPersonalAccessTokenRequest)
HARK_TRUNCATION_PROP(UpdateStreamRequest)
HARK_TRUNCATION_PROP(CreateTopicRequest)
HARK_TRUNCATION_PROP(UpdateTopicRequest)
HARK_TRUNCATION_PROP(DeleteSegmentsRequest)
HARK_TRUNCATION_PROP(CreateConsumerGroupRequest)
HARK_TRUNCATION_PROP(JoinConsumerGroupRequest)
HARK_TRUNCATION_PROP(PollMessagesRequest)
HARK_TRUNCATION_PROP(FlushUnsavedBufferRequest)
HARK_TRUNCATION_PROP(StoreConsumerOffsetRequest)

struct BadResponse {
  const char* name;
  Error (*decode_hex)(const char*);
  const char* payload_hex;
  Error expected;
};

template <typename T>
Error decode_error(const char* payload_hex) {
  const Bytes payload = hex(payload_hex);
  const Result<Decoded<T>> decoded = decode_payload<T>(payload);
  return decoded.ok() ? Error::ok : decoded.error();
}

TEST(MalformedResponses, HostileCountsFailOnTheBytesPresent) {
  const BadResponse cases[] = {
      {"member partitions", &decode_error<ConsumerGroupMember>, "01000000 ffffffff 00000000",
       Error::invalid_command},
      {"group members", &decode_error<ConsumerGroupDetailsResponse>,
       "00000000 00000000 ffffffff 01 67", Error::invalid_command},
      {"client groups", &decode_error<ClientDetailsResponse>,
       "01000000 00000000 01 00000000 ffffffff", Error::invalid_command},
      {"cluster nodes", &decode_error<ClusterMetadataResponse>, "00000000 ffffffff",
       Error::invalid_command},
      {"string length", &decode_error<ClientResponse>, "01000000 00000000 01 ffffffff 61",
       Error::invalid_command},
      {"topics count mismatch", &decode_error<StreamDetailsResponse>,
       "00000000 0000000000000000 02000000 0000000000000000 0000000000000000 01 73",
       Error::invalid_format},
      {"user permissions truncated", &decode_error<UserDetailsResponse>,
       "00000000 0000000000000000 01 01 61 | 01 0b000000 0000", Error::invalid_command},
      {"user without permissions padding", &decode_error<UserDetailsResponse>,
       "00000000 0000000000000000 01 01 61 | 00 0000", Error::invalid_command},
  };
  for (const BadResponse& bad : cases) {
    EXPECT_EQ(bad.decode_hex(bad.payload_hex), bad.expected) << bad.name;
  }
}

TEST(MalformedResponses, EmptyPayloadMeansNotFound) {
  const Result<std::optional<StreamDetailsResponse>> missing =
      decode_optional_payload<StreamDetailsResponse>({});
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

}  // namespace
}  // namespace hark::protocol
