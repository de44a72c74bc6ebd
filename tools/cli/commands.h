#pragma once

#include <chrono>
#include <span>
#include <string>

#include "hark/tools/cli/args.h"
#include "hark/tools/cli/session.h"

namespace hark::cli {

// One command's arguments: its positionals (after the command's own words, their count
// already checked against the command table) and every flag of the line.
struct Invocation {
  std::span<const std::string> args;
  const CommandLine& line;
};

// The commands. Each parses its arguments first (a bad one is a usage error, before any
// connection), then opens the session, sends its requests and prints the result.
using CommandFunction = ExitCode (*)(Session&, const Invocation&);

// commands_system.cc
ExitCode run_ping(Session& session, const Invocation& invocation);
ExitCode run_stats(Session& session, const Invocation& invocation);

// commands_streams.cc
ExitCode run_stream_create(Session& session, const Invocation& invocation);
ExitCode run_stream_list(Session& session, const Invocation& invocation);
ExitCode run_stream_get(Session& session, const Invocation& invocation);
ExitCode run_stream_update(Session& session, const Invocation& invocation);
ExitCode run_stream_delete(Session& session, const Invocation& invocation);
ExitCode run_stream_purge(Session& session, const Invocation& invocation);

// commands_topics.cc
ExitCode run_topic_create(Session& session, const Invocation& invocation);
ExitCode run_topic_list(Session& session, const Invocation& invocation);
ExitCode run_topic_get(Session& session, const Invocation& invocation);
ExitCode run_topic_update(Session& session, const Invocation& invocation);
ExitCode run_topic_delete(Session& session, const Invocation& invocation);
ExitCode run_topic_purge(Session& session, const Invocation& invocation);
ExitCode run_partition_create(Session& session, const Invocation& invocation);
ExitCode run_partition_delete(Session& session, const Invocation& invocation);

// commands_groups.cc
ExitCode run_group_create(Session& session, const Invocation& invocation);
ExitCode run_group_list(Session& session, const Invocation& invocation);
ExitCode run_group_get(Session& session, const Invocation& invocation);
ExitCode run_group_delete(Session& session, const Invocation& invocation);

// commands_users.cc
ExitCode run_user_create(Session& session, const Invocation& invocation);
ExitCode run_user_list(Session& session, const Invocation& invocation);
ExitCode run_user_get(Session& session, const Invocation& invocation);
ExitCode run_user_update(Session& session, const Invocation& invocation);
ExitCode run_user_delete(Session& session, const Invocation& invocation);
ExitCode run_user_password(Session& session, const Invocation& invocation);
ExitCode run_user_permissions(Session& session, const Invocation& invocation);
ExitCode run_token_create(Session& session, const Invocation& invocation);
ExitCode run_token_list(Session& session, const Invocation& invocation);
ExitCode run_token_delete(Session& session, const Invocation& invocation);

// commands_produce.cc
ExitCode run_produce(Session& session, const Invocation& invocation);

// commands_consume.cc
ExitCode run_consume(Session& session, const Invocation& invocation);

// commands_notify.cc
ExitCode run_wait(Session& session, const Invocation& invocation);
ExitCode run_lag(Session& session, const Invocation& invocation);

// harkd's default maximum wait (polling.max_wait): a longer wait is clamped to it, so the
// CLI never asks for more in one request and asks again when it ends.
inline constexpr Duration server_wait_max = std::chrono::seconds(30);

}  // namespace hark::cli
