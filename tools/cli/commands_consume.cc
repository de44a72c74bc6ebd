// consume STREAM TOPIC: long polls (wait_timeout_us) and prints messages as they arrive.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "hark/core/base/clock.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

using protocol::Identifier;
using protocol::PollingKind;
using protocol::PollingStrategy;

constexpr uint32_t poll_count_max = 100;
constexpr Duration follow_wait_default = server_wait_max;
// Empty answers come at most this often: a server without the wait extension (Iggy 0.8.0)
// answers at once, and a purge answers parked polls at once.
constexpr Duration empty_poll_interval_min = std::chrono::milliseconds(100);

struct ConsumeOptions {
  Identifier stream;
  Identifier topic;
  std::optional<uint32_t> partition;
  protocol::Consumer consumer;
  PollingStrategy from{.kind = PollingKind::next};
  std::optional<uint64_t> count_max;
  Duration wait = Duration::zero();
  bool follow = false;
  bool auto_commit = true;
  MessageFormat format = MessageFormat::text;

  bool group() const { return consumer.kind == protocol::ConsumerKind::group; }
};

// --consumer or --group, the partition and the start.
Parsed<ConsumeOptions> parse_position(const CommandLine& line, ConsumeOptions options) {
  if (line.has("consumer") && line.has("group")) {
    return Parsed<ConsumeOptions>::failure("--consumer and --group exclude each other");
  }
  options.consumer.id = *Identifier::named("hark-cli");
  for (const auto& [flag, kind] : {std::pair{"consumer", protocol::ConsumerKind::consumer},
                                   std::pair{"group", protocol::ConsumerKind::group}}) {
    if (const auto text = line.value(flag)) {
      const Parsed<Identifier> id = parse_identifier(*text, "--" + std::string(flag));
      if (!id.ok()) return failed_as<ConsumeOptions>(id);
      options.consumer = {.kind = kind, .id = *id};
    }
  }
  if (const auto text = line.value("partition")) {
    const Parsed<uint32_t> partition = parse_u32(*text, "--partition");
    if (!partition.ok()) return failed_as<ConsumeOptions>(partition);
    options.partition = *partition;
  }
  if (const auto text = line.value("from")) {
    const Parsed<PollingStrategy> from = parse_strategy(*text);
    if (!from.ok()) return failed_as<ConsumeOptions>(from);
    options.from = *from;
  }
  return options;
}

Parsed<ConsumeOptions> parse_consume_options(const Invocation& invocation) {
  ConsumeOptions options;
  const Parsed<Identifier> stream = parse_identifier(invocation.args[0], "STREAM");
  if (!stream.ok()) return failed_as<ConsumeOptions>(stream);
  const Parsed<Identifier> topic = parse_identifier(invocation.args[1], "TOPIC");
  if (!topic.ok()) return failed_as<ConsumeOptions>(topic);
  options.stream = *stream;
  options.topic = *topic;
  options.follow = invocation.line.has("follow");
  options.auto_commit = !invocation.line.has("no-auto-commit");
  options.wait = options.follow ? follow_wait_default : Duration::zero();
  if (const auto text = invocation.line.value("wait")) {
    const Parsed<Duration> wait = parse_duration(*text, "--wait");
    if (!wait.ok()) return failed_as<ConsumeOptions>(wait);
    options.wait = *wait;
  }
  if (const auto text = invocation.line.value("count")) {
    const Parsed<uint64_t> count = parse_u64(*text, "--count");
    if (!count.ok()) return failed_as<ConsumeOptions>(count);
    if (*count == 0) return Parsed<ConsumeOptions>::failure("--count: at least 1");
    options.count_max = *count;
  }
  if (const auto text = invocation.line.value("format")) {
    const Parsed<MessageFormat> format = parse_message_format(*text);
    if (!format.ok()) return failed_as<ConsumeOptions>(format);
    options.format = *format;
  }
  return parse_position(invocation.line, std::move(options));
}

// One consume run: polls, prints, advances, until the count, the idle wait, a stop or an
// error ends it.
//
// How it advances. Reading one partition (a plain consumer, or --partition), the first poll
// uses --from and every later one the offset strategy at the last offset + 1, on the
// partition that answered; with auto-commit the server also stores each batch's last offset.
// A group member without --partition may be answered from any assigned partition, so offsets
// cannot be carried from one poll to the next: it polls with "next", and without auto-commit
// stores each batch's offset itself, after printing it. The server serves such a member round
// robin, and a poll that does not wait reads one partition only (Iggy 0.8.0, and harkd with
// wait 0), so one empty answer says nothing of the others: it is done only after a whole round
// of empty answers (the topic's partition count bounds the member's share).
class ConsumeLoop {
 public:
  ConsumeLoop(Session& session, const ConsumeOptions& options, ErrorSubjects subjects)
      : session_(session),
        options_(options),
        subjects_(std::move(subjects)),
        partition_(options.partition),
        strategy_(options.from),
        one_partition_(!options.group() || options.partition.has_value()) {}

  ExitCode run();

 private:
  protocol::PollMessagesRequest request(Duration wait) const;
  // Prints a non-empty batch and moves past it.
  Status take(const client::PolledMessages& polled);
  // The wait of the next poll; nullopt when consume is over for want of messages.
  std::optional<Duration> next_wait(Instant idle_deadline) const;
  // A group member without --partition: how many answers make a round (see above). Asked at
  // its first empty answer, so a consume that finds messages sends nothing more.
  Status measure_round();

  Session& session_;
  const ConsumeOptions& options_;
  const ErrorSubjects subjects_;
  std::optional<uint32_t> partition_;
  PollingStrategy strategy_;
  const bool one_partition_;
  uint64_t printed_ = 0;
  uint32_t round_ = 1;         // Empty answers in a row that mean nothing is left.
  uint32_t empty_streak_ = 0;  // Empty answers since the last messages.
  bool round_measured_ = false;
};

protocol::PollMessagesRequest ConsumeLoop::request(Duration wait) const {
  uint32_t count = poll_count_max;
  if (options_.count_max) {
    count = static_cast<uint32_t>(std::min<uint64_t>(count, *options_.count_max - printed_));
  }
  return {.consumer = options_.consumer,
          .stream_id = options_.stream,
          .topic_id = options_.topic,
          .partition_id = partition_,
          .strategy = strategy_,
          .count = count,
          .auto_commit = options_.auto_commit,
          .wait_timeout_us =
              static_cast<uint64_t>(std::chrono::duration_cast<Microseconds>(wait).count())};
}

Status ConsumeLoop::take(const client::PolledMessages& polled) {
  std::string lines;
  uint64_t last_offset = 0;
  for (const protocol::MessageView message : polled.messages()) {
    lines += message_line(message, polled.header().partition_id, options_.format) + "\n";
    last_offset = message.offset();
  }
  session_.print(lines);
  printed_ += polled.header().messages_count;
  if (one_partition_) {
    partition_ = polled.header().partition_id;
    strategy_ = {.kind = PollingKind::offset, .value = last_offset + 1};
    return ok_status();
  }
  strategy_ = {.kind = PollingKind::next};
  if (options_.auto_commit) return ok_status();
  return session_.client().store_consumer_offset({.consumer = options_.consumer,
                                                  .stream_id = options_.stream,
                                                  .topic_id = options_.topic,
                                                  .partition_id = polled.header().partition_id,
                                                  .offset = last_offset});
}

std::optional<Duration> ConsumeLoop::next_wait(Instant idle_deadline) const {
  if (options_.follow) return options_.wait;
  const Duration left = idle_deadline - SystemClock::instance().monotonic_now();
  if (left > Duration::zero()) return left;
  if (empty_streak_ < round_) return Duration::zero();  // The rest of the round, at once.
  return std::nullopt;
}

Status ConsumeLoop::measure_round() {
  if (one_partition_ || round_measured_) return ok_status();
  round_measured_ = true;
  const auto topic =
      session_.client().get_topic({.stream_id = options_.stream, .topic_id = options_.topic});
  if (!topic.ok()) return topic.error();
  if (topic->has_value()) round_ = std::max<uint32_t>(1, (*topic)->topic.partitions_count);
  return ok_status();
}

ExitCode ConsumeLoop::run() {
  const Clock& clock = SystemClock::instance();
  // Without --follow, consume ends once a whole wait passes with nothing new.
  Instant idle_deadline = saturating_add(clock.monotonic_now(), options_.wait);
  std::optional<Duration> wait = options_.wait;
  while (wait && !session_.stop().requested()) {
    const Instant asked = clock.monotonic_now();
    const Result<client::PolledMessages> polled = session_.client().poll_messages(request(*wait));
    if (!polled.ok() && session_.stop().requested()) break;
    if (!polled.ok()) return session_.fail(polled.error(), subjects_);
    if (polled->header().messages_count > 0) {
      empty_streak_ = 0;
      if (const Status taken = take(*polled); !taken.ok()) {
        return session_.fail(taken.error(), subjects_);
      }
      if (options_.count_max && printed_ >= *options_.count_max) break;
      idle_deadline = saturating_add(clock.monotonic_now(), options_.wait);
      wait = options_.wait;  // More may be there already: poll again at once.
      continue;
    }
    empty_streak_++;
    if (empty_streak_ == 1) {
      if (const Status measured = measure_round(); !measured.ok()) {
        return session_.fail(measured.error(), subjects_);
      }
    }
    // Empty before the wait was over (the server clamps long waits, a purge answers at
    // once): poll again for what is left, but never more often than empty_poll_interval_min.
    Duration pause = empty_poll_interval_min - (clock.monotonic_now() - asked);
    if (!options_.follow) pause = std::min(pause, idle_deadline - clock.monotonic_now());
    if (pause > Duration::zero() && !session_.stop().sleep_for(pause)) break;
    wait = next_wait(idle_deadline);
  }
  return ExitCode::ok;
}

}  // namespace

ExitCode run_consume(Session& session, const Invocation& invocation) {
  const Parsed<ConsumeOptions> options = parse_consume_options(invocation);
  if (!options.ok()) return session.usage_error(options.reason());
  ErrorSubjects subjects{.stream = invocation.args[0], .topic = invocation.args[1]};
  if (options->partition) subjects.partition = std::to_string(*options->partition);
  if (options->group()) subjects.group = std::string(*invocation.line.value("group"));
  if (!session.open()) return ExitCode::failed;
  const protocol::JoinConsumerGroupRequest membership{
      .stream_id = options->stream, .topic_id = options->topic, .group_id = options->consumer.id};
  if (options->group()) {
    const Status joined = session.client().join_consumer_group(membership);
    if (!joined.ok()) return session.fail(joined.error(), subjects);
  }
  const ExitCode exit = ConsumeLoop(session, *options, subjects).run();
  if (options->group() && session.client().connected()) {
    // Polite, not required: the server drops a member whose connection closes.
    (void)session.client().leave_consumer_group({.stream_id = membership.stream_id,
                                                 .topic_id = membership.topic_id,
                                                 .group_id = membership.group_id});
  }
  return exit;
}

}  // namespace hark::cli
