#include "hark/protocol/permissions.h"

#include "hark/protocol/primitives.h"

namespace hark::protocol {
namespace {

constexpr uint8_t has_next = 1;
constexpr uint8_t no_next = 0;

// Reads `N` bools into the members `fields` of `target`, in order.
template <typename T, typename... Fields>
Status read_flags(Reader& reader, T& target, Fields... fields) {
  Error error = Error::ok;
  const auto read_one = [&](bool T::*field) {
    if (error != Error::ok) return;
    Result<bool> value = read_bool(reader);
    if (!value.ok()) {
      error = value.error();
      return;
    }
    target.*field = *value;
  };
  (read_one(fields), ...);
  return error == Error::ok ? Status() : Status(error);
}

template <typename T, typename... Fields>
void write_flags(Writer& writer, const T& source, Fields... fields) {
  (write_bool(writer, source.*fields), ...);
}

Result<TopicPermissions> read_topic(Reader& reader) {
  TopicPermissions topic;
  HARK_TRY_ASSIGN(topic.topic_id, reader.u32());
  HARK_TRY(read_flags(reader, topic, &TopicPermissions::manage_topic, &TopicPermissions::read_topic,
                      &TopicPermissions::poll_messages, &TopicPermissions::send_messages));
  return topic;
}

Result<StreamPermissions> read_stream(Reader& reader) {
  StreamPermissions stream;
  HARK_TRY_ASSIGN(stream.stream_id, reader.u32());
  HARK_TRY(read_flags(reader, stream, &StreamPermissions::manage_stream,
                      &StreamPermissions::read_stream, &StreamPermissions::manage_topics,
                      &StreamPermissions::read_topics, &StreamPermissions::poll_messages,
                      &StreamPermissions::send_messages));
  HARK_TRY_ASSIGN(bool more, read_bool(reader));
  while (more) {
    HARK_TRY_ASSIGN(TopicPermissions topic, read_topic(reader));
    stream.topics.push_back(topic);
    HARK_TRY_ASSIGN(more, read_bool(reader));
  }
  return stream;
}

void write_stream(Writer& writer, const StreamPermissions& stream) {
  writer.u32(stream.stream_id);
  write_flags(writer, stream, &StreamPermissions::manage_stream, &StreamPermissions::read_stream,
              &StreamPermissions::manage_topics, &StreamPermissions::read_topics,
              &StreamPermissions::poll_messages, &StreamPermissions::send_messages);
  writer.u8(stream.topics.empty() ? no_next : has_next);
  for (size_t i = 0; i < stream.topics.size(); ++i) {
    const TopicPermissions& topic = stream.topics[i];
    writer.u32(topic.topic_id);
    write_flags(writer, topic, &TopicPermissions::manage_topic, &TopicPermissions::read_topic,
                &TopicPermissions::poll_messages, &TopicPermissions::send_messages);
    writer.u8(i + 1 < stream.topics.size() ? has_next : no_next);
  }
}

}  // namespace

Result<Permissions> read_permissions(Reader& reader) {
  Permissions permissions;
  GlobalPermissions& global = permissions.global;
  HARK_TRY(read_flags(reader, global, &GlobalPermissions::manage_servers,
                      &GlobalPermissions::read_servers, &GlobalPermissions::manage_users,
                      &GlobalPermissions::read_users, &GlobalPermissions::manage_streams,
                      &GlobalPermissions::read_streams, &GlobalPermissions::manage_topics,
                      &GlobalPermissions::read_topics, &GlobalPermissions::poll_messages,
                      &GlobalPermissions::send_messages));
  HARK_TRY_ASSIGN(bool more, read_bool(reader));
  while (more) {
    HARK_TRY_ASSIGN(StreamPermissions stream, read_stream(reader));
    permissions.streams.push_back(std::move(stream));
    HARK_TRY_ASSIGN(more, read_bool(reader));
  }
  return permissions;
}

void write_permissions(Writer& writer, const Permissions& permissions) {
  const GlobalPermissions& global = permissions.global;
  write_flags(writer, global, &GlobalPermissions::manage_servers, &GlobalPermissions::read_servers,
              &GlobalPermissions::manage_users, &GlobalPermissions::read_users,
              &GlobalPermissions::manage_streams, &GlobalPermissions::read_streams,
              &GlobalPermissions::manage_topics, &GlobalPermissions::read_topics,
              &GlobalPermissions::poll_messages, &GlobalPermissions::send_messages);
  writer.u8(permissions.streams.empty() ? no_next : has_next);
  for (size_t i = 0; i < permissions.streams.size(); ++i) {
    write_stream(writer, permissions.streams[i]);
    writer.u8(i + 1 < permissions.streams.size() ? has_next : no_next);
  }
}

Result<std::optional<Permissions>> read_permissions_field(Reader& reader) {
  HARK_TRY_ASSIGN(const uint8_t has_permissions, reader.u8());
  if (has_permissions != 1) return std::optional<Permissions>();
  HARK_TRY_ASSIGN(const uint32_t declared_size, reader.u32());
  const size_t start = reader.position();
  HARK_TRY_ASSIGN(Permissions permissions, read_permissions(reader));
  if (reader.position() - start != declared_size) return Error::invalid_format;
  return std::optional<Permissions>(std::move(permissions));
}

void write_permissions_field(Writer& writer, const std::optional<Permissions>& permissions) {
  if (!permissions.has_value()) {
    writer.u8(0);
    return;
  }
  writer.u8(1);
  const size_t length_at = writer.size();
  writer.u32(0);
  write_permissions(writer, *permissions);
  writer.patch_u32(length_at, static_cast<uint32_t>(writer.size() - length_at - 4));
}

}  // namespace hark::protocol
