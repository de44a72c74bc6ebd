// topic create | list | get | update | delete | purge; partition create | delete.
#include <optional>
#include <string>

#include "hark/tools/cli/command_support.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

using protocol::Identifier;

// STREAM and TOPIC, the first two arguments of most topic commands.
struct TopicPath {
  Identifier stream;
  Identifier topic;
};

Parsed<TopicPath> parse_topic_path(const Invocation& invocation) {
  const Parsed<Identifier> stream = parse_identifier(invocation.args[0], "STREAM");
  if (!stream.ok()) return failed_as<TopicPath>(stream);
  const Parsed<Identifier> topic = parse_identifier(invocation.args[1], "TOPIC");
  if (!topic.ok()) return failed_as<TopicPath>(topic);
  return TopicPath{*stream, *topic};
}

ErrorSubjects topic_subjects(const Invocation& invocation) {
  return {.stream = invocation.args[0], .topic = invocation.args[1]};
}

// --message-expiry and --max-size, when given.
struct TopicLimits {
  std::optional<uint64_t> message_expiry_us;
  std::optional<uint64_t> max_size_bytes;
};

Parsed<TopicLimits> parse_topic_limits(const CommandLine& line) {
  TopicLimits limits;
  if (const auto text = line.value("message-expiry")) {
    const Parsed<uint64_t> expiry = parse_expiry_us(*text, "--message-expiry");
    if (!expiry.ok()) return failed_as<TopicLimits>(expiry);
    limits.message_expiry_us = *expiry;
  }
  if (const auto text = line.value("max-size")) {
    const Parsed<uint64_t> size = parse_size_bytes(*text, "--max-size");
    if (!size.ok()) return failed_as<TopicLimits>(size);
    limits.max_size_bytes = *size;
  }
  return limits;
}

// A topic command on STREAM TOPIC whose answer is empty.
template <typename Request, typename Call>
ExitCode run_topic_change(Session& session, const Invocation& invocation, std::string_view done,
                          Call call) {
  const Parsed<TopicPath> path = parse_topic_path(invocation);
  if (!path.ok()) return session.usage_error(path.reason());
  if (!session.open()) return ExitCode::failed;
  const Status status =
      call(session.client(), Request{.stream_id = path->stream, .topic_id = path->topic});
  if (!status.ok()) return session.fail(status.error(), topic_subjects(invocation));
  session.print(std::string(done) + " topic " + invocation.args[1] + " of stream " +
                invocation.args[0] + "\n");
  return ExitCode::ok;
}

// partition create | delete STREAM TOPIC COUNT.
template <typename Request, typename Call>
ExitCode run_partitions_change(Session& session, const Invocation& invocation,
                               std::string_view done, Call call) {
  const Parsed<TopicPath> path = parse_topic_path(invocation);
  if (!path.ok()) return session.usage_error(path.reason());
  const Parsed<uint32_t> count = parse_u32(invocation.args[2], "COUNT");
  if (!count.ok()) return session.usage_error(count.reason());
  if (*count == 0) return session.usage_error("COUNT: at least 1");
  if (!session.open()) return ExitCode::failed;
  const Status status =
      call(session.client(),
           Request{.stream_id = path->stream, .topic_id = path->topic, .partitions_count = *count});
  if (!status.ok()) return session.fail(status.error(), topic_subjects(invocation));
  session.print(std::string(done) + " " + invocation.args[2] + " partition(s) of topic " +
                invocation.args[1] + "\n");
  return ExitCode::ok;
}

}  // namespace

ExitCode run_topic_create(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> stream = parse_identifier(invocation.args[0], "STREAM");
  if (!stream.ok()) return session.usage_error(stream.reason());
  const std::string& name = invocation.args[1];
  if (name.empty() || name.size() > Identifier::name_size_max) {
    return session.usage_error("NAME: 1 to 255 bytes");
  }
  uint32_t partitions = 1;
  if (const auto text = invocation.line.value("partitions")) {
    const Parsed<uint32_t> parsed = parse_u32(*text, "--partitions");
    if (!parsed.ok()) return session.usage_error(parsed.reason());
    partitions = *parsed;
  }
  const Parsed<TopicLimits> limits = parse_topic_limits(invocation.line);
  if (!limits.ok()) return session.usage_error(limits.reason());
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::TopicDetailsResponse> topic =
      session.client().create_topic({.stream_id = *stream,
                                     .partitions_count = partitions,
                                     .message_expiry = limits->message_expiry_us.value_or(0),
                                     .max_topic_size = limits->max_size_bytes.value_or(0),
                                     .name = name});
  if (!topic.ok())
    return session.fail(topic.error(), {.stream = invocation.args[0], .topic = name});
  session.print("created topic " + named_id(topic->topic.name, topic->topic.id) + " in stream " +
                invocation.args[0] + " with " + std::to_string(topic->topic.partitions_count) +
                " partition(s)\n");
  return ExitCode::ok;
}

ExitCode run_topic_list(Session& session, const Invocation& invocation) {
  const Parsed<Identifier> stream = parse_identifier(invocation.args[0], "STREAM");
  if (!stream.ok()) return session.usage_error(stream.reason());
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::TopicsResponse> topics =
      session.client().get_topics({.stream_id = *stream});
  if (!topics.ok()) return session.fail(topics.error(), {.stream = invocation.args[0]});
  session.print(topics_table_text(topics->topics));
  return ExitCode::ok;
}

ExitCode run_topic_get(Session& session, const Invocation& invocation) {
  const Parsed<TopicPath> path = parse_topic_path(invocation);
  if (!path.ok()) return session.usage_error(path.reason());
  if (!session.open()) return ExitCode::failed;
  const auto details =
      session.client().get_topic({.stream_id = path->stream, .topic_id = path->topic});
  if (!details.ok()) return session.fail(details.error(), topic_subjects(invocation));
  if (!details->has_value()) {
    return session.fail(topic_missing(path->topic), topic_subjects(invocation));
  }
  const protocol::TopicResponse& topic = (*details)->topic;
  session.print(fields_text({{"id", std::to_string(topic.id)},
                             {"name", topic.name},
                             {"created", time_text(topic.created_at)},
                             {"partitions", std::to_string(topic.partitions_count)},
                             {"messages", std::to_string(topic.messages_count)},
                             {"size", size_text(topic.size_bytes)},
                             {"message expiry", expiry_text(topic.message_expiry)},
                             {"max size", size_text(topic.max_topic_size, true)},
                             {"replication factor", std::to_string(topic.replication_factor)}}));
  if (!(*details)->partitions.empty()) {
    session.print("\n" + partitions_table_text((*details)->partitions));
  }
  return ExitCode::ok;
}

ExitCode run_topic_update(Session& session, const Invocation& invocation) {
  const Parsed<TopicPath> path = parse_topic_path(invocation);
  if (!path.ok()) return session.usage_error(path.reason());
  const bool renamed = invocation.args.size() == 3;
  if (renamed &&
      (invocation.args[2].empty() || invocation.args[2].size() > Identifier::name_size_max)) {
    return session.usage_error("NAME: 1 to 255 bytes");
  }
  const Parsed<TopicLimits> limits = parse_topic_limits(invocation.line);
  if (!limits.ok()) return session.usage_error(limits.reason());
  if (!session.open()) return ExitCode::failed;
  // update_topic carries every setting: what is not changed is sent as it is now.
  const auto current =
      session.client().get_topic({.stream_id = path->stream, .topic_id = path->topic});
  if (!current.ok()) return session.fail(current.error(), topic_subjects(invocation));
  if (!current->has_value()) {
    return session.fail(topic_missing(path->topic), topic_subjects(invocation));
  }
  const protocol::TopicResponse& topic = (*current)->topic;
  const Status status = session.client().update_topic(
      {.stream_id = path->stream,
       .topic_id = path->topic,
       .compression_algorithm = topic.compression_algorithm,
       .message_expiry = limits->message_expiry_us.value_or(topic.message_expiry),
       .max_topic_size = limits->max_size_bytes.value_or(topic.max_topic_size),
       .replication_factor = topic.replication_factor,
       .name = renamed ? invocation.args[2] : topic.name});
  if (!status.ok()) return session.fail(status.error(), topic_subjects(invocation));
  session.print("updated topic " + invocation.args[1] + " of stream " + invocation.args[0] + "\n");
  return ExitCode::ok;
}

ExitCode run_topic_delete(Session& session, const Invocation& invocation) {
  return run_topic_change<protocol::DeleteTopicRequest>(
      session, invocation, "deleted",
      [](client::Client& client, const auto& request) { return client.delete_topic(request); });
}

ExitCode run_topic_purge(Session& session, const Invocation& invocation) {
  return run_topic_change<protocol::PurgeTopicRequest>(
      session, invocation, "purged",
      [](client::Client& client, const auto& request) { return client.purge_topic(request); });
}

ExitCode run_partition_create(Session& session, const Invocation& invocation) {
  return run_partitions_change<protocol::CreatePartitionsRequest>(
      session, invocation, "created", [](client::Client& client, const auto& request) {
        return client.create_partitions(request);
      });
}

ExitCode run_partition_delete(Session& session, const Invocation& invocation) {
  return run_partitions_change<protocol::DeletePartitionsRequest>(
      session, invocation, "deleted", [](client::Client& client, const auto& request) {
        return client.delete_partitions(request);
      });
}

}  // namespace hark::cli
