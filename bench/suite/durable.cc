// `durable`: durability `always` against the disk's own floor, in one run. In each block and
// each placement (client_processes.h), in turn: the floor, which is one stored 100 B message
// (164 bytes) appended in a file next to harkd's data (TMPDIR) with O_DIRECT into a
// pre-written region, made durable by RWF_DSYNC (what `always` does, storage/ring_disk.cc) and
// by a linked fdatasync (what it did), idle `gap` before each, measured on the CPUs the
// placement pins the servers to; then a harkd under `always` and one under `write`, each woken
// through a separate producer and consumer process. Per placement the notes hold the two
// targets of docs/bench.md §Durable commits in one run: the commit under `always` (the
// producer's acknowledgement p50) at most 1.5 × the floor (the better strategy's p50), and the
// wake under `always` at most the floor + 1.5 × the wake under `write`.
#include <sched.h>

#include <cstdio>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "hark/bench/storage/disk_appends.h"
#include "hark/bench/suite/client_processes.h"
#include "hark/bench/suite/echo.h"
#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/scenarios.h"

namespace hark::bench {
namespace {

constexpr size_t stored_message_bytes = 164;  // 100 B of payload and its 64-byte header.

struct Floor {
  const AppendStrategy* strategy;
  std::vector<double> samples_us;
};

// A placement's better floor: its p50 and its strategy.
struct BestFloor {
  std::string placement;
  double p50 = 0;
  std::string strategy;
};

// Both floor strategies, each placement's measured on its servers' CPUs.
class Floors {
 public:
  Floors() : unsupported_(std::size(strategies), false) {}

  // One block of each strategy, the calling thread pinned to `cpus` meanwhile (on one CPU the
  // disk's completion work shares it, as harkd's does); false if one failed.
  bool measure(const std::string& placement, const cpu_set_t& cpus, int count,
               std::chrono::microseconds gap, io_uring& ring, Report& report) {
    cpu_set_t before;
    CPU_ZERO(&before);
    (void)::sched_getaffinity(0, sizeof before, &before);
    (void)::sched_setaffinity(0, sizeof cpus, &cpus);
    if (!placed_.contains(placement)) order_.push_back(placement);
    std::vector<Floor>& floors = placed_[placement];
    bool ok = true;
    for (size_t i = 0; i < std::size(strategies) && ok; i++) {
      if (floors.size() <= i) floors.push_back({.strategy = strategies[i], .samples_us = {}});
      if (unsupported_[i]) continue;
      AppendRun run =
          run_appends(*strategies[i], server_data_parent(), count, stored_message_bytes, gap, ring);
      if (run.unsupported) {
        unsupported_[i] = true;
        report.note(std::string("floor ") + strategies[i]->name + ": " + run.error);
      } else if (!run.ok) {
        std::fprintf(stderr, "durable: floor %s failed: %s\n", strategies[i]->name,
                     run.error.c_str());
        ok = false;
      } else {
        std::vector<double> kept = without_warmup(std::move(run.latencies_us));
        floors[i].samples_us.insert(floors[i].samples_us.end(), kept.begin(), kept.end());
      }
    }
    (void)::sched_setaffinity(0, sizeof before, &before);
    return ok;
  }

  // Adds the rows; returns each placement's better floor, in the order they were measured.
  std::vector<BestFloor> add_rows(Report& report, std::chrono::microseconds gap) {
    std::vector<BestFloor> best;
    for (const std::string& placement : order_) {
      BestFloor better{.placement = placement};
      for (Floor& floor : placed_[placement]) {
        if (floor.samples_us.empty()) continue;
        const Row& row = report.add(
            {.system = "disk",
             .name = "floor " + placement + ", " + floor.strategy->name,
             .samples_us = std::move(floor.samples_us),
             .notes = std::to_string(stored_message_bytes) + " B appends one at a time in " +
                      server_data_parent() + " on the servers' CPUs, gap " +
                      std::to_string(gap.count()) + " µs, alternating with the wakes"});
        if (better.p50 <= 0 || row.latency.p50 < better.p50) {
          better.p50 = row.latency.p50;
          better.strategy = floor.strategy->name;
        }
      }
      if (better.p50 > 0) best.push_back(better);
    }
    return best;
  }

 private:
  static constexpr const AppendStrategy* strategies[] = {&direct_dsync, &direct_linked};
  std::vector<bool> unsupported_;
  std::map<std::string, std::vector<Floor>> placed_;
  std::vector<std::string> order_;
};

// The two targets for each placement that was measured, against that placement's floor.
void verdicts(Report& report, const std::vector<BestFloor>& best) {
  for (const BestFloor& floor : best) {
    const std::string& placement = floor.placement;
    const double floor_p50 = floor.p50;
    const std::string& floor_name = floor.strategy;
    const Row* ack = report.find("hark", "acknowledgement " + placement + ", durability always");
    const Row* always = report.find("hark", "wake " + placement + ", durability always");
    const Row* write = report.find("hark", "wake " + placement + ", durability write");
    if (ack == nullptr || always == nullptr || write == nullptr || floor_p50 <= 0) continue;
    char line[300];
    const double commit = ack->latency.p50 / floor_p50;
    std::snprintf(line, sizeof line,
                  "%-8s commit under always: acknowledgement p50 %.1f µs = %.2f x the floor "
                  "(%.1f µs, %s; target <= 1.5): %s",
                  placement.c_str(), ack->latency.p50, commit, floor_p50, floor_name.c_str(),
                  commit <= 1.5 ? "met" : "missed");
    report.note(line);
    const double bound = floor_p50 + 1.5 * write->latency.p50;
    std::snprintf(line, sizeof line,
                  "%-8s wake under always: p50 %.1f µs = %.2f x the bound, floor + 1.5 x the wake "
                  "under write (%.1f + 1.5 x %.1f = %.1f µs): %s",
                  placement.c_str(), always->latency.p50, always->latency.p50 / bound, floor_p50,
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
  Floors floors;
  const int per_block = options.smoke ? 20 : 400;
  std::vector<ProcessTarget> targets = {hark_process_target(hark_always, "durability always"),
                                        hark_process_target(hark_write, "durability write")};
  targets[0].acknowledgement_row = true;
  const TargetRatio ratios[] = {{"hark durability always", "hark durability write"}};
  const bool ok = measure_process_wakes(
      options, targets, ratios, report,
      [&](const std::string& placement, const cpu_set_t& servers) {
        return floors.measure(placement, servers, per_block, options.gap, ring, report);
      });
  io_uring_queue_exit(&ring);
  const auto best = floors.add_rows(report, options.gap);
  if (best.empty()) {
    report.note("no floor measured: O_DIRECT is not supported where harkd keeps its data");
  }
  verdicts(report, best);
  const bool stopped = hark_write.stop();
  return hark_always.stop() && stopped && ok;
}

}  // namespace hark::bench
