// How to make an append durable, measured on the disk under test with raw io_uring (the choice
// behind durability `always`, docs/storage-format.md §Durability always). One commit at a time:
// write `record` bytes at the head, make them durable, advance. Strategies:
//   buffered append          pwrite past the end of a growing file; fdatasync after the write
//                            completed (two round trips: what the LogWriter does)
//   buffered append, linked  the same with the fdatasync linked to the write (one submit)
//   buffered prewritten      the file is preallocated and written with zeros 64 MiB ahead of
//                            the head and synced first: overwriting allocated, written blocks
//                            leaves fdatasync no metadata (size, extents) to journal
//   direct prewritten        O_DIRECT writes (alignment from statx STATX_DIOALIGN, 4096 if the
//                            kernel or file system does not say) into the pre-written region,
//                            fdatasync linked
//   direct prewritten dsync  O_DIRECT with RWF_DSYNC on the write itself (FUA where the device
//                            has it), no separate fdatasync
//   direct append            O_DIRECT past the end of a growing file, fdatasync linked
// Prints per-commit latency (p50/p90/p99) and MB/s, and what pre-writing 64 MiB costs. The
// ring caps its io-wq workers like the reactors do.
// Usage: hark_sync_strategy_bench [--smoke] [--count N] [--record BYTES] [--dir PATH]
//   (dir: default the working directory, since /tmp may be a tmpfs)
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "hark/bench/support/latency.h"

namespace hark::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr uint64_t prewrite_bytes = 64ull << 20;

enum class Kind {
  append,
  append_linked,
  prewritten,
  direct_prewritten,
  direct_dsync,
  direct_append
};

struct Strategy {
  const char* name;
  Kind kind;
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

// Makes `count` records of `length` bytes durable one at a time, per `strategy`; returns the
// bytes committed and records each commit's latency.
uint64_t commit_all(io_uring& ring, const Strategy& strategy, int fd, const void* buffer,
                    size_t length, int count, std::vector<double>& latencies) {
  uint64_t head = 0;
  for (int i = 0; i < count; i++) {
    const auto begun = SteadyClock::now();
    io_uring_sqe* write = io_uring_get_sqe(&ring);
    io_uring_prep_write(write, fd, buffer, static_cast<unsigned>(length), head);
    int completions = 1;
    if (strategy.kind == Kind::direct_dsync) {
      write->rw_flags = RWF_DSYNC;
    } else if (strategy.kind == Kind::append) {
      if (complete(ring, 1) < 0) return head;
      io_uring_prep_fsync(io_uring_get_sqe(&ring), fd, IORING_FSYNC_DATASYNC);
    } else {
      write->flags |= IOSQE_IO_LINK;
      io_uring_prep_fsync(io_uring_get_sqe(&ring), fd, IORING_FSYNC_DATASYNC);
      completions = 2;
    }
    const int result = complete(ring, completions);
    if (result < 0) {
      std::printf("%-34s failed: %s\n", strategy.name, std::strerror(-result));
      return head;
    }
    latencies.push_back(
        std::chrono::duration<double, std::micro>(SteadyClock::now() - begun).count());
    head += length;
  }
  return head;
}

bool run(const Strategy& strategy, const std::string& directory, int count, size_t record,
         io_uring& ring) {
  const std::string path = directory + "/hark-sync-strategy.dat";
  ::unlink(path.c_str());
  const bool direct = strategy.kind == Kind::direct_prewritten ||
                      strategy.kind == Kind::direct_dsync || strategy.kind == Kind::direct_append;
  const bool prewritten = strategy.kind == Kind::prewritten ||
                          strategy.kind == Kind::direct_prewritten ||
                          strategy.kind == Kind::direct_dsync;
  const int plain = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (plain < 0) {
    std::perror(path.c_str());
    return false;
  }
  double prewrite_ms = 0;
  if (prewritten) prewrite_ms = prewrite(plain, prewrite_bytes);
  int fd = plain;
  Alignment alignment;
  if (direct) {
    alignment = dio_alignment(path);
    fd = ::open(path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
      std::printf("%-34s O_DIRECT unsupported here: %s\n", strategy.name, std::strerror(errno));
      ::close(plain);
      return true;
    }
  }
  const size_t align = std::max<size_t>(alignment.memory, 64);
  const size_t length = (record + alignment.offset - 1) / alignment.offset * alignment.offset;
  void* buffer = std::aligned_alloc(align, (length + align - 1) / align * align);
  std::memset(buffer, 'x', length);
  if (prewritten && static_cast<uint64_t>(count) * length > prewrite_bytes) {
    count = static_cast<int>(prewrite_bytes / length);
  }
  std::vector<double> latencies;
  const auto start = SteadyClock::now();
  const uint64_t head = commit_all(ring, strategy, fd, buffer, length, count, latencies);
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  std::free(buffer);
  if (fd != plain) ::close(fd);
  ::close(plain);
  ::unlink(path.c_str());
  Percentiles percentiles = summarize(latencies);
  std::string notes = std::to_string(static_cast<double>(head) / seconds / 1e6).substr(0, 6) +
                      " MB/s, " + std::to_string(length) + "-byte writes";
  if (direct) notes += alignment.from_statx ? ", statx DIO alignment" : ", assumed 4096";
  if (prewritten) {
    notes += ", 64 MiB pre-write took " + std::to_string(static_cast<int>(prewrite_ms)) + " ms";
  }
  print_row(strategy.name, percentiles, notes);
  return true;
}

}  // namespace
}  // namespace hark::bench

int main(int argc, char** argv) {
  using namespace hark::bench;
  int count = 500;
  size_t record = 4096;
  std::string directory = ".";
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "--smoke") {
      count = 5;
    } else if (arg == "--count" && i + 1 < argc) {
      count = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--record" && i + 1 < argc) {
      record = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    } else if (arg == "--dir" && i + 1 < argc) {
      directory = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--smoke] [--count N] [--record BYTES] [--dir PATH]\n",
                   argv[0]);
      return 2;
    }
  }
  io_uring ring{};
  if (io_uring_queue_init(64, &ring, 0) != 0) {
    std::fprintf(stderr, "io_uring unavailable\n");
    return 1;
  }
  unsigned workers[2] = {4, 0};  // Bounded (file I/O) capped as in io::Ring; unbounded as is.
  io_uring_register_iowq_max_workers(&ring, workers);
  const Strategy strategies[] = {
      {"buffered append", Kind::append},
      {"buffered append, linked", Kind::append_linked},
      {"buffered prewritten, linked", Kind::prewritten},
      {"direct prewritten, linked", Kind::direct_prewritten},
      {"direct prewritten, RWF_DSYNC", Kind::direct_dsync},
      {"direct append, linked", Kind::direct_append},
  };
  std::printf("record %zu bytes, %d commits per strategy, one at a time\n", record, count);
  print_header();
  bool ok = true;
  for (const Strategy& strategy : strategies)
    ok = run(strategy, directory, count, record, ring) && ok;
  io_uring_queue_exit(&ring);
  return ok ? 0 : 1;
}
