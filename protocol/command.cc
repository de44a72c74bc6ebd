#include "hark/protocol/command.h"

#include <algorithm>
#include <array>

namespace hark::protocol {
namespace {

struct CommandInfo {
  Command command;
  std::string_view name;
};

// Sorted by code, so a lookup is a binary search. A table rather than a switch keeps the name
// list in one place for command_name() and command_known().
constexpr std::array<CommandInfo, 50> commands = {{
    {Command::ping, "ping"},
    {Command::get_stats, "get_stats"},
    {Command::get_snapshot_file, "get_snapshot_file"},
    {Command::get_cluster_metadata, "get_cluster_metadata"},
    {Command::get_me, "get_me"},
    {Command::get_client, "get_client"},
    {Command::get_clients, "get_clients"},
    {Command::get_user, "get_user"},
    {Command::get_users, "get_users"},
    {Command::create_user, "create_user"},
    {Command::delete_user, "delete_user"},
    {Command::update_user, "update_user"},
    {Command::update_permissions, "update_permissions"},
    {Command::change_password, "change_password"},
    {Command::login_user, "login_user"},
    {Command::logout_user, "logout_user"},
    {Command::get_personal_access_tokens, "get_personal_access_tokens"},
    {Command::create_personal_access_token, "create_personal_access_token"},
    {Command::delete_personal_access_token, "delete_personal_access_token"},
    {Command::login_with_personal_access_token, "login_with_personal_access_token"},
    {Command::poll_messages, "poll_messages"},
    {Command::send_messages, "send_messages"},
    {Command::flush_unsaved_buffer, "flush_unsaved_buffer"},
    {Command::get_consumer_offset, "get_consumer_offset"},
    {Command::store_consumer_offset, "store_consumer_offset"},
    {Command::delete_consumer_offset, "delete_consumer_offset"},
    {Command::get_stream, "get_stream"},
    {Command::get_streams, "get_streams"},
    {Command::create_stream, "create_stream"},
    {Command::delete_stream, "delete_stream"},
    {Command::update_stream, "update_stream"},
    {Command::purge_stream, "purge_stream"},
    {Command::get_topic, "get_topic"},
    {Command::get_topics, "get_topics"},
    {Command::create_topic, "create_topic"},
    {Command::delete_topic, "delete_topic"},
    {Command::update_topic, "update_topic"},
    {Command::purge_topic, "purge_topic"},
    {Command::create_partitions, "create_partitions"},
    {Command::delete_partitions, "delete_partitions"},
    {Command::delete_segments, "delete_segments"},
    {Command::get_consumer_group, "get_consumer_group"},
    {Command::get_consumer_groups, "get_consumer_groups"},
    {Command::create_consumer_group, "create_consumer_group"},
    {Command::delete_consumer_group, "delete_consumer_group"},
    {Command::join_consumer_group, "join_consumer_group"},
    {Command::leave_consumer_group, "leave_consumer_group"},
    {Command::wait_for_messages, "wait_for_messages"},
    {Command::wait_for_lag, "wait_for_lag"},
    {Command::wait_for_condition, "wait_for_condition"},
}};

static_assert(std::is_sorted(commands.begin(), commands.end(),
                             [](const CommandInfo& a, const CommandInfo& b) {
                               return command_code(a.command) < command_code(b.command);
                             }));

const CommandInfo* find(uint32_t code) {
  const auto* it = std::lower_bound(
      commands.begin(), commands.end(), code,
      [](const CommandInfo& info, uint32_t value) { return command_code(info.command) < value; });
  return it != commands.end() && command_code(it->command) == code ? it : nullptr;
}

}  // namespace

std::string_view command_name(uint32_t code) {
  const CommandInfo* info = find(code);
  return info != nullptr ? info->name : "unknown";
}

bool command_known(uint32_t code) { return find(code) != nullptr; }

}  // namespace hark::protocol
