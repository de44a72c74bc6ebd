#pragma once

#include <cstdint>
#include <string_view>

namespace hark::protocol {

// The command codes of Iggy's classic TCP protocol as server 0.8.0 implements them
// (apache/iggy core/binary_protocol/src/codes.rs; docs/wire.md). The value is the u32 `code` of
// a request frame. Codes that exist only on upstream master (13, 40, 45, 606) are absent: a
// 0.8.0 server answers them with InvalidCommand, and so does hark. hark's own commands live in
// [extension_code_first, extension_code_last], a range neither 0.8.0 nor master uses.
enum class Command : uint32_t {
  ping = 1,
  get_stats = 10,
  get_snapshot_file = 11,
  get_cluster_metadata = 12,
  get_me = 20,
  get_client = 21,
  get_clients = 22,
  get_user = 31,
  get_users = 32,
  create_user = 33,
  delete_user = 34,
  update_user = 35,
  update_permissions = 36,
  change_password = 37,
  login_user = 38,
  logout_user = 39,
  get_personal_access_tokens = 41,
  create_personal_access_token = 42,
  delete_personal_access_token = 43,
  login_with_personal_access_token = 44,
  poll_messages = 100,
  send_messages = 101,
  flush_unsaved_buffer = 102,
  get_consumer_offset = 120,
  store_consumer_offset = 121,
  delete_consumer_offset = 122,
  get_stream = 200,
  get_streams = 201,
  create_stream = 202,
  delete_stream = 203,
  update_stream = 204,
  purge_stream = 205,
  get_topic = 300,
  get_topics = 301,
  create_topic = 302,
  delete_topic = 303,
  update_topic = 304,
  purge_topic = 305,
  create_partitions = 402,
  delete_partitions = 403,
  delete_segments = 503,
  get_consumer_group = 600,
  get_consumer_groups = 601,
  create_consumer_group = 602,
  delete_consumer_group = 603,
  join_consumer_group = 604,
  leave_consumer_group = 605,
  // hark extensions (docs/wire.md §11): notifications, never sent by Iggy clients.
  wait_for_messages = 10000,
  wait_for_lag = 10001,
  wait_for_condition = 10002,
};

inline constexpr uint32_t extension_code_first = 10000;
inline constexpr uint32_t extension_code_last = 10099;

inline constexpr uint32_t command_code(Command command) { return static_cast<uint32_t>(command); }

// The snake_case name of a known code ("create_topic"), or "unknown". For logs and the CLI.
std::string_view command_name(uint32_t code);

// True if `code` is one of the commands above.
bool command_known(uint32_t code);

// True for the commands a 0.8.0 server accepts before login: ping, login_user and
// login_with_personal_access_token. Every other handler answers Unauthenticated (40).
constexpr bool command_allowed_before_login(Command command) {
  return command == Command::ping || command == Command::login_user ||
         command == Command::login_with_personal_access_token;
}

}  // namespace hark::protocol
