// ping and stats.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <numeric>
#include <string>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/tools/cli/commands.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/values.h"

namespace hark::cli {
namespace {

constexpr Duration ping_interval = std::chrono::seconds(1);  // As ping(8).

std::string percent_text(float value) {
  std::array<char, 32> text;
  std::snprintf(text.data(), text.size(), "%.1f%%", static_cast<double>(value));
  return text.data();
}

std::string ping_summary(const std::vector<uint64_t>& round_trips_us) {
  const auto [min, max] = std::minmax_element(round_trips_us.begin(), round_trips_us.end());
  const uint64_t sum = std::accumulate(round_trips_us.begin(), round_trips_us.end(), uint64_t{0});
  return std::to_string(round_trips_us.size()) + " pings: min " + std::to_string(*min) +
         " us, avg " + std::to_string(sum / round_trips_us.size()) + " us, max " +
         std::to_string(*max) + " us\n";
}

// "3d 4h 5m 6s", down to the seconds.
std::string elapsed_text(uint64_t elapsed_us) {
  uint64_t seconds = elapsed_us / 1'000'000;
  std::string text;
  for (const auto& [unit, size] :
       {std::pair{"d", 86'400}, std::pair{"h", 3'600}, std::pair{"m", 60}}) {
    if (seconds >= static_cast<uint64_t>(size) || !text.empty()) {
      text += std::to_string(seconds / static_cast<uint64_t>(size)) + unit + " ";
      seconds %= static_cast<uint64_t>(size);
    }
  }
  return text + std::to_string(seconds) + "s";
}

}  // namespace

ExitCode run_ping(Session& session, const Invocation& invocation) {
  uint32_t count = 1;
  if (const auto text = invocation.line.value("count")) {
    const Parsed<uint32_t> parsed = parse_u32(*text, "--count");
    if (!parsed.ok()) return session.usage_error(parsed.reason());
    if (*parsed == 0) return session.usage_error("--count: at least 1");
    count = *parsed;
  }
  if (!session.open(/*login=*/false)) return ExitCode::failed;
  const Clock& clock = SystemClock::instance();
  std::vector<uint64_t> round_trips_us;
  for (uint32_t sequence = 1; sequence <= count; ++sequence) {
    if (sequence > 1 && !session.stop().sleep_for(ping_interval)) break;
    const Instant start = clock.monotonic_now();
    const Status pong = session.client().ping();
    if (!pong.ok() && session.stop().requested()) break;
    if (!pong.ok()) return session.fail(pong.error());
    const auto round_trip = std::chrono::duration_cast<Microseconds>(clock.monotonic_now() - start);
    round_trips_us.push_back(static_cast<uint64_t>(round_trip.count()));
    session.print("pong from " + session.options().address + ": seq=" + std::to_string(sequence) +
                  " time=" + std::to_string(round_trips_us.back()) + " us\n");
  }
  if (round_trips_us.size() > 1) session.print(ping_summary(round_trips_us));
  return ExitCode::ok;
}

ExitCode run_stats(Session& session, const Invocation& /*invocation*/) {
  if (!session.open()) return ExitCode::failed;
  const Result<protocol::StatsResponse> stats = session.client().get_stats();
  if (!stats.ok()) return session.fail(stats.error());
  const std::string version =
      stats->server_version.empty() ? std::string("-") : stats->server_version;
  session.print(fields_text({
      {"server version", version},
      {"host", stats->hostname},
      {"os", stats->os_name + " " + stats->os_version + ", kernel " + stats->kernel_version},
      {"process id", std::to_string(stats->process_id)},
      {"threads", std::to_string(stats->threads_count)},
      {"started", time_text(stats->start_time)},
      {"run time", elapsed_text(stats->run_time)},
      {"cpu", percent_text(stats->cpu_usage) + " (all processes " +
                  percent_text(stats->total_cpu_usage) + ")"},
      {"memory", size_text(stats->memory_usage) + " (total " + size_text(stats->total_memory) +
                     ", available " + size_text(stats->available_memory) + ")"},
      {"disk",
       size_text(stats->free_disk_space) + " free of " + size_text(stats->total_disk_space)},
      {"read", size_text(stats->read_bytes)},
      {"written", size_text(stats->written_bytes)},
      {"streams", std::to_string(stats->streams_count)},
      {"topics", std::to_string(stats->topics_count)},
      {"partitions", std::to_string(stats->partitions_count)},
      {"segments", std::to_string(stats->segments_count)},
      {"messages",
       std::to_string(stats->messages_count) + " (" + size_text(stats->messages_size_bytes) + ")"},
      {"clients", std::to_string(stats->clients_count)},
      {"consumer groups", std::to_string(stats->consumer_groups_count)},
  }));
  return ExitCode::ok;
}

}  // namespace hark::cli
