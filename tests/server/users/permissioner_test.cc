// Covers the permission checker against Iggy 0.8.0's rules (metadata/reader.rs perm_*): which
// global, stream and topic flags grant each access, that grants apply only to the ids they
// name, and that no permissions grant nothing. Pure function: table-driven.
#include "hark/server/users/permissioner.h"

#include <gtest/gtest.h>

namespace hark::server {
namespace {

using protocol::Command;
using protocol::Permissions;

bool denied(const Status& status) { return !status.ok() && status.error() == Error::unauthorized; }

Permissions with_global(void (*set)(protocol::GlobalPermissions&)) {
  Permissions permissions;
  set(permissions.global);
  return permissions;
}

TEST(Permissioner, NoPermissionsGrantNothingButNone) {
  EXPECT_TRUE(authorize(std::nullopt, Access::none, std::nullopt, std::nullopt).ok());
  EXPECT_TRUE(denied(authorize(std::nullopt, Access::poll_messages, 1, 1)));
  EXPECT_TRUE(denied(authorize(Permissions{}, Access::read_streams, std::nullopt, std::nullopt)));
}

TEST(Permissioner, RootHasEverything) {
  const Permissions root = root_permissions();
  for (const Access access :
       {Access::read_servers, Access::read_users, Access::manage_users, Access::read_streams,
        Access::create_stream, Access::read_stream, Access::manage_stream, Access::read_topics,
        Access::create_topic, Access::read_topic, Access::manage_topic, Access::poll_messages,
        Access::send_messages}) {
    EXPECT_TRUE(authorize(root, access, std::nullopt, std::nullopt).ok())
        << static_cast<int>(access);
  }
}

TEST(Permissioner, GlobalFlagsFollowIggysInheritance) {
  const Permissions read_streams = with_global([](auto& g) { g.read_streams = true; });
  EXPECT_TRUE(authorize(read_streams, Access::read_streams, std::nullopt, std::nullopt).ok());
  EXPECT_TRUE(authorize(read_streams, Access::read_topic, std::nullopt, std::nullopt).ok());
  EXPECT_TRUE(authorize(read_streams, Access::poll_messages, std::nullopt, std::nullopt).ok());
  EXPECT_TRUE(denied(authorize(read_streams, Access::send_messages, std::nullopt, std::nullopt)));
  EXPECT_TRUE(denied(authorize(read_streams, Access::create_stream, std::nullopt, std::nullopt)));

  const Permissions manage_topics = with_global([](auto& g) { g.manage_topics = true; });
  EXPECT_TRUE(authorize(manage_topics, Access::send_messages, std::nullopt, std::nullopt).ok());
  EXPECT_TRUE(authorize(manage_topics, Access::manage_topic, std::nullopt, std::nullopt).ok());
  EXPECT_TRUE(denied(authorize(manage_topics, Access::read_streams, std::nullopt, std::nullopt)))
      << "get_streams needs manage_streams or read_streams";
  EXPECT_TRUE(denied(authorize(manage_topics, Access::manage_stream, std::nullopt, std::nullopt)));

  const Permissions poll = with_global([](auto& g) { g.poll_messages = true; });
  EXPECT_TRUE(authorize(poll, Access::poll_messages, 3, 4).ok());
  EXPECT_TRUE(denied(authorize(poll, Access::read_topic, 3, 4)));

  const Permissions send = with_global([](auto& g) { g.send_messages = true; });
  EXPECT_TRUE(authorize(send, Access::send_messages, 3, 4).ok());
  EXPECT_TRUE(denied(authorize(send, Access::poll_messages, 3, 4)));

  const Permissions users = with_global([](auto& g) { g.read_users = true; });
  EXPECT_TRUE(authorize(users, Access::read_users, std::nullopt, std::nullopt).ok());
  EXPECT_TRUE(denied(authorize(users, Access::manage_users, std::nullopt, std::nullopt)));
  const Permissions servers = with_global([](auto& g) { g.read_servers = true; });
  EXPECT_TRUE(authorize(servers, Access::read_servers, std::nullopt, std::nullopt).ok());
}

TEST(Permissioner, StreamGrantsApplyToThatStreamOnly) {
  Permissions permissions;
  permissions.streams.push_back({.stream_id = 2, .read_stream = true});
  EXPECT_TRUE(authorize(permissions, Access::read_stream, 2, std::nullopt).ok());
  EXPECT_TRUE(authorize(permissions, Access::read_topics, 2, std::nullopt).ok());
  EXPECT_TRUE(authorize(permissions, Access::read_topic, 2, 9).ok());
  EXPECT_TRUE(authorize(permissions, Access::poll_messages, 2, 9).ok());
  EXPECT_TRUE(denied(authorize(permissions, Access::send_messages, 2, 9)));
  EXPECT_TRUE(denied(authorize(permissions, Access::manage_stream, 2, std::nullopt)));
  EXPECT_TRUE(denied(authorize(permissions, Access::create_topic, 2, std::nullopt)));
  EXPECT_TRUE(denied(authorize(permissions, Access::read_stream, 3, std::nullopt)));
  EXPECT_TRUE(denied(authorize(permissions, Access::read_stream, std::nullopt, std::nullopt)))
      << "an unresolved stream gets global grants only";
  EXPECT_TRUE(denied(authorize(permissions, Access::read_streams, std::nullopt, std::nullopt)));

  Permissions manager;
  manager.streams.push_back({.stream_id = 2, .manage_topics = true});
  EXPECT_TRUE(authorize(manager, Access::create_topic, 2, std::nullopt).ok());
  EXPECT_TRUE(authorize(manager, Access::manage_topic, 2, 5).ok());
  EXPECT_TRUE(authorize(manager, Access::send_messages, 2, 5).ok());
  EXPECT_TRUE(denied(authorize(manager, Access::manage_stream, 2, std::nullopt)));
}

TEST(Permissioner, TopicGrantsApplyToThatTopicOnly) {
  Permissions permissions;
  protocol::StreamPermissions stream{.stream_id = 1};
  stream.topics.push_back({.topic_id = 4, .poll_messages = true});
  stream.topics.push_back({.topic_id = 5, .send_messages = true});
  permissions.streams.push_back(stream);
  EXPECT_TRUE(authorize(permissions, Access::poll_messages, 1, 4).ok());
  EXPECT_TRUE(denied(authorize(permissions, Access::send_messages, 1, 4)));
  EXPECT_TRUE(authorize(permissions, Access::send_messages, 1, 5).ok());
  EXPECT_TRUE(denied(authorize(permissions, Access::poll_messages, 1, 5)));
  EXPECT_TRUE(denied(authorize(permissions, Access::poll_messages, 1, 6)));
  EXPECT_TRUE(denied(authorize(permissions, Access::poll_messages, 2, 4)));
  EXPECT_TRUE(denied(authorize(permissions, Access::read_topic, 1, 4)))
      << "poll_messages does not grant reading the topic's metadata";
  EXPECT_TRUE(denied(authorize(permissions, Access::read_stream, 1, std::nullopt)));
  EXPECT_TRUE(denied(authorize(permissions, Access::create_topic, 1, 4)))
      << "topic grants never reach stream-level accesses";
}

TEST(Permissioner, CommandsMapToIggysChecks) {
  EXPECT_EQ(access_of(Command::ping), Access::none);
  EXPECT_EQ(access_of(Command::get_me), Access::none);
  EXPECT_EQ(access_of(Command::get_user), Access::none) << "checked by target in the handler";
  EXPECT_EQ(access_of(Command::change_password), Access::none);
  EXPECT_EQ(access_of(Command::get_stats), Access::read_servers);
  EXPECT_EQ(access_of(Command::get_clients), Access::read_servers);
  EXPECT_EQ(access_of(Command::get_users), Access::read_users);
  EXPECT_EQ(access_of(Command::update_permissions), Access::manage_users);
  EXPECT_EQ(access_of(Command::get_streams), Access::read_streams);
  EXPECT_EQ(access_of(Command::create_stream), Access::create_stream);
  EXPECT_EQ(access_of(Command::purge_stream), Access::manage_stream);
  EXPECT_EQ(access_of(Command::get_topics), Access::read_topics);
  EXPECT_EQ(access_of(Command::join_consumer_group), Access::read_topic);
  EXPECT_EQ(access_of(Command::delete_segments), Access::manage_topic);
  EXPECT_EQ(access_of(Command::delete_consumer_offset), Access::poll_messages);
  EXPECT_EQ(access_of(Command::flush_unsaved_buffer), Access::send_messages);
  EXPECT_EQ(access_of(Command::create_personal_access_token), Access::none);
}

}  // namespace
}  // namespace hark::server
