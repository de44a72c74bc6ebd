#pragma once

#include <liburing.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hark::bench {

// One way to write an append of a partition log and make it durable, measured with raw
// io_uring on the disk under test (hark_sync_strategy_bench compares them all; `hark-bench
// durable` takes the durable ones as the disk's own floor for durability `always`).
enum class AppendSync : uint8_t {
  none,    // The write alone.
  after,   // An fdatasync once the write completed (two round trips).
  linked,  // An fdatasync linked to the write (one submit).
  dsync,   // RWF_DSYNC on the write itself.
};

struct AppendStrategy {
  const char* name;
  bool direct;      // O_DIRECT: the aligned blocks from the one holding the head (the partial
                    // tail block is rewritten in place by the next append, as the log does).
  bool prewritten;  // Into a region written with zeros and synced first (64 MiB ahead).
  AppendSync sync;
};

// The two durable strategies of durability `always`: RWF_DSYNC, the one it uses
// (storage/ring_disk.cc, DiskFile::write_durable), and a linked fdatasync, the one it used.
inline constexpr AppendStrategy direct_linked{"direct prewritten, linked", true, true,
                                              AppendSync::linked};
inline constexpr AppendStrategy direct_dsync{"direct prewritten, RWF_DSYNC", true, true,
                                             AppendSync::dsync};

struct AppendRun {
  bool ok = true;            // False: the file could not be made or an append failed.
  bool unsupported = false;  // O_DIRECT is not supported on this file system.
  std::string error;
  std::vector<double> latencies_us;  // Submit -> last completion, per append.
  double cpu_us = 0;                 // The submitting thread's, over all appends.
  double worker_cpu_us = 0;          // io-wq workers' (iou-wrk-* threads of this process).
  uint64_t worker_slices = 0;        // Their timeslices: a slice means a punt to a worker.
};

// Makes `count` appends of `record` bytes one at a time per `strategy`, `gap` apart (idle
// between them, as between the wakes of hark-bench), in a fresh file in `directory` (removed
// after). `ring` is the caller's (its io-wq workers capped as io::Ring caps them).
AppendRun run_appends(const AppendStrategy& strategy, const std::string& directory, int count,
                      size_t record, std::chrono::microseconds gap, io_uring& ring);

// A ring for run_appends: 64 entries, bounded io-wq workers capped at 4 as io::Ring does.
// False if io_uring is unavailable.
bool init_append_ring(io_uring& ring);

}  // namespace hark::bench
