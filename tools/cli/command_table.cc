#include "hark/tools/cli/command_table.h"

#include <array>

#include "hark/tools/cli/output.h"

namespace hark::cli {
namespace {

constexpr std::string_view consume_details =
    R"(Prints messages as they arrive, one per line. Polls with wait_timeout_us, so an idle
topic costs one parked poll, not a busy loop.
  --partition N      the partition to read (default: the server's choice, partition 0 for a
                     plain consumer, the assigned ones for a group member)
  --consumer ID      consumer id or name whose offsets are used (default: hark-cli)
  --group GROUP      read as a member of this consumer group (joined first, by id or name)
  --from WHERE       next (default: after the stored offset), first, last, offset:N,
                     timestamp:MICROSECONDS (since the Unix epoch)
  --count N          stop after N messages
  --wait DURATION    how long one poll waits for data (default 0 = answer at once; 30s with
                     --follow). Without --follow, consume ends when a wait passes with
                     nothing new. The server clamps long waits to its maximum; an empty
                     answer before the wait is over just polls again
  --follow           keep reading until SIGINT or SIGTERM (or --count)
  --no-auto-commit   do not store offsets: read on from the last offset + 1 with the offset
                     strategy (a group member without --partition stores each batch's offset
                     after printing it instead, so nothing is read twice)
  --format F         text (payload, escaped to one line; default), hex (payload), json (all
                     fields))";

constexpr std::string_view wait_details =
    R"(Blocks until at least N messages are readable on a partition, then prints one line per
ready partition ("partition P: offsets A..B ready") without reading them. One parked request
at a time (re-issued before the server's maximum wait), never a polling loop.
  --partition P    the partition (default: partition 0 from the end or --offset; with
                   --consumer or --group, every partition the server gives that consumer)
  --offset O       count messages from offset O
  --consumer ID    count messages past this consumer's stored offset
  --group NAME     count messages past this group's stored offsets (does not join it)
                   (default, none of the three: past the partition's end when wait starts)
  --min N          messages needed (default 1)
  --timeout DUR    give up after DUR (default: wait forever)
exit status: 0 ready, 1 the timeout passed with nothing, 2 any other failure.)";

constexpr std::string_view lag_details =
    R"(Blocks until the lag of a consumer or group (summed over the topic, or on one partition)
crosses a threshold, then prints the total and each partition's lag. Lag of a partition =
next offset - (stored offset + 1), or next offset - first offset when nothing is stored.
  --consumer ID    whose lag (by id or name), or
  --group NAME     a consumer group's lag (does not join it)
  --partition P    only this partition
  --above N        fire when the lag is N or more (falling behind), or
  --below N        fire when the lag is N or less (caught up)
  --timeout DUR    give up after DUR (default: wait forever)
  --follow         print a line each time the condition flips, until SIGINT or SIGTERM
exit status: 0 fired (or --follow stopped), 1 the timeout passed, 2 any other failure.)";

constexpr std::string_view produce_details =
    R"(Sends each MESSAGE argument, or each line of stdin when there is none (blank lines are
skipped), then prints how many were sent.
  --partition N   send to partition N
  --key KEY       partition by key (XXH32(KEY) % partitions on the server)
                  (default: balanced, the server's round robin)
  --rate N/s      at most N messages per second (also N/m, N/h)
  --batch N       messages per request (default 100); stdin lines are sent as soon as no
                  more are waiting, so interactive input is not held back)";

constexpr std::string_view topic_create_details =
    R"(  --partitions N            partitions to create (default 1)
  --message-expiry DURATION  how long messages are kept: 90s, 30m, 24h, or never
                             (default: the server's)
  --max-size BYTES           size limit: 1048576, 512MiB, 10GB, or unlimited
                             (default: the server's))";

constexpr std::string_view topic_update_details =
    R"(Changes the name (if NAME is given), the expiry and the size limit; what is not given
keeps its current value.
  --message-expiry DURATION  90s, 30m, 24h, or never
  --max-size BYTES           1048576, 512MiB, 10GB, or unlimited)";

constexpr std::string_view permissions_details =
    R"(PERMISSIONS is a comma-separated list of global permissions: manage_servers,
read_servers, manage_users, read_users, manage_streams, read_streams, manage_topics,
read_topics, poll_messages, send_messages; or all; or none.)";

constexpr std::array<CommandSpec, 34> commands = {{
    {"ping", "[--count N]", "measure the round trip to the server, in microseconds", "count",
     "  --count N   pings to send (default 1); a summary follows when N > 1\nNeeds no login.", 0, 0,
     run_ping},
    {"stats", "", "print the server's statistics", "", "", 0, 0, run_stats},
    {"stream create", "NAME", "create a stream", "", "", 1, 1, run_stream_create},
    {"stream list", "", "list the streams", "", "", 0, 0, run_stream_list},
    {"stream get", "STREAM", "show a stream and its topics", "", "", 1, 1, run_stream_get},
    {"stream update", "STREAM NAME", "rename a stream", "", "", 2, 2, run_stream_update},
    {"stream delete", "STREAM", "delete a stream and everything in it", "", "", 1, 1,
     run_stream_delete},
    {"stream purge", "STREAM", "delete every message of a stream, keep its topics", "", "", 1, 1,
     run_stream_purge},
    {"topic create", "STREAM NAME [--partitions N] [--message-expiry DURATION] [--max-size BYTES]",
     "create a topic", "partitions message-expiry max-size", topic_create_details, 2, 2,
     run_topic_create},
    {"topic list", "STREAM", "list a stream's topics", "", "", 1, 1, run_topic_list},
    {"topic get", "STREAM TOPIC", "show a topic and its partitions", "", "", 2, 2, run_topic_get},
    {"topic update", "STREAM TOPIC [NAME] [--message-expiry DURATION] [--max-size BYTES]",
     "change a topic's name, expiry or size limit", "message-expiry max-size", topic_update_details,
     2, 3, run_topic_update},
    {"topic delete", "STREAM TOPIC", "delete a topic", "", "", 2, 2, run_topic_delete},
    {"topic purge", "STREAM TOPIC", "delete every message of a topic", "", "", 2, 2,
     run_topic_purge},
    {"partition create", "STREAM TOPIC COUNT", "add COUNT partitions to a topic", "", "", 3, 3,
     run_partition_create},
    {"partition delete", "STREAM TOPIC COUNT", "delete a topic's last COUNT partitions", "", "", 3,
     3, run_partition_delete},
    {"group create", "STREAM TOPIC NAME", "create a consumer group", "", "", 3, 3,
     run_group_create},
    {"group list", "STREAM TOPIC", "list a topic's consumer groups", "", "", 2, 2, run_group_list},
    {"group get", "STREAM TOPIC GROUP", "show a consumer group and its members", "", "", 3, 3,
     run_group_get},
    {"group delete", "STREAM TOPIC GROUP", "delete a consumer group", "", "", 3, 3,
     run_group_delete},
    {"user create", "USERNAME PASSWORD [--status active|inactive] [--permissions PERMISSIONS]",
     "create a user", "status permissions", permissions_details, 2, 2, run_user_create},
    {"user list", "", "list the users", "", "", 0, 0, run_user_list},
    {"user get", "USER", "show a user and their permissions", "", "", 1, 1, run_user_get},
    {"user update", "USER [--name NEW_NAME] [--status active|inactive]",
     "rename, activate or deactivate a user", "name status", "", 1, 1, run_user_update},
    {"user delete", "USER", "delete a user", "", "", 1, 1, run_user_delete},
    {"user password", "USER CURRENT NEW", "change a user's password", "", "", 3, 3,
     run_user_password},
    {"user permissions", "USER PERMISSIONS", "replace a user's global permissions", "",
     permissions_details, 2, 2, run_user_permissions},
    {"token create", "NAME [--expiry DURATION|never]",
     "create a personal access token (printed once)", "expiry",
     "  --expiry DURATION   lifetime such as 30m, 24h (default: never)", 1, 1, run_token_create},
    {"token list", "", "list your personal access tokens", "", "", 0, 0, run_token_list},
    {"token delete", "NAME", "delete a personal access token", "", "", 1, 1, run_token_delete},
    {"produce", "STREAM TOPIC [MESSAGE...] [--partition N | --key KEY] [--rate N/s] [--batch N]",
     "send messages (arguments, or stdin lines)", "partition key rate batch", produce_details, 2,
     UINT32_MAX, run_produce},
    {"consume",
     "STREAM TOPIC [--partition N] [--consumer ID] [--group GROUP] [--from WHERE] [--count N] "
     "[--wait DURATION] [--follow] [--no-auto-commit] [--format text|hex|json]",
     "print messages as they arrive (long polling)",
     "partition consumer group from count wait follow no-auto-commit format", consume_details, 2, 2,
     run_consume},
    {"wait",
     "STREAM TOPIC [--partition P] [--offset O | --consumer ID | --group NAME] [--min N] "
     "[--timeout DUR]",
     "wait until messages are ready, without reading them",
     "partition offset consumer group min timeout", wait_details, 2, 2, run_wait},
    {"lag",
     "STREAM TOPIC (--consumer ID | --group NAME) [--partition P] (--above N | --below N) "
     "[--timeout DUR] [--follow]",
     "wait until a consumer's lag crosses a threshold",
     "consumer group partition above below timeout follow", lag_details, 2, 2, run_lag},
}};

constexpr std::string_view global_help = R"(global flags (flag > environment > default):
  --address HOST:PORT  server address; env HARK_ADDRESS, IGGY_TCP_ADDRESS (127.0.0.1:8090)
  --username NAME      env HARK_USERNAME, IGGY_USERNAME (iggy)
  --password PASSWORD  env HARK_PASSWORD, IGGY_PASSWORD (iggy)
  --token TOKEN        log in with a personal access token instead; env HARK_TOKEN (an
                       explicit --username or --password beats HARK_TOKEN)
  --tls                connect with TLS, verifying the server's certificate and name
  --tls-ca FILE        PEM CA certificates to trust (implies --tls; default: the system's);
                       env HARK_TLS_CA
  --tls-server-name N  the name the certificate must carry (implies --tls; default: the
                       address's host)
  --verbose            also print the client library's warnings (why a connect failed)
  -h, --help           help for hark, a command family or a command
)";

constexpr std::string_view notes_help =
    R"(STREAM, TOPIC, GROUP and USER are an id when they are digits (ids start at 0), else a name.
Durations take a unit: 500us, 250ms, 5s, 2m, 1h.
exit status: 0 done, 1 the server refused or the connection failed, 2 bad arguments;
wait and lag: 0 fired, 1 the timeout passed, 2 any other failure.
)";

bool word_listed(std::string_view names, std::string_view name) {
  while (!names.empty()) {
    const size_t space = names.find(' ');
    if (names.substr(0, space) == name) return true;
    if (space == std::string_view::npos) break;
    names.remove_prefix(space + 1);
  }
  return false;
}

std::string command_list(std::string_view family) {
  Table table({});
  for (const CommandSpec& command : commands) {
    if (!family.empty() && !command.name.starts_with(std::string(family) + " ")) continue;
    std::string name = std::string(command.name);
    const size_t flag = command.arguments.find("[--");
    const std::string_view plain = command.arguments.substr(0, flag);
    table.add({"  " + name + (plain.empty() ? "" : " " + std::string(plain)),
               std::string(command.summary)});
  }
  std::string text = table.text();
  return text.substr(text.find('\n') + 1);  // Without the empty header row.
}

}  // namespace

std::span<const CommandSpec> command_table() { return commands; }

size_t command_words(const CommandSpec& command) {
  return command.name.find(' ') == std::string_view::npos ? 1 : 2;
}

const CommandSpec* find_command(std::span<const std::string> positionals) {
  if (positionals.empty()) return nullptr;
  const std::string two =
      positionals.size() >= 2 ? positionals[0] + " " + positionals[1] : std::string();
  for (const CommandSpec& command : commands) {
    if (command.name == two) return &command;
  }
  for (const CommandSpec& command : commands) {
    if (command.name == positionals[0]) return &command;
  }
  return nullptr;
}

bool is_family(std::string_view word) {
  for (const CommandSpec& command : commands) {
    if (command_words(command) == 2 && command.name.substr(0, command.name.find(' ')) == word) {
      return true;
    }
  }
  return false;
}

bool accepts_flag(const CommandSpec& command, std::string_view flag) {
  return word_listed(global_flags, flag) || word_listed(command.flags, flag);
}

std::string usage_line(const CommandSpec& command) {
  // Wrapped before 100 columns at a flag, continued under the arguments.
  constexpr size_t width = 92;
  std::string line = "hark " + std::string(command.name);
  const std::string indent(line.size() + 8, ' ');  // 8 = "usage: " and a space.
  size_t line_start = 0;
  std::string_view rest = command.arguments;
  while (!rest.empty()) {
    size_t next = rest.find(" [", 1);
    const std::string_view word = rest.substr(0, next);
    if (line.size() - line_start + word.size() + 1 > width) {
      line += "\n" + indent.substr(0, indent.size() - 1);
      line_start = line.size() - indent.size();
    }
    line += " " + std::string(word);
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
  }
  return line;
}

std::string missing_arguments(const CommandSpec& command, size_t given) {
  std::string_view rest = command.arguments;
  std::string missing;
  for (size_t index = 0; !rest.empty(); ++index) {
    const size_t space = rest.find(' ');
    const std::string_view word = rest.substr(0, space);
    if (word.starts_with("[") || word.starts_with("(")) break;  // Flags, optional or not.
    if (index >= given) missing += (missing.empty() ? "" : " ") + std::string(word);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  }
  return "missing " + missing;
}

std::string tool_help() {
  return "hark: a command-line client for harkd and other Iggy 0.8.0 servers (classic TCP)\n\n"
         "usage: hark [global flags] COMMAND [ARGUMENTS] [flags]\n\ncommands:\n" +
         command_list("") + "\n" + std::string(global_help) + "\n" + std::string(notes_help) +
         "\nRun 'hark COMMAND --help' for a command's flags; docs/cli.md has examples.\n";
}

std::string family_help(std::string_view family) {
  return "usage: hark " + std::string(family) + " COMMAND ...\n\ncommands:\n" +
         command_list(family) + "\nRun 'hark " + std::string(family) +
         " COMMAND --help' for one of them.\n";
}

std::string command_help(const CommandSpec& command) {
  std::string text = "usage: " + usage_line(command) + "\n\n" + std::string(command.summary) + "\n";
  if (!command.details.empty()) text += "\n" + std::string(command.details) + "\n";
  text += "\n" + std::string(global_help);
  return text;
}

}  // namespace hark::cli
