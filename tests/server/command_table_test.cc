// Covers server/commands.inc, the one table of harkd's commands: each row's request type is the
// command its name says, no command has two rows, the protocol commands without a row are
// exactly the ones harkd does not implement (server/README.md), and the columns generated into
// permissioner.cc and command_table.h say what each row says.
#include "hark/server/command_table.h"

#include <set>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "hark/protocol/command.h"
#include "hark/protocol/request.h"
#include "hark/server/users/permissioner.h"

namespace hark::server {
namespace {

using protocol::Command;

struct Row {
  Command command;       // From the name column.
  Command request_code;  // Of the Request column's type.
  std::string_view name;
  std::string_view kind;
  Access access;
  bool shard_zero;
};

constexpr bool shard_zero = true;
constexpr bool here = false;

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
#define HARK_COMMAND(name, request, kind, operation, access, applied) \
  Row{Command::name, protocol::request##Request::code, #name, #kind, Access::access, applied},
#include "hark/server/commands.inc"
#undef HARK_COMMAND
  };
  return table;
}

template <size_t... indexes>
std::vector<Command> protocol_commands(std::index_sequence<indexes...>) {
  return {std::variant_alternative_t<indexes, protocol::Request>::code...};
}

TEST(CommandTable, EachRowsRequestIsTheCommandItNames) {
  for (const Row& row : rows()) {
    EXPECT_EQ(row.request_code, row.command) << row.name;
    EXPECT_EQ(protocol::command_name(protocol::command_code(row.command)), row.name);
  }
}

TEST(CommandTable, NoCommandHasTwoRows) {
  std::set<Command> seen;
  for (const Row& row : rows()) EXPECT_TRUE(seen.insert(row.command).second) << row.name;
}

TEST(CommandTable, OnlySnapshotsHaveNoRow) {
  std::set<Command> listed;
  for (const Row& row : rows()) listed.insert(row.command);
  std::vector<Command> unlisted;
  for (const Command command :
       protocol_commands(std::make_index_sequence<std::variant_size_v<protocol::Request>>())) {
    if (!listed.contains(command)) unlisted.push_back(command);
  }
  // Answered FeatureUnavailable (Connection::run_unlisted); the e2e snapshot tests check it.
  EXPECT_EQ(unlisted, std::vector<Command>{Command::get_snapshot_file});
}

TEST(CommandTable, KindsAreTheThreeTheGlueKnows) {
  for (const Row& row : rows()) {
    EXPECT_TRUE(row.kind == "reply" || row.kind == "op" || row.kind == "op_result") << row.name;
  }
}

TEST(CommandTable, AccessAndShardZeroColumnsReachTheirFunctions) {
  for (const Row& row : rows()) {
    EXPECT_EQ(access_of(row.command), row.access) << row.name;
    EXPECT_EQ(applied_by_shard_zero(row.command), row.shard_zero) << row.name;
  }
  EXPECT_EQ(access_of(Command::get_snapshot_file), Access::none);
  EXPECT_FALSE(applied_by_shard_zero(Command::get_snapshot_file));
}

TEST(CommandTable, ShardZeroAppliesTheCatalogEditsButCreateStreamAndSegments) {
  // The catalog edits the broker applies on shard 0; create_stream and delete_segments are not.
  const std::set<Command> expected = {
      Command::create_topic,          Command::update_stream,         Command::delete_stream,
      Command::purge_stream,          Command::update_topic,          Command::delete_topic,
      Command::purge_topic,           Command::create_partitions,     Command::delete_partitions,
      Command::create_consumer_group, Command::delete_consumer_group, Command::join_consumer_group,
      Command::leave_consumer_group};
  std::set<Command> applied;
  for (const Row& row : rows()) {
    if (row.shard_zero) applied.insert(row.command);
  }
  EXPECT_EQ(applied, expected);
}

}  // namespace
}  // namespace hark::server
