// produce STREAM TOPIC [MESSAGE...]: arguments or stdin lines, in batches, optionally paced.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/protocol/reader.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/line_reader.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

using protocol::Identifier;

constexpr uint32_t batch_default = 100;

struct ProduceOptions {
  protocol::SendTarget target;
  std::optional<Rate> rate;
  uint32_t batch_max = batch_default;
};

Parsed<protocol::Partitioning> parse_partitioning(const CommandLine& line) {
  if (line.has("partition") && line.has("key")) {
    return Parsed<protocol::Partitioning>::failure("--partition and --key exclude each other");
  }
  if (const auto text = line.value("partition")) {
    const Parsed<uint32_t> partition = parse_u32(*text, "--partition");
    if (!partition.ok()) return failed_as<protocol::Partitioning>(partition);
    return protocol::Partitioning::partition(*partition);
  }
  if (const auto key = line.value("key")) {
    const Result<protocol::Partitioning> keyed =
        protocol::Partitioning::messages_key(protocol::as_bytes(*key));
    if (!keyed.ok()) return Parsed<protocol::Partitioning>::failure("--key: at most 255 bytes");
    return *keyed;
  }
  return protocol::Partitioning::balanced();
}

Parsed<ProduceOptions> parse_produce_options(const Invocation& invocation) {
  ProduceOptions options;
  const Parsed<Identifier> stream = parse_identifier(invocation.args[0], "STREAM");
  if (!stream.ok()) return failed_as<ProduceOptions>(stream);
  const Parsed<Identifier> topic = parse_identifier(invocation.args[1], "TOPIC");
  if (!topic.ok()) return failed_as<ProduceOptions>(topic);
  const Parsed<protocol::Partitioning> partitioning = parse_partitioning(invocation.line);
  if (!partitioning.ok()) return failed_as<ProduceOptions>(partitioning);
  options.target = {.stream_id = *stream, .topic_id = *topic, .partitioning = *partitioning};
  if (const auto text = invocation.line.value("rate")) {
    const Parsed<Rate> rate = parse_rate(*text);
    if (!rate.ok()) return failed_as<ProduceOptions>(rate);
    options.rate = *rate;
    options.batch_max = 1;  // Paced one by one unless --batch asks for bursts.
  }
  if (const auto text = invocation.line.value("batch")) {
    const Parsed<uint32_t> batch = parse_u32(*text, "--batch");
    if (!batch.ok()) return failed_as<ProduceOptions>(batch);
    if (*batch == 0) return Parsed<ProduceOptions>::failure("--batch: at least 1");
    options.batch_max = *batch;
  }
  for (size_t i = 2; i < invocation.args.size(); ++i) {
    if (invocation.args[i].empty()) {
      return Parsed<ProduceOptions>::failure("MESSAGE " + std::to_string(i - 1) + " is empty");
    }
  }
  return options;
}

// Where the messages come from: the arguments, or stdin lines.
class MessageSource {
 public:
  MessageSource(std::span<const std::string> arguments, int fd, const Stop& stop)
      : arguments_(arguments), reader_(fd, stop), from_arguments_(!arguments.empty()) {}

  // The next 1..lines_max messages (blank stdin lines are skipped: LineReader); false when
  // there are no more (or a stop came while waiting for input).
  bool next(std::vector<std::string>& batch, size_t lines_max) {
    batch.clear();
    if (from_arguments_) {
      while (batch.size() < lines_max && next_argument_ < arguments_.size()) {
        batch.push_back(arguments_[next_argument_++]);
      }
      return !batch.empty();
    }
    return reader_.next_batch(batch, lines_max);
  }

 private:
  std::span<const std::string> arguments_;
  size_t next_argument_ = 0;
  LineReader reader_;
  bool from_arguments_;
};

// Sleeps until the last message of a batch may go, given `sent` messages before it. False if
// a stop came first.
bool pace(const Session& session, const Rate& rate, Instant start, uint64_t sent,
          size_t batch_size) {
  const uint64_t last_index = sent + batch_size - 1;  // The first message goes at `start`.
  // In floating point: per × index overflows int64 nanoseconds within hours of pacing.
  const auto due = Duration(static_cast<int64_t>(static_cast<long double>(rate.per.count()) *
                                                 static_cast<long double>(last_index) /
                                                 static_cast<long double>(rate.messages)));
  const Duration left = saturating_add(start, due) - SystemClock::instance().monotonic_now();
  return left <= Duration::zero() || session.stop().sleep_for(left);
}

Status send_batch(Session& session, const protocol::SendTarget& target,
                  const std::vector<std::string>& batch,
                  std::vector<protocol::OutgoingMessage>& messages) {
  messages.clear();
  const uint64_t now_us = SystemClock::instance().realtime_now();
  for (const std::string& text : batch) {
    messages.push_back({.origin_timestamp = now_us, .payload = protocol::as_bytes(text)});
  }
  return session.client().send_messages(target, messages);
}

}  // namespace

ExitCode run_produce(Session& session, const Invocation& invocation) {
  const Parsed<ProduceOptions> options = parse_produce_options(invocation);
  if (!options.ok()) return session.usage_error(options.reason());
  if (!session.open()) return ExitCode::failed;
  MessageSource source(invocation.args.subspan(2), session.streams().in, session.stop());
  const Instant start = SystemClock::instance().monotonic_now();
  std::vector<std::string> batch;
  std::vector<protocol::OutgoingMessage> messages;
  uint64_t sent = 0;
  Status status;
  while (status.ok() && !session.stop().requested() && source.next(batch, options->batch_max)) {
    if (options->rate && !pace(session, *options->rate, start, sent, batch.size())) break;
    status = send_batch(session, options->target, batch, messages);
    if (status.ok()) sent += batch.size();
  }
  // After a failure the count still tells what went through, if anything did.
  if (status.ok() || sent > 0) {
    session.print("sent " + std::to_string(sent) + (sent == 1 ? " message\n" : " messages\n"));
  }
  if (!status.ok() && !session.stop().requested()) {
    return session.fail(
        status.error(),
        {.stream = invocation.args[0],
         .topic = invocation.args[1],
         .partition = std::string(invocation.line.value("partition").value_or(""))});
  }
  return ExitCode::ok;
}

}  // namespace hark::cli
