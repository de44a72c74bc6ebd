// How to write and make durable one append of a partition log, measured on the disk under test
// with raw io_uring (the choice behind durability `write` and `always`, docs/storage-format.md
// §How a commit reaches the disk). One append at a time, in one run, for each append size
// (default: one 100 B message = 164 bytes, and 100 x 1 KB messages = 106 400 bytes, as stored):
//   buffered write            pwrite at the head of a growing file, nothing else: what durability
//                             `write` does today
//   direct write              O_DIRECT write into a pre-written region, nothing else: a
//                             candidate for `write` (the bytes are in the kernel, and on their
//                             way to the device, when it completes)
//   buffered + fdatasync      pwrite, then fdatasync once it completed (two round trips: what
//                             `always` did first)
//   buffered, linked          the same with the fdatasync linked to the write (one submit)
//   buffered prewritten       the file is pre-allocated and written with zeros 64 MiB ahead of
//                             the head and synced first, fdatasync linked
//   direct prewritten, linked O_DIRECT writes into the pre-written region, fdatasync linked
//                             (`always` until 2026-12-03)
//   direct prewritten, DSYNC  O_DIRECT with RWF_DSYNC on the write itself, no fdatasync: what
//                             `always` does
//   direct append, linked     O_DIRECT past the end of a growing file, fdatasync linked
// O_DIRECT rows write what the log would: the aligned blocks from the block holding the head
// to the end of the append, so the partial tail block is rewritten in place by the next append
// (alignment from statx STATX_DIOALIGN, 4096 if the kernel or file system does not say).
// Per row: latency p50/p90/p99 (submit -> last completion), the submitting thread's CPU per
// append, and what io_uring's io-wq workers (`iou-wrk-*` threads of this process) did per
// append: CPU and timeslices, from /proc/self/task/*/schedstat. A worker slice means the
// operation was punted to a worker thread instead of issued inline by the submitting thread.
// The ring caps its io-wq workers like the reactors do.
// Usage: hark_sync_strategy_bench [--smoke] [--count N] [--record BYTES]... [--gap-us US]
//                                 [--dir PATH]
//   (dir: default the working directory, since /tmp may be a tmpfs)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hark/bench/storage/disk_appends.h"
#include "hark/bench/support/latency.h"

namespace hark::bench {
namespace {

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

bool run(const AppendStrategy& strategy, const std::string& directory, int count, size_t record,
         std::chrono::microseconds gap, io_uring& ring) {
  AppendRun run = run_appends(strategy, directory, count, record, gap, ring);
  if (run.unsupported) {
    std::printf("%-34s %s\n", strategy.name, run.error.c_str());
    return true;
  }
  if (!run.ok) {
    std::printf("%-34s failed: %s\n", strategy.name, run.error.c_str());
    return false;
  }
  const double appends = std::max<double>(1, static_cast<double>(run.latencies_us.size()));
  const Percentiles percentiles = summarize(run.latencies_us);
  print_row(strategy.name, percentiles,
            "cpu/append " + fixed(run.cpu_us / appends, 1) + " µs, iou-wrk cpu/append " +
                fixed(run.worker_cpu_us / appends, 1) + " µs, iou-wrk slices/append " +
                fixed(static_cast<double>(run.worker_slices) / appends, 2));
  return true;
}

}  // namespace
}  // namespace hark::bench

int main(int argc, char** argv) {
  using namespace hark::bench;
  int count = 500;
  int gap_us = 0;
  std::vector<size_t> records;
  std::string directory = ".";
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "--smoke") {
      count = 5;
    } else if (arg == "--count" && i + 1 < argc) {
      count = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--record" && i + 1 < argc) {
      records.push_back(static_cast<size_t>(std::max(1, std::atoi(argv[++i]))));
    } else if (arg == "--gap-us" && i + 1 < argc) {
      gap_us = std::max(0, std::atoi(argv[++i]));
    } else if (arg == "--dir" && i + 1 < argc) {
      directory = argv[++i];
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--smoke] [--count N] [--record BYTES]... [--gap-us US] [--dir PATH]\n",
          argv[0]);
      return 2;
    }
  }
  // One 100 B message and 100 x 1 KB messages, as stored (64-byte header each).
  if (records.empty()) records = {164, 106400};
  io_uring ring{};
  if (!init_append_ring(ring)) {
    std::fprintf(stderr, "io_uring unavailable\n");
    return 1;
  }
  const AppendStrategy strategies[] = {
      {"buffered write", false, false, AppendSync::none},
      {"direct prewritten write", true, true, AppendSync::none},
      {"buffered + fdatasync after", false, false, AppendSync::after},
      {"buffered, linked fdatasync", false, false, AppendSync::linked},
      {"buffered prewritten, linked", false, true, AppendSync::linked},
      direct_linked,
      direct_dsync,
      {"direct append, linked", true, false, AppendSync::linked},
  };
  bool ok = true;
  for (const size_t record : records) {
    std::printf("append %zu bytes, %d appends per strategy, one at a time, %d µs apart\n", record,
                count, gap_us);
    print_header();
    for (const AppendStrategy& strategy : strategies) {
      ok = run(strategy, directory, count, record, std::chrono::microseconds(gap_us), ring) && ok;
    }
  }
  io_uring_queue_exit(&ring);
  return ok ? 0 : 1;
}
