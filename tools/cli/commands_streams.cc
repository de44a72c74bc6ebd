// stream create | list | get | update | delete | purge.
#include <string>

#include "hark/tools/cli/command_support.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

using protocol::Identifier;

// A stream command whose only argument is the stream and whose answer is empty.
template <typename Request, typename Call>
ExitCode run_stream_change(Session& session, const Invocation& invocation, std::string_view done,
                           Call call) {
  const Parsed<Identifier> stream = parse_identifier(invocation.args[0], "STREAM");
  if (!stream.ok()) return session.usage_error(stream.reason());
  if (!session.open()) return ExitCode::failed;
  const Status status = call(session.client(), Request{.stream_id = *stream});
  if (!status.ok()) return session.fail(status.error(), {.stream = invocation.args[0]});
  session.print(std::string(done) + " stream " + invocation.args[0] + "\n");
  return ExitCode::ok;
}

}  // namespace

ExitCode run_stream_create(Session& session, const Invocation& invocation) {
  if (invocation.args[0].empty() || invocation.args[0].size() > Identifier::name_size_max) {
    return session.usage_error("NAME: 1 to 255 bytes");
  }
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::StreamResponse> stream =
      session.client().create_stream({.name = invocation.args[0]});
  if (!stream.ok()) return session.fail(stream.error(), {.stream = invocation.args[0]});
  session.print("created stream " + named_id(stream->name, stream->id) + "\n");
  return ExitCode::ok;
}

ExitCode run_stream_list(Session& session, const Invocation& /*invocation*/) {
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::StreamsResponse> streams = session.client().get_streams();
  if (!streams.ok()) return session.fail(streams.error());
  session.print(streams_table_text(streams->streams));
  return ExitCode::ok;
}

ExitCode run_stream_get(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> id = parse_identifier(invocation.args[0], "STREAM");
  if (!id.ok()) return session.usage_error(id.reason());
  if (!session.open()) return ExitCode::failed;
  const auto details = session.client().get_stream({.stream_id = *id});
  const ErrorSubjects subjects{.stream = invocation.args[0]};
  if (!details.ok()) return session.fail(details.error(), subjects);
  if (!details->has_value()) return session.fail(stream_missing(*id), subjects);
  const protocol::StreamResponse& stream = (*details)->stream;
  session.print(fields_text({{"id", std::to_string(stream.id)},
                             {"name", stream.name},
                             {"created", time_text(stream.created_at)},
                             {"topics", std::to_string(stream.topics_count)},
                             {"messages", std::to_string(stream.messages_count)},
                             {"size", size_text(stream.size_bytes)}}));
  if (!(*details)->topics.empty()) session.print("\n" + topics_table_text((*details)->topics));
  return ExitCode::ok;
}

ExitCode run_stream_update(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> id = parse_identifier(invocation.args[0], "STREAM");
  if (!id.ok()) return session.usage_error(id.reason());
  if (invocation.args[1].empty() || invocation.args[1].size() > Identifier::name_size_max) {
    return session.usage_error("NAME: 1 to 255 bytes");
  }
  if (!session.open()) return ExitCode::failed;
  const Status status =
      session.client().update_stream({.stream_id = *id, .name = invocation.args[1]});
  if (!status.ok()) return session.fail(status.error(), {.stream = invocation.args[0]});
  session.print("renamed stream " + invocation.args[0] + " to '" + invocation.args[1] + "'\n");
  return ExitCode::ok;
}

ExitCode run_stream_delete(Session& session, const Invocation& invocation) {
  return run_stream_change<protocol::DeleteStreamRequest>(
      session, invocation, "deleted",
      [](client::Client& client, const auto& request) { return client.delete_stream(request); });
}

ExitCode run_stream_purge(Session& session, const Invocation& invocation) {
  return run_stream_change<protocol::PurgeStreamRequest>(
      session, invocation, "purged",
      [](client::Client& client, const auto& request) { return client.purge_stream(request); });
}

}  // namespace hark::cli
