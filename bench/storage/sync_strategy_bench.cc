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
//                             `always` does today)
//   buffered, linked          the same with the fdatasync linked to the write (one submit)
//   buffered prewritten       the file is pre-allocated and written with zeros 64 MiB ahead of
//                             the head and synced first, fdatasync linked
//   direct prewritten, linked O_DIRECT writes into the pre-written region, fdatasync linked
//   direct prewritten, DSYNC  O_DIRECT with RWF_DSYNC on the write itself, no fdatasync
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
#include <dirent.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/stat.h>

#include "hark/bench/support/latency.h"

namespace hark::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr uint64_t prewrite_bytes = 64ull << 20;

// Idle time before each append (--gap-us): with a gap, the workers and the device go idle
// between appends, as between the wakes of hark-bench wake (1 ms).
int gap_us = 0;

enum class Sync : uint8_t { none, after, linked, dsync };

struct Strategy {
  const char* name;
  bool direct;
  bool prewritten;
  Sync sync;
};

struct Alignment {
  uint32_t memory = 4096;
  uint32_t offset = 4096;
  bool from_statx = false;
};

Alignment dio_alignment(const std::string& path) {
  Alignment alignment;
  struct statx info {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_DIOALIGN, &info) == 0 &&
      (info.stx_mask & STATX_DIOALIGN) != 0 && info.stx_dio_offset_align != 0) {
    alignment.memory = info.stx_dio_mem_align;
    alignment.offset = info.stx_dio_offset_align;
    alignment.from_statx = true;
  }
  return alignment;
}

// What the io-wq workers of this process have done so far: CPU and timeslices, summed over
// the `iou-wrk-*` threads in /proc/self/task (schedstat: ns on cpu, ns waiting, timeslices).
struct WorkerStats {
  double cpu_us = 0;
  uint64_t slices = 0;
};

WorkerStats worker_stats() {
  WorkerStats stats;
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return stats;
  while (const dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + entry->d_name;
    std::string comm;
    std::getline(std::ifstream(task + "/comm"), comm);
    if (!comm.starts_with("iou-wrk")) continue;
    uint64_t on_cpu_ns = 0;
    uint64_t waited_ns = 0;
    uint64_t slices = 0;
    std::ifstream(task + "/schedstat") >> on_cpu_ns >> waited_ns >> slices;
    stats.cpu_us += static_cast<double>(on_cpu_ns) / 1e3;
    stats.slices += slices;
  }
  ::closedir(tasks);
  return stats;
}

double thread_cpu_us() {
  rusage usage{};
  ::getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// Submits what is queued and waits for `count` completions; returns the first negative result.
int complete(io_uring& ring, int count) {
  io_uring_submit_and_wait(&ring, static_cast<unsigned>(count));
  int failure = 0;
  for (int i = 0; i < count; i++) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) != 0) return -EIO;
    if (cqe->res < 0 && failure == 0) failure = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
  }
  return failure;
}

// Zeros [0, bytes) of `fd` with plain writes and syncs them: returns the time it took.
double prewrite(int fd, uint64_t bytes) {
  const auto start = SteadyClock::now();
  if (::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0) std::perror("fallocate");
  std::vector<char> zeros(1 << 20, 0);
  for (uint64_t at = 0; at < bytes; at += zeros.size()) {
    if (::pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(at)) < 0) std::perror("pwrite");
  }
  ::fdatasync(fd);
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

struct Append {
  const std::byte* data;  // The byte at file position `position`.
  uint64_t position;
  size_t length;
};

// Queues one append per `strategy` (the write, and its fdatasync when linked): the number of
// completions to wait for.
int queue(io_uring& ring, const Strategy& strategy, int fd, const Append& append) {
  io_uring_sqe* write = io_uring_get_sqe(&ring);
  io_uring_prep_write(write, fd, append.data, static_cast<unsigned>(append.length),
                      append.position);
  if (strategy.sync == Sync::dsync) write->rw_flags = RWF_DSYNC;
  if (strategy.sync != Sync::linked) return 1;
  write->flags |= IOSQE_IO_LINK;
  io_uring_prep_fsync(io_uring_get_sqe(&ring), fd, IORING_FSYNC_DATASYNC);
  return 2;
}

// The bytes an append of `record` at `head` writes: exactly them, or under O_DIRECT the
// aligned blocks covering them (the tail block again, with what the last append left in it).
Append append_at(const Strategy& strategy, const std::byte* file_image, uint64_t head,
                 size_t record, uint32_t block) {
  if (!strategy.direct) return {file_image + head, head, record};
  const uint64_t from = head / block * block;
  const uint64_t to = (head + record + block - 1) / block * block;
  return {file_image + from, from, static_cast<size_t>(to - from)};
}

struct Outcome {
  std::vector<double> latencies;
  uint64_t bytes = 0;
};

// Makes `count` appends of `record` bytes one at a time, per `strategy`. `file_image` holds
// what the file should contain, block-aligned.
Outcome append_all(io_uring& ring, const Strategy& strategy, int fd, const std::byte* file_image,
                   size_t record, int count, uint32_t block) {
  Outcome outcome;
  for (int i = 0; i < count; i++) {
    if (gap_us > 0) ::usleep(static_cast<useconds_t>(gap_us));  // Idle, as between wakes.
    const auto begun = SteadyClock::now();
    const Append append = append_at(strategy, file_image, outcome.bytes, record, block);
    int result = complete(ring, queue(ring, strategy, fd, append));
    if (result >= 0 && strategy.sync == Sync::after) {
      io_uring_prep_fsync(io_uring_get_sqe(&ring), fd, IORING_FSYNC_DATASYNC);
      result = complete(ring, 1);
    }
    if (result < 0) {
      std::printf("%-34s failed: %s\n", strategy.name, std::strerror(-result));
      return outcome;
    }
    outcome.latencies.push_back(
        std::chrono::duration<double, std::micro>(SteadyClock::now() - begun).count());
    outcome.bytes += record;
  }
  return outcome;
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

bool run(const Strategy& strategy, const std::string& directory, int count, size_t record,
         io_uring& ring) {
  const std::string path = directory + "/hark-sync-strategy.dat";
  ::unlink(path.c_str());
  const int plain = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (plain < 0) {
    std::perror(path.c_str());
    return false;
  }
  if (strategy.prewritten) (void)prewrite(plain, prewrite_bytes);
  int fd = plain;
  const Alignment alignment = dio_alignment(path);
  if (strategy.direct) {
    fd = ::open(path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
      std::printf("%-34s O_DIRECT unsupported here: %s\n", strategy.name, std::strerror(errno));
      ::close(plain);
      return true;
    }
  }
  if (strategy.prewritten) {
    count = static_cast<int>(std::min<uint64_t>(count, prewrite_bytes / (record + 8192)));
  }
  const size_t align = std::max<size_t>({alignment.memory, alignment.offset, 64});
  const size_t image_bytes = ((static_cast<size_t>(count) + 1) * record + align) / align * align;
  auto* image = static_cast<std::byte*>(std::aligned_alloc(align, image_bytes));
  std::memset(image, 'x', image_bytes);
  const WorkerStats workers_before = worker_stats();
  const double cpu_before = thread_cpu_us();
  Outcome outcome = append_all(ring, strategy, fd, image, record, count, alignment.offset);
  const double cpu_us = thread_cpu_us() - cpu_before;
  const WorkerStats workers_after = worker_stats();
  std::free(image);
  if (fd != plain) ::close(fd);
  ::close(plain);
  ::unlink(path.c_str());
  const double appends = std::max<double>(1, static_cast<double>(outcome.latencies.size()));
  // Workers that exited during the run take their counts with them: a floor.
  const double worker_cpu = std::max(0.0, workers_after.cpu_us - workers_before.cpu_us);
  const double worker_slices = static_cast<double>(
      workers_after.slices - std::min(workers_after.slices, workers_before.slices));
  const Percentiles percentiles = summarize(outcome.latencies);
  print_row(strategy.name, percentiles,
            "cpu/append " + fixed(cpu_us / appends, 1) + " µs, iou-wrk cpu/append " +
                fixed(worker_cpu / appends, 1) + " µs, iou-wrk slices/append " +
                fixed(worker_slices / appends, 2));
  return true;
}

}  // namespace
}  // namespace hark::bench

int main(int argc, char** argv) {
  using namespace hark::bench;
  int count = 500;
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
  if (io_uring_queue_init(64, &ring, 0) != 0) {
    std::fprintf(stderr, "io_uring unavailable\n");
    return 1;
  }
  unsigned workers[2] = {4, 0};  // Bounded (file I/O) capped as in io::Ring; unbounded as is.
  io_uring_register_iowq_max_workers(&ring, workers);
  const Strategy strategies[] = {
      {"buffered write", false, false, Sync::none},
      {"direct prewritten write", true, true, Sync::none},
      {"buffered + fdatasync after", false, false, Sync::after},
      {"buffered, linked fdatasync", false, false, Sync::linked},
      {"buffered prewritten, linked", false, true, Sync::linked},
      {"direct prewritten, linked", true, true, Sync::linked},
      {"direct prewritten, RWF_DSYNC", true, true, Sync::dsync},
      {"direct append, linked", true, false, Sync::linked},
  };
  bool ok = true;
  for (const size_t record : records) {
    std::printf("append %zu bytes, %d appends per strategy, one at a time, %d µs apart\n", record,
                count, gap_us);
    print_header();
    for (const Strategy& strategy : strategies)
      ok = run(strategy, directory, count, record, ring) && ok;
  }
  io_uring_queue_exit(&ring);
  return ok ? 0 : 1;
}
