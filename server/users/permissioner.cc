#include "hark/server/users/permissioner.h"

#include <algorithm>

#include "hark/core/base/assert.h"

namespace hark::server {
namespace {

using protocol::Command;
using protocol::GlobalPermissions;
using protocol::StreamPermissions;
using protocol::TopicPermissions;

bool global_grants(const GlobalPermissions& g, Access access) {
  switch (access) {
    case Access::none: return true;
    case Access::read_servers: return g.manage_servers || g.read_servers;
    case Access::read_users: return g.manage_users || g.read_users;
    case Access::manage_users: return g.manage_users;
    case Access::read_streams:
    case Access::read_stream: return g.manage_streams || g.read_streams;
    case Access::create_stream:
    case Access::manage_stream: return g.manage_streams;
    case Access::read_topics:
    case Access::read_topic:
      return g.manage_streams || g.read_streams || g.manage_topics || g.read_topics;
    case Access::create_topic:
    case Access::manage_topic: return g.manage_streams || g.manage_topics;
    case Access::poll_messages:
      return g.poll_messages || g.manage_streams || g.read_streams || g.manage_topics ||
             g.read_topics;
    case Access::send_messages: return g.send_messages || g.manage_streams || g.manage_topics;
  }
  HARK_UNREACHABLE();
}

bool stream_grants(const StreamPermissions& s, Access access) {
  switch (access) {
    case Access::read_stream: return s.manage_stream || s.read_stream;
    case Access::manage_stream: return s.manage_stream;
    case Access::read_topics:
    case Access::read_topic:
      return s.manage_stream || s.read_stream || s.manage_topics || s.read_topics;
    case Access::create_topic:
    case Access::manage_topic: return s.manage_stream || s.manage_topics;
    case Access::poll_messages:
      return s.poll_messages || s.manage_stream || s.read_stream || s.manage_topics ||
             s.read_topics;
    case Access::send_messages: return s.send_messages || s.manage_stream || s.manage_topics;
    default: return false;
  }
}

bool topic_grants(const TopicPermissions& t, Access access) {
  switch (access) {
    case Access::read_topic: return t.manage_topic || t.read_topic;
    case Access::manage_topic: return t.manage_topic;
    case Access::poll_messages: return t.manage_topic || t.read_topic || t.poll_messages;
    case Access::send_messages: return t.manage_topic || t.send_messages;
    default: return false;
  }
}

}  // namespace

Access access_of(Command command) {
  // The `access` column of commands.inc; a command without a row needs nothing (it is not
  // implemented).
  switch (command) {
#define HARK_COMMAND(name, request, kind, operation, access, applied) \
  case Command::name: return Access::access;
#include "hark/server/commands.inc"
#undef HARK_COMMAND
    default: return Access::none;
  }
}

bool access_needs_stream(Access access) {
  switch (access) {
    case Access::read_stream:
    case Access::manage_stream:
    case Access::read_topics:
    case Access::create_topic:
    case Access::read_topic:
    case Access::manage_topic:
    case Access::poll_messages:
    case Access::send_messages: return true;
    default: return false;
  }
}

bool access_needs_topic(Access access) {
  return access == Access::read_topic || access == Access::manage_topic ||
         access == Access::poll_messages || access == Access::send_messages;
}

Status authorize(const std::optional<protocol::Permissions>& permissions, Access access,
                 std::optional<uint32_t> stream_id, std::optional<uint32_t> topic_id) {
  if (access == Access::none) return ok_status();
  if (!permissions) return Error::unauthorized;
  if (global_grants(permissions->global, access)) return ok_status();
  if (!stream_id || !access_needs_stream(access)) return Error::unauthorized;
  const auto stream =
      std::find_if(permissions->streams.begin(), permissions->streams.end(),
                   [&](const StreamPermissions& s) { return s.stream_id == *stream_id; });
  if (stream == permissions->streams.end()) return Error::unauthorized;
  if (stream_grants(*stream, access)) return ok_status();
  if (!topic_id || !access_needs_topic(access)) return Error::unauthorized;
  const auto topic =
      std::find_if(stream->topics.begin(), stream->topics.end(),
                   [&](const TopicPermissions& t) { return t.topic_id == *topic_id; });
  if (topic == stream->topics.end()) return Error::unauthorized;
  return topic_grants(*topic, access) ? ok_status() : Status(Error::unauthorized);
}

protocol::Permissions root_permissions() {
  protocol::Permissions permissions;
  permissions.global = {.manage_servers = true,
                        .read_servers = true,
                        .manage_users = true,
                        .read_users = true,
                        .manage_streams = true,
                        .read_streams = true,
                        .manage_topics = true,
                        .read_topics = true,
                        .poll_messages = true,
                        .send_messages = true};
  return permissions;
}

}  // namespace hark::server
