// group create | list | get | delete (consumer groups; join and leave belong to consume).
#include <string>

#include "hark/tools/cli/command_support.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

using protocol::Identifier;

// STREAM TOPIC [GROUP], the arguments of every group command.
struct GroupPath {
  Identifier stream;
  Identifier topic;
  Identifier group;  // Only when a third argument names one.
};

Parsed<GroupPath> parse_group_path(const Invocation& invocation, bool with_group) {
  const Parsed<Identifier> stream = parse_identifier(invocation.args[0], "STREAM");
  if (!stream.ok()) return failed_as<GroupPath>(stream);
  const Parsed<Identifier> topic = parse_identifier(invocation.args[1], "TOPIC");
  if (!topic.ok()) return failed_as<GroupPath>(topic);
  GroupPath path{*stream, *topic, {}};
  if (!with_group) return path;
  const Parsed<Identifier> group = parse_identifier(invocation.args[2], "GROUP");
  if (!group.ok()) return failed_as<GroupPath>(group);
  path.group = *group;
  return path;
}

ErrorSubjects group_subjects(const Invocation& invocation) {
  ErrorSubjects subjects{.stream = invocation.args[0], .topic = invocation.args[1]};
  if (invocation.args.size() > 2) subjects.group = invocation.args[2];
  return subjects;
}

std::string partitions_text(const std::vector<uint32_t>& partitions) {
  std::string text;
  for (const uint32_t partition : partitions) {
    text += (text.empty() ? "" : ",") + std::to_string(partition);
  }
  return text.empty() ? "-" : text;
}

}  // namespace

ExitCode run_group_create(Session& session, const Invocation& invocation) {
  const Parsed<GroupPath> path = parse_group_path(invocation, /*with_group=*/false);
  if (!path.ok()) return session.usage_error(path.reason());
  const std::string& name = invocation.args[2];
  if (name.empty() || name.size() > Identifier::name_size_max) {
    return session.usage_error("NAME: 1 to 255 bytes");
  }
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::ConsumerGroupResponse> group = session.client().create_consumer_group(
      {.stream_id = path->stream, .topic_id = path->topic, .name = name});
  if (!group.ok()) return session.fail(group.error(), group_subjects(invocation));
  session.print("created consumer group " + named_id(group->name, group->id) + " on topic " +
                invocation.args[1] + " of stream " + invocation.args[0] + "\n");
  return ExitCode::ok;
}

ExitCode run_group_list(Session& session, const Invocation& invocation) {
  const Parsed<GroupPath> path = parse_group_path(invocation, /*with_group=*/false);
  if (!path.ok()) return session.usage_error(path.reason());
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::ConsumerGroupsResponse> groups =
      session.client().get_consumer_groups({.stream_id = path->stream, .topic_id = path->topic});
  if (!groups.ok()) return session.fail(groups.error(), group_subjects(invocation));
  session.print(groups_table_text(groups->groups));
  return ExitCode::ok;
}

ExitCode run_group_get(Session& session, const Invocation& invocation) {
  const Parsed<GroupPath> path = parse_group_path(invocation, /*with_group=*/true);
  if (!path.ok()) return session.usage_error(path.reason());
  if (!session.open()) return ExitCode::failed;
  const auto details = session.client().get_consumer_group(
      {.stream_id = path->stream, .topic_id = path->topic, .group_id = path->group});
  if (!details.ok()) return session.fail(details.error(), group_subjects(invocation));
  if (!details->has_value()) {
    return session.fail(group_missing(path->group), group_subjects(invocation));
  }
  const protocol::ConsumerGroupResponse& group = (*details)->group;
  session.print(fields_text({{"id", std::to_string(group.id)},
                             {"name", group.name},
                             {"partitions", std::to_string(group.partitions_count)},
                             {"members", std::to_string(group.members_count)}}));
  if (!(*details)->members.empty()) {
    Table members({"MEMBER", "PARTITIONS"});
    for (const protocol::ConsumerGroupMember& member : (*details)->members) {
      members.add({std::to_string(member.id), partitions_text(member.partitions)});
    }
    session.print("\n" + members.text());
  }
  return ExitCode::ok;
}

ExitCode run_group_delete(Session& session, const Invocation& invocation) {
  const Parsed<GroupPath> path = parse_group_path(invocation, /*with_group=*/true);
  if (!path.ok()) return session.usage_error(path.reason());
  if (!session.open()) return ExitCode::failed;
  const Status status = session.client().delete_consumer_group(
      {.stream_id = path->stream, .topic_id = path->topic, .group_id = path->group});
  if (!status.ok()) return session.fail(status.error(), group_subjects(invocation));
  session.print("deleted consumer group " + invocation.args[2] + " of topic " + invocation.args[1] +
                "\n");
  return ExitCode::ok;
}

}  // namespace hark::cli
