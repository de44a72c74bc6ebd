#include "hark/tests/protocol/generators.h"

#include <optional>

namespace hark::protocol::test {

rc::Gen<std::string> gen_text(size_t size_min, size_t size_max) {
  static const std::vector<std::string> pieces = {"a", "b", "z", "Q", "0", "9",  "-",
                                                  "_", " ", "é", "ß", "€", "中", "𝄞"};
  return rc::gen::map(
      rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, pieces.size())),
      [size_min, size_max](const std::vector<size_t>& picks) {
        std::string text;
        for (const size_t pick : picks) {
          if (text.size() + pieces[pick].size() > size_max) break;
          text += pieces[pick];
        }
        if (text.size() < size_min) text.append(size_min - text.size(), 'x');
        return text;
      });
}

rc::Gen<Bytes> gen_bytes(size_t size_max) {
  return rc::gen::map(rc::gen::container<std::vector<uint8_t>>(rc::gen::arbitrary<uint8_t>()),
                      [size_max](const std::vector<uint8_t>& values) {
                        Bytes bytes;
                        for (const uint8_t value : values) {
                          if (bytes.size() == size_max) break;
                          bytes.push_back(static_cast<std::byte>(value));
                        }
                        return bytes;
                      });
}

rc::Gen<float> gen_float() {
  return rc::gen::map(rc::gen::arbitrary<int32_t>(),
                      [](int32_t value) { return static_cast<float>(value) / 1024.0f; });
}

rc::Gen<Identifier> gen_identifier() {
  return rc::gen::oneOf(
      rc::gen::map(rc::gen::arbitrary<uint32_t>(), &Identifier::numeric),
      rc::gen::map(gen_name(), [](const std::string& name) { return *Identifier::named(name); }));
}

}  // namespace hark::protocol::test

namespace rc {
namespace {

namespace p = hark::protocol;
using hark::protocol::test::gen_bytes;
using hark::protocol::test::gen_float;
using hark::protocol::test::gen_identifier;
using hark::protocol::test::gen_name;
using hark::protocol::test::gen_optional;
using hark::protocol::test::gen_text;

}  // namespace

Gen<p::Identifier> Arbitrary<p::Identifier>::arbitrary() { return gen_identifier(); }

Gen<p::Consumer> Arbitrary<p::Consumer>::arbitrary() {
  return gen::build<p::Consumer>(
      gen::set(&p::Consumer::kind, gen::element(p::ConsumerKind::consumer, p::ConsumerKind::group)),
      gen::set(&p::Consumer::id, gen_identifier()));
}

Gen<p::PollingStrategy> Arbitrary<p::PollingStrategy>::arbitrary() {
  return gen::build<p::PollingStrategy>(
      gen::set(&p::PollingStrategy::kind,
               gen::element(p::PollingKind::offset, p::PollingKind::timestamp,
                            p::PollingKind::first, p::PollingKind::last, p::PollingKind::next)),
      gen::set(&p::PollingStrategy::value));
}

Gen<p::Permissions> Arbitrary<p::Permissions>::arbitrary() {
  const auto topic = gen::build<p::TopicPermissions>(
      gen::set(&p::TopicPermissions::topic_id), gen::set(&p::TopicPermissions::manage_topic),
      gen::set(&p::TopicPermissions::read_topic), gen::set(&p::TopicPermissions::poll_messages),
      gen::set(&p::TopicPermissions::send_messages));
  const auto stream = gen::build<p::StreamPermissions>(
      gen::set(&p::StreamPermissions::stream_id), gen::set(&p::StreamPermissions::manage_stream),
      gen::set(&p::StreamPermissions::read_stream), gen::set(&p::StreamPermissions::manage_topics),
      gen::set(&p::StreamPermissions::read_topics), gen::set(&p::StreamPermissions::poll_messages),
      gen::set(&p::StreamPermissions::send_messages),
      gen::set(&p::StreamPermissions::topics,
               gen::container<std::vector<p::TopicPermissions>>(topic)));
  const auto global = gen::build<p::GlobalPermissions>(
      gen::set(&p::GlobalPermissions::manage_servers),
      gen::set(&p::GlobalPermissions::read_servers), gen::set(&p::GlobalPermissions::manage_users),
      gen::set(&p::GlobalPermissions::read_users), gen::set(&p::GlobalPermissions::manage_streams),
      gen::set(&p::GlobalPermissions::read_streams), gen::set(&p::GlobalPermissions::manage_topics),
      gen::set(&p::GlobalPermissions::read_topics), gen::set(&p::GlobalPermissions::poll_messages),
      gen::set(&p::GlobalPermissions::send_messages));
  return gen::build<p::Permissions>(
      gen::set(&p::Permissions::global, global),
      gen::set(&p::Permissions::streams,
               gen::resize(8, gen::container<std::vector<p::StreamPermissions>>(stream))));
}

Gen<p::GetSnapshotRequest> Arbitrary<p::GetSnapshotRequest>::arbitrary() {
  return gen::build<p::GetSnapshotRequest>(
      gen::set(&p::GetSnapshotRequest::compression),
      gen::set(&p::GetSnapshotRequest::snapshot_types,
               gen::container<std::vector<uint8_t>>(gen::arbitrary<uint8_t>())));
}

Gen<p::GetClientRequest> Arbitrary<p::GetClientRequest>::arbitrary() {
  return gen::build<p::GetClientRequest>(gen::set(&p::GetClientRequest::client_id));
}

Gen<p::GetUserRequest> Arbitrary<p::GetUserRequest>::arbitrary() {
  return gen::build<p::GetUserRequest>(gen::set(&p::GetUserRequest::user_id));
}

Gen<p::CreateUserRequest> Arbitrary<p::CreateUserRequest>::arbitrary() {
  return gen::build<p::CreateUserRequest>(
      gen::set(&p::CreateUserRequest::username, gen_name()),
      gen::set(&p::CreateUserRequest::password, gen_text(0, 255)),
      gen::set(&p::CreateUserRequest::status),
      gen::set(&p::CreateUserRequest::permissions, gen_optional(gen::arbitrary<p::Permissions>())));
}

Gen<p::DeleteUserRequest> Arbitrary<p::DeleteUserRequest>::arbitrary() {
  return gen::build<p::DeleteUserRequest>(gen::set(&p::DeleteUserRequest::user_id));
}

Gen<p::UpdateUserRequest> Arbitrary<p::UpdateUserRequest>::arbitrary() {
  return gen::build<p::UpdateUserRequest>(
      gen::set(&p::UpdateUserRequest::user_id),
      gen::set(&p::UpdateUserRequest::username, gen_optional(gen_name())),
      gen::set(&p::UpdateUserRequest::status, gen_optional(gen::arbitrary<uint8_t>())));
}

Gen<p::UpdatePermissionsRequest> Arbitrary<p::UpdatePermissionsRequest>::arbitrary() {
  return gen::build<p::UpdatePermissionsRequest>(
      gen::set(&p::UpdatePermissionsRequest::user_id),
      gen::set(&p::UpdatePermissionsRequest::permissions,
               gen_optional(gen::arbitrary<p::Permissions>())));
}

Gen<p::ChangePasswordRequest> Arbitrary<p::ChangePasswordRequest>::arbitrary() {
  return gen::build<p::ChangePasswordRequest>(
      gen::set(&p::ChangePasswordRequest::user_id),
      gen::set(&p::ChangePasswordRequest::current_password, gen_text(0, 255)),
      gen::set(&p::ChangePasswordRequest::new_password, gen_text(0, 255)));
}

Gen<p::LoginUserRequest> Arbitrary<p::LoginUserRequest>::arbitrary() {
  return gen::build<p::LoginUserRequest>(
      gen::set(&p::LoginUserRequest::username, gen_name()),
      gen::set(&p::LoginUserRequest::password, gen_text(0, 255)),
      gen::set(&p::LoginUserRequest::version, gen_text(0, 1000)),
      gen::set(&p::LoginUserRequest::context, gen_text(0, 1000)));
}

Gen<p::CreatePersonalAccessTokenRequest>
Arbitrary<p::CreatePersonalAccessTokenRequest>::arbitrary() {
  return gen::build<p::CreatePersonalAccessTokenRequest>(
      gen::set(&p::CreatePersonalAccessTokenRequest::name, gen_name()),
      gen::set(&p::CreatePersonalAccessTokenRequest::expiry));
}

Gen<p::DeletePersonalAccessTokenRequest>
Arbitrary<p::DeletePersonalAccessTokenRequest>::arbitrary() {
  return gen::build<p::DeletePersonalAccessTokenRequest>(
      gen::set(&p::DeletePersonalAccessTokenRequest::name, gen_name()));
}

Gen<p::LoginWithPersonalAccessTokenRequest>
Arbitrary<p::LoginWithPersonalAccessTokenRequest>::arbitrary() {
  return gen::build<p::LoginWithPersonalAccessTokenRequest>(
      gen::set(&p::LoginWithPersonalAccessTokenRequest::token, gen_name()));
}

}  // namespace rc

namespace rc {
namespace {

namespace p = hark::protocol;
using hark::protocol::test::gen_name;
using hark::protocol::test::gen_optional;

// [stream Id][topic Id] requests.
template <typename T>
Gen<T> gen_stream_topic() {
  return gen::build<T>(gen::set(&T::stream_id), gen::set(&T::topic_id));
}

template <typename T>
Gen<T> gen_group() {
  return gen::build<T>(gen::set(&T::stream_id), gen::set(&T::topic_id), gen::set(&T::group_id));
}

template <typename T>
Gen<T> gen_consumer_head() {
  return gen::build<T>(gen::set(&T::consumer), gen::set(&T::stream_id), gen::set(&T::topic_id),
                       gen::set(&T::partition_id, gen_optional(gen::arbitrary<uint32_t>())));
}

template <typename T>
Gen<T> gen_topic_settings(Gen<T> head) {
  return gen::apply(
      [](T request, uint8_t compression, uint64_t expiry, uint64_t size, uint8_t replication,
         std::string name) {
        request.compression_algorithm = compression;
        request.message_expiry = expiry;
        request.max_topic_size = size;
        request.replication_factor = replication;
        request.name = std::move(name);
        return request;
      },
      std::move(head), gen::arbitrary<uint8_t>(), gen::arbitrary<uint64_t>(),
      gen::arbitrary<uint64_t>(), gen::arbitrary<uint8_t>(), gen_name());
}

}  // namespace

Gen<p::GetStreamRequest> Arbitrary<p::GetStreamRequest>::arbitrary() {
  return gen::build<p::GetStreamRequest>(gen::set(&p::GetStreamRequest::stream_id));
}

Gen<p::CreateStreamRequest> Arbitrary<p::CreateStreamRequest>::arbitrary() {
  return gen::build<p::CreateStreamRequest>(gen::set(&p::CreateStreamRequest::name, gen_name()));
}

Gen<p::DeleteStreamRequest> Arbitrary<p::DeleteStreamRequest>::arbitrary() {
  return gen::build<p::DeleteStreamRequest>(gen::set(&p::DeleteStreamRequest::stream_id));
}

Gen<p::UpdateStreamRequest> Arbitrary<p::UpdateStreamRequest>::arbitrary() {
  return gen::build<p::UpdateStreamRequest>(gen::set(&p::UpdateStreamRequest::stream_id),
                                            gen::set(&p::UpdateStreamRequest::name, gen_name()));
}

Gen<p::PurgeStreamRequest> Arbitrary<p::PurgeStreamRequest>::arbitrary() {
  return gen::build<p::PurgeStreamRequest>(gen::set(&p::PurgeStreamRequest::stream_id));
}

Gen<p::GetTopicRequest> Arbitrary<p::GetTopicRequest>::arbitrary() {
  return gen_stream_topic<p::GetTopicRequest>();
}

Gen<p::GetTopicsRequest> Arbitrary<p::GetTopicsRequest>::arbitrary() {
  return gen::build<p::GetTopicsRequest>(gen::set(&p::GetTopicsRequest::stream_id));
}

Gen<p::CreateTopicRequest> Arbitrary<p::CreateTopicRequest>::arbitrary() {
  return gen_topic_settings(
      gen::build<p::CreateTopicRequest>(gen::set(&p::CreateTopicRequest::stream_id),
                                        gen::set(&p::CreateTopicRequest::partitions_count)));
}

Gen<p::DeleteTopicRequest> Arbitrary<p::DeleteTopicRequest>::arbitrary() {
  return gen_stream_topic<p::DeleteTopicRequest>();
}

Gen<p::UpdateTopicRequest> Arbitrary<p::UpdateTopicRequest>::arbitrary() {
  return gen_topic_settings(gen_stream_topic<p::UpdateTopicRequest>());
}

Gen<p::PurgeTopicRequest> Arbitrary<p::PurgeTopicRequest>::arbitrary() {
  return gen_stream_topic<p::PurgeTopicRequest>();
}

Gen<p::CreatePartitionsRequest> Arbitrary<p::CreatePartitionsRequest>::arbitrary() {
  return gen::build<p::CreatePartitionsRequest>(
      gen::set(&p::CreatePartitionsRequest::stream_id),
      gen::set(&p::CreatePartitionsRequest::topic_id),
      gen::set(&p::CreatePartitionsRequest::partitions_count));
}

Gen<p::DeletePartitionsRequest> Arbitrary<p::DeletePartitionsRequest>::arbitrary() {
  return gen::build<p::DeletePartitionsRequest>(
      gen::set(&p::DeletePartitionsRequest::stream_id),
      gen::set(&p::DeletePartitionsRequest::topic_id),
      gen::set(&p::DeletePartitionsRequest::partitions_count));
}

Gen<p::DeleteSegmentsRequest> Arbitrary<p::DeleteSegmentsRequest>::arbitrary() {
  return gen::build<p::DeleteSegmentsRequest>(gen::set(&p::DeleteSegmentsRequest::stream_id),
                                              gen::set(&p::DeleteSegmentsRequest::topic_id),
                                              gen::set(&p::DeleteSegmentsRequest::partition_id),
                                              gen::set(&p::DeleteSegmentsRequest::segments_count));
}

Gen<p::GetConsumerGroupRequest> Arbitrary<p::GetConsumerGroupRequest>::arbitrary() {
  return gen_group<p::GetConsumerGroupRequest>();
}

Gen<p::GetConsumerGroupsRequest> Arbitrary<p::GetConsumerGroupsRequest>::arbitrary() {
  return gen_stream_topic<p::GetConsumerGroupsRequest>();
}

Gen<p::CreateConsumerGroupRequest> Arbitrary<p::CreateConsumerGroupRequest>::arbitrary() {
  return gen::build<p::CreateConsumerGroupRequest>(
      gen::set(&p::CreateConsumerGroupRequest::stream_id),
      gen::set(&p::CreateConsumerGroupRequest::topic_id),
      gen::set(&p::CreateConsumerGroupRequest::name, gen_name()));
}

Gen<p::DeleteConsumerGroupRequest> Arbitrary<p::DeleteConsumerGroupRequest>::arbitrary() {
  return gen_group<p::DeleteConsumerGroupRequest>();
}

Gen<p::JoinConsumerGroupRequest> Arbitrary<p::JoinConsumerGroupRequest>::arbitrary() {
  return gen_group<p::JoinConsumerGroupRequest>();
}

Gen<p::LeaveConsumerGroupRequest> Arbitrary<p::LeaveConsumerGroupRequest>::arbitrary() {
  return gen_group<p::LeaveConsumerGroupRequest>();
}

Gen<p::PollMessagesRequest> Arbitrary<p::PollMessagesRequest>::arbitrary() {
  return gen::apply(
      [](p::PollMessagesRequest request, p::PollingStrategy strategy, uint32_t count,
         bool auto_commit, std::optional<uint64_t> wait_timeout_us) {
        request.strategy = strategy;
        request.count = count;
        request.auto_commit = auto_commit;
        request.wait_timeout_us = wait_timeout_us;
        return request;
      },
      gen_consumer_head<p::PollMessagesRequest>(), gen::arbitrary<p::PollingStrategy>(),
      gen::arbitrary<uint32_t>(), gen::arbitrary<bool>(),
      gen::oneOf(gen::just(std::optional<uint64_t>()), gen::just(std::optional<uint64_t>(0)),
                 gen::map(gen::arbitrary<uint64_t>(),
                          [](uint64_t wait) { return std::optional<uint64_t>(wait); })));
}

Gen<p::FlushUnsavedBufferRequest> Arbitrary<p::FlushUnsavedBufferRequest>::arbitrary() {
  return gen::build<p::FlushUnsavedBufferRequest>(
      gen::set(&p::FlushUnsavedBufferRequest::stream_id),
      gen::set(&p::FlushUnsavedBufferRequest::topic_id),
      gen::set(&p::FlushUnsavedBufferRequest::partition_id),
      gen::set(&p::FlushUnsavedBufferRequest::fsync));
}

Gen<p::GetConsumerOffsetRequest> Arbitrary<p::GetConsumerOffsetRequest>::arbitrary() {
  return gen_consumer_head<p::GetConsumerOffsetRequest>();
}

Gen<p::StoreConsumerOffsetRequest> Arbitrary<p::StoreConsumerOffsetRequest>::arbitrary() {
  return gen::apply(
      [](p::StoreConsumerOffsetRequest request, uint64_t offset) {
        request.offset = offset;
        return request;
      },
      gen_consumer_head<p::StoreConsumerOffsetRequest>(), gen::arbitrary<uint64_t>());
}

Gen<p::DeleteConsumerOffsetRequest> Arbitrary<p::DeleteConsumerOffsetRequest>::arbitrary() {
  return gen_consumer_head<p::DeleteConsumerOffsetRequest>();
}

}  // namespace rc
