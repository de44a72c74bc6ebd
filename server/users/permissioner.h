#pragma once

#include <cstdint>
#include <optional>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/permissions.h"

namespace hark::server {

// What a command needs of its user, as Iggy 0.8.0's permission checks say
// (core/server/src/metadata/reader.rs perm_*). Each level is granted by the flags listed; a
// stream-level grant applies to that stream's id, a topic-level one to that topic's id.
enum class Access : uint8_t {
  none,           // ping, login, logout, get_me, cluster metadata, own tokens and password.
  read_servers,   // get_stats, get_client(s): global manage_servers | read_servers.
  read_users,     // get_user (another user), get_users: global manage_users | read_users.
  manage_users,   // create/update/delete user, permissions, another's password: manage_users.
  read_streams,   // get_streams: global manage_streams | read_streams.
  create_stream,  // create_stream: global manage_streams.
  read_stream,    // get_stream: global manage|read_streams; stream manage|read_stream.
  manage_stream,  // update/delete/purge stream: global manage_streams; stream manage_stream.
  read_topics,    // get_topics: global manage|read_streams|topics; stream manage|read_stream,
                  // manage|read_topics.
  create_topic,   // create_topic: global manage_streams|topics; stream manage_stream|topics.
  read_topic,     // get_topic, consumer groups: read_topics, plus topic manage|read_topic.
  manage_topic,   // update/delete/purge topic, partitions, segments: create_topic's flags,
                  // plus topic manage_topic.
  poll_messages,  // poll, get/store/delete offset: read_topic's flags, plus poll_messages at
                  // any level.
  send_messages,  // send, flush: global manage_streams|topics|send_messages; stream
                  // manage_stream|manage_topics|send_messages; topic manage_topic|send_messages.
};

// The access `command` needs: the `access` column of commands.inc (none for the user commands
// whose need depends on the target: get_user and change_password check manage/read_users
// themselves when the target is another user).
Access access_of(protocol::Command command);

// True if `access` names a stream (and so needs its id to decide).
bool access_needs_stream(Access access);
// True if `access` may be granted at topic level (and so needs the topic's id too).
bool access_needs_topic(Access access);

// ok if `permissions` grant `access`, else Error::unauthorized (41). No permissions at all
// grant nothing. `stream_id` / `topic_id` are the resolved ids of what the command names
// (nullopt: not known, so only global grants count). Pure.
Status authorize(const std::optional<protocol::Permissions>& permissions, Access access,
                 std::optional<uint32_t> stream_id, std::optional<uint32_t> topic_id);

// Every flag set: the root user's permissions (Iggy's Permissions::root()).
protocol::Permissions root_permissions();

}  // namespace hark::server
