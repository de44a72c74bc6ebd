// wait and lag: block on hark's notification commands (docs/wire.md §11) until data is ready or
// a lag threshold is crossed, and print what fired. Each request parks on the server; nothing
// polls. Exit status: 0 fired, 1 the timeout passed with nothing (or a stop), 2 anything else.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "hark/core/base/clock.h"
#include "hark/tools/cli/command_support.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

using protocol::ConsumerKind;
using protocol::Identifier;
using protocol::LagWatch;
using protocol::PollingKind;

// An answer with nothing in it before the wait was over (the server clamps long waits to its
// maximum, a purge answers at once) is asked again, but never more often than this.
constexpr Duration early_answer_interval_min = std::chrono::milliseconds(100);

Instant now() { return SystemClock::instance().monotonic_now(); }

uint64_t micros(Duration duration) {
  return static_cast<uint64_t>(std::chrono::duration_cast<Microseconds>(duration).count());
}

// What both commands watch: a topic, maybe one partition, as a consumer or a group.
struct Target {
  Identifier stream;
  Identifier topic;
  std::optional<uint32_t> partition;
  protocol::Consumer consumer;
  bool by_consumer = false;  // --consumer or --group was given.
  std::optional<Duration> timeout;
};

Parsed<Target> parse_consumer(const CommandLine& line, Target target) {
  if (line.has("consumer") && line.has("group")) {
    return Parsed<Target>::failure("--consumer and --group exclude each other");
  }
  target.consumer.id = *Identifier::named("hark-cli");
  for (const auto& [flag, kind] :
       {std::pair{"consumer", ConsumerKind::consumer}, std::pair{"group", ConsumerKind::group}}) {
    if (const auto text = line.value(flag)) {
      const Parsed<Identifier> id = parse_identifier(*text, "--" + std::string(flag));
      if (!id.ok()) return failed_as<Target>(id);
      target.consumer = {.kind = kind, .id = *id};
      target.by_consumer = true;
    }
  }
  return target;
}

Parsed<Target> parse_target(const Invocation& invocation) {
  Target target;
  const Parsed<Identifier> stream = parse_identifier(invocation.args[0], "STREAM");
  if (!stream.ok()) return failed_as<Target>(stream);
  const Parsed<Identifier> topic = parse_identifier(invocation.args[1], "TOPIC");
  if (!topic.ok()) return failed_as<Target>(topic);
  target.stream = *stream;
  target.topic = *topic;
  if (const auto text = invocation.line.value("partition")) {
    const Parsed<uint32_t> partition = parse_u32(*text, "--partition");
    if (!partition.ok()) return failed_as<Target>(partition);
    target.partition = *partition;
  }
  if (const auto text = invocation.line.value("timeout")) {
    const Parsed<Duration> timeout = parse_duration(*text, "--timeout");
    if (!timeout.ok()) return failed_as<Target>(timeout);
    target.timeout = *timeout;
  }
  return parse_consumer(invocation.line, std::move(target));
}

ErrorSubjects subjects_of(const Invocation& invocation, const Target& target) {
  ErrorSubjects subjects{.stream = invocation.args[0], .topic = invocation.args[1]};
  if (target.partition) subjects.partition = std::to_string(*target.partition);
  if (const auto group = invocation.line.value("group")) subjects.group = std::string(*group);
  return subjects;
}

// Sends `ask(wait_us)` until it answers something (a non-empty optional) or the timeout
// passes; each request waits at most server_wait_max, so an endless wait is a series of
// parked requests. nullopt: the timeout passed, or a stop was requested.
template <typename Answer, typename Ask>
Result<std::optional<Answer>> wait_for_answer(Session& session, std::optional<Duration> timeout,
                                              Ask ask) {
  const Instant deadline = timeout ? saturating_add(now(), *timeout) : Instant::max();
  for (bool first = true;; first = false) {
    const Duration left = deadline - now();
    if (session.stop().requested() || (!first && left <= Duration::zero())) {
      return std::optional<Answer>();
    }
    const Instant asked = now();
    Result<std::optional<Answer>> answer =
        ask(micros(std::clamp(left, Duration::zero(), server_wait_max)));
    if (!answer.ok() && session.stop().requested()) return std::optional<Answer>();
    if (!answer.ok() || answer->has_value()) return answer;
    const Duration pause = std::min(early_answer_interval_min - (now() - asked), deadline - now());
    if (pause > Duration::zero() && !session.stop().sleep_for(pause)) {
      return std::optional<Answer>();
    }
  }
}

// --- wait ---------------------------------------------------------------------------------

struct WaitOptions {
  Target target;
  std::optional<uint64_t> offset;  // --offset; neither it nor a consumer: from the end.
  uint32_t min_messages = 1;
};

Parsed<WaitOptions> parse_wait_options(const Invocation& invocation) {
  const Parsed<Target> target = parse_target(invocation);
  if (!target.ok()) return failed_as<WaitOptions>(target);
  WaitOptions options{.target = *target};
  if (const auto text = invocation.line.value("offset")) {
    if (options.target.by_consumer) {
      return Parsed<WaitOptions>::failure("--offset, --consumer and --group exclude each other");
    }
    const Parsed<uint64_t> offset = parse_u64(*text, "--offset");
    if (!offset.ok()) return failed_as<WaitOptions>(offset);
    options.offset = *offset;
  }
  if (const auto text = invocation.line.value("min")) {
    const Parsed<uint32_t> min = parse_u32(*text, "--min");
    if (!min.ok()) return failed_as<WaitOptions>(min);
    if (*min == 0) return Parsed<WaitOptions>::failure("--min: at least 1");
    options.min_messages = *min;
  }
  return options;
}

// The partition's next offset now (get_topic): where "new messages" start.
Result<uint64_t> partition_end(Session& session, const Target& target, uint32_t partition) {
  HARK_TRY_ASSIGN(const auto topic, session.client().get_topic(
                                        {.stream_id = target.stream, .topic_id = target.topic}));
  if (!topic) return topic_missing(target.topic);
  for (const protocol::PartitionResponse& entry : topic->partitions) {
    if (entry.id != partition) continue;
    // current_offset is the last offset, and 0 for an empty partition too (docs/wire.md §7).
    return entry.messages_count == 0 && entry.current_offset == 0 ? 0 : entry.current_offset + 1;
  }
  return Error::partition_not_found;
}

// The request: from --offset, past the consumer's stored offset, or from the partition's end
// (--partition, or partition 0, a plain consumer's default).
Result<protocol::WaitForMessagesRequest> wait_request(Session& session, WaitOptions options) {
  protocol::WaitForMessagesRequest request{.consumer = options.target.consumer,
                                           .stream_id = options.target.stream,
                                           .topic_id = options.target.topic,
                                           .partition_id = options.target.partition,
                                           .strategy = {.kind = PollingKind::next},
                                           .min_messages = options.min_messages};
  if (options.target.by_consumer) return request;
  if (!options.offset) {
    request.partition_id = options.target.partition.value_or(0);
    HARK_TRY_ASSIGN(options.offset, partition_end(session, options.target, *request.partition_id));
  }
  request.strategy = {.kind = PollingKind::offset, .value = *options.offset};
  return request;
}

std::string ready_lines(const protocol::WaitForMessagesResponse& ready) {
  std::string lines;
  for (const protocol::ReadyPartition& entry : ready.partitions) {
    lines += "partition " + std::to_string(entry.partition_id) + ": offsets " +
             std::to_string(entry.first_offset) + ".." +
             std::to_string(entry.next_offset == 0 ? 0 : entry.next_offset - 1) + " ready\n";
  }
  return lines;
}

// --- lag ----------------------------------------------------------------------------------

struct LagOptions {
  Target target;
  LagWatch watch = LagWatch::above;
  uint64_t threshold = 0;
  bool follow = false;
};

Parsed<LagOptions> parse_threshold(const CommandLine& line, LagOptions options) {
  if (line.has("above") == line.has("below")) {
    return Parsed<LagOptions>::failure("give one of --above N and --below N");
  }
  const bool above = line.has("above");
  const Parsed<uint64_t> threshold =
      parse_u64(*line.value(above ? "above" : "below"), above ? "--above" : "--below");
  if (!threshold.ok()) return failed_as<LagOptions>(threshold);
  options.watch = above ? LagWatch::above : LagWatch::below;
  options.threshold = *threshold;
  if (options.follow && above && *threshold == 0) {
    return Parsed<LagOptions>::failure("--above 0 never flips back (lag is never below 0)");
  }
  if (options.follow && !above && *threshold == UINT64_MAX) {
    return Parsed<LagOptions>::failure("--below 18446744073709551615 never flips back");
  }
  return options;
}

Parsed<LagOptions> parse_lag_options(const Invocation& invocation) {
  const Parsed<Target> target = parse_target(invocation);
  if (!target.ok()) return failed_as<LagOptions>(target);
  if (!target->by_consumer)
    return Parsed<LagOptions>::failure("give --consumer ID or --group NAME");
  return parse_threshold(invocation.line,
                         {.target = *target, .follow = invocation.line.has("follow")});
}

// "lag 12: above 10" when the user's condition holds, "lag 9: no longer above 10" when it
// flipped back.
std::string lag_headline(const LagOptions& options, uint64_t total, bool holds) {
  const std::string side = options.watch == LagWatch::above ? "above " : "below ";
  return "lag " + std::to_string(total) + ": " + (holds ? "" : "no longer ") + side +
         std::to_string(options.threshold) + "\n";
}

std::string lag_details(const protocol::WaitForLagResponse& lag) {
  std::string lines;
  for (const protocol::PartitionLag& entry : lag.partitions) {
    lines += "  partition " + std::to_string(entry.partition_id) + ": lag " +
             std::to_string(entry.lag) + " (next offset " + std::to_string(entry.next_offset) +
             (entry.stored_offset ? ", stored offset " + std::to_string(*entry.stored_offset)
                                  : std::string(", no stored offset")) +
             ")\n";
  }
  return lines;
}

// The watch of the user's condition (holds) or of its negation: lag ≥ N flips back at
// lag ≤ N - 1, lag ≤ N at lag ≥ N + 1.
protocol::WaitForLagRequest lag_request(const LagOptions& options, bool holds) {
  protocol::WaitForLagRequest request{.consumer = options.target.consumer,
                                      .stream_id = options.target.stream,
                                      .topic_id = options.target.topic,
                                      .partition_id = options.target.partition,
                                      .watch = options.watch,
                                      .threshold = options.threshold};
  if (holds) return request;
  const bool above = options.watch == LagWatch::above;
  request.watch = above ? LagWatch::below : LagWatch::above;
  request.threshold = above ? options.threshold - 1 : options.threshold + 1;
  return request;
}

ExitCode run_lag_watch(Session& session, const LagOptions& options, const ErrorSubjects& subjects) {
  for (bool holds = true;; holds = !holds) {
    protocol::WaitForLagRequest request = lag_request(options, holds);
    const Result<std::optional<protocol::WaitForLagResponse>> fired =
        wait_for_answer<protocol::WaitForLagResponse>(
            session, options.target.timeout, [&](uint64_t wait_us) {
              request.wait_timeout_us = wait_us;
              return session.client().wait_for_lag(request);
            });
    if (!fired.ok()) {
      session.fail(fired.error(), subjects);
      return ExitCode::wait_failed;
    }
    if (!fired->has_value()) {
      return options.follow && session.stop().requested() ? ExitCode::ok : ExitCode::timed_out;
    }
    session.print(lag_headline(options, (*fired)->total_lag, holds) +
                  (options.follow ? std::string() : lag_details(**fired)));
    if (!options.follow) return ExitCode::ok;
  }
}

}  // namespace

ExitCode run_wait(Session& session, const Invocation& invocation) {
  const Parsed<WaitOptions> options = parse_wait_options(invocation);
  if (!options.ok()) return session.usage_error(options.reason());
  const ErrorSubjects subjects = subjects_of(invocation, options->target);
  if (!session.open()) return ExitCode::wait_failed;
  Result<protocol::WaitForMessagesRequest> request = wait_request(session, *options);
  if (!request.ok()) {
    session.fail(request.error(), subjects);
    return ExitCode::wait_failed;
  }
  const Result<std::optional<protocol::WaitForMessagesResponse>> ready =
      wait_for_answer<protocol::WaitForMessagesResponse>(
          session, options->target.timeout,
          [&](uint64_t wait_us) -> Result<std::optional<protocol::WaitForMessagesResponse>> {
            request->wait_timeout_us = wait_us;
            HARK_TRY_ASSIGN(auto answer, session.client().wait_for_messages(*request));
            if (answer.partitions.empty())
              return std::optional<protocol::WaitForMessagesResponse>();
            return std::optional(std::move(answer));
          });
  if (!ready.ok()) {
    session.fail(ready.error(), subjects);
    return ExitCode::wait_failed;
  }
  if (!ready->has_value()) return ExitCode::timed_out;
  session.print(ready_lines(**ready));
  return ExitCode::ok;
}

ExitCode run_lag(Session& session, const Invocation& invocation) {
  const Parsed<LagOptions> options = parse_lag_options(invocation);
  if (!options.ok()) return session.usage_error(options.reason());
  const ErrorSubjects subjects = subjects_of(invocation, options->target);
  if (!session.open()) return ExitCode::wait_failed;
  return run_lag_watch(session, *options, subjects);
}

}  // namespace hark::cli
