// `durable`: durability `always` against the disk's own floor, in one run. In alternating
// blocks: the floor, which is one stored 100 B message (164 bytes) appended in a file next to
// harkd's data (TMPDIR), with O_DIRECT into a pre-written region made durable by RWF_DSYNC
// (what `always` does, storage/ring_disk.cc) and by a linked fdatasync (what it did), idle
// `gap` before each; then a harkd under `always` and one under `write`, each woken through a
// separate producer and consumer process in every placement (client_processes.h). Per
// placement the notes hold the two targets of docs/bench.md §Durable commits in one run: the
// commit under `always` (the producer's acknowledgement p50) at most 1.5 × the floor (the
// better strategy's p50), and the wake under `always` at most the floor + 1.5 × the wake under
// `write`.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hark/bench/storage/disk_appends.h"
#include "hark/bench/suite/client_processes.h"
#include "hark/bench/suite/echo.h"
#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/scenarios.h"

namespace hark::bench {
namespace {

constexpr size_t stored_message_bytes = 164;  // 100 B of payload and its 64-byte header.

// Where harkd keeps its data: the temporary directory HarkdProcess makes its directory in.
std::string data_parent() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

struct Floor {
  const AppendStrategy& strategy;
  std::vector<double> samples_us;
  bool unsupported = false;
};

// One block of each floor strategy; false if one failed.
bool measure_floor_block(std::span<Floor> floors, int count, std::chrono::microseconds gap,
                         io_uring& ring, Report& report) {
  for (Floor& floor : floors) {
    if (floor.unsupported) continue;
    AppendRun run =
        run_appends(floor.strategy, data_parent(), count, stored_message_bytes, gap, ring);
    if (run.unsupported) {
      floor.unsupported = true;
      report.note(std::string("floor ") + floor.strategy.name + ": " + run.error);
      continue;
    }
    if (!run.ok) {
      std::fprintf(stderr, "durable: floor %s failed: %s\n", floor.strategy.name,
                   run.error.c_str());
      return false;
    }
    std::vector<double> kept = without_warmup(std::move(run.latencies_us));
    floor.samples_us.insert(floor.samples_us.end(), kept.begin(), kept.end());
  }
  return true;
}

// The two targets for each placement that was measured.
void verdicts(Report& report, double floor_p50, const std::string& floor_name) {
  for (const char* placement : {"unpinned", "one-cpu", "split"}) {
    const std::string where = placement;
    const Row* ack = report.find("hark", "acknowledgement " + where + ", durability always");
    const Row* always = report.find("hark", "wake " + where + ", durability always");
    const Row* write = report.find("hark", "wake " + where + ", durability write");
    if (ack == nullptr || always == nullptr || write == nullptr || floor_p50 <= 0) continue;
    char line[300];
    const double commit = ack->latency.p50 / floor_p50;
    std::snprintf(line, sizeof line,
                  "%-8s commit under always: acknowledgement p50 %.1f µs = %.2f x the floor "
                  "(%.1f µs, %s; target <= 1.5): %s",
                  placement, ack->latency.p50, commit, floor_p50, floor_name.c_str(),
                  commit <= 1.5 ? "met" : "missed");
    report.note(line);
    const double bound = floor_p50 + 1.5 * write->latency.p50;
    std::snprintf(line, sizeof line,
                  "%-8s wake under always: p50 %.1f µs = %.2f x the bound, floor + 1.5 x the wake "
                  "under write (%.1f + 1.5 x %.1f = %.1f µs): %s",
                  placement, always->latency.p50, always->latency.p50 / bound, floor_p50,
                  write->latency.p50, bound, always->latency.p50 <= bound ? "met" : "missed");
    report.note(line);
  }
}

}  // namespace

bool run_durable(const Options& options, Report& report) {
  Options always = options;
  always.durability = "always";
  Options write = options;
  write.durability = "write";
  HarkServer hark_always;
  HarkServer hark_write;
  if (!hark_always.start(always) || !hark_write.start(write)) return false;
  io_uring ring{};
  if (!init_append_ring(ring)) {
    std::fprintf(stderr, "durable: io_uring unavailable\n");
    return false;
  }
  Floor floors[] = {{.strategy = direct_dsync}, {.strategy = direct_linked}};
  const int per_block = options.smoke ? 20 : 400;
  std::vector<ProcessTarget> targets = {hark_process_target(hark_always, "durability always"),
                                        hark_process_target(hark_write, "durability write")};
  targets[0].acknowledgement_row = true;
  const TargetRatio ratios[] = {{"hark durability always", "hark durability write"}};
  bool ok = measure_process_wakes(options, targets, ratios, report, [&] {
    return measure_floor_block(floors, per_block, options.gap, ring, report);
  });
  io_uring_queue_exit(&ring);
  double floor_p50 = 0;
  std::string floor_name;
  for (Floor& floor : floors) {
    if (floor.samples_us.empty()) continue;
    const Row& row =
        report.add({.system = "disk",
                    .name = std::string("floor: ") + floor.strategy.name,
                    .samples_us = std::move(floor.samples_us),
                    .notes = std::to_string(stored_message_bytes) + " B appends one at a time in " +
                             data_parent() + ", gap " + std::to_string(options.gap.count()) +
                             " µs, alternating with the wakes' blocks"});
    if (floor_p50 <= 0 || row.latency.p50 < floor_p50) {
      floor_p50 = row.latency.p50;
      floor_name = floor.strategy.name;
    }
  }
  if (floor_p50 <= 0) {
    report.note("no floor measured: O_DIRECT is not supported where harkd keeps its data");
  }
  verdicts(report, floor_p50, floor_name);
  const bool stopped = hark_write.stop();
  return hark_always.stop() && stopped && ok;
}

}  // namespace hark::bench
