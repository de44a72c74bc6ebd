// Appends made durable with raw io_uring (disk_appends.h).
#include "hark/bench/storage/disk_appends.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <sys/resource.h>
#include <sys/stat.h>

namespace hark::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr uint64_t prewrite_bytes = 64ull << 20;

struct Alignment {
  uint32_t memory = 4096;
  uint32_t offset = 4096;
};

// O_DIRECT alignment from statx STATX_DIOALIGN; 4096 if the kernel or file system does not say.
Alignment dio_alignment(const std::string& path) {
  Alignment alignment;
  struct statx info {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_DIOALIGN, &info) == 0 &&
      (info.stx_mask & STATX_DIOALIGN) != 0 && info.stx_dio_offset_align != 0) {
    alignment.memory = info.stx_dio_mem_align;
    alignment.offset = info.stx_dio_offset_align;
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

// Zeros [0, bytes) of `fd` with plain writes and syncs them.
bool prewrite(int fd, uint64_t bytes) {
  if (::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0) return false;
  std::vector<char> zeros(1 << 20, 0);
  for (uint64_t at = 0; at < bytes; at += zeros.size()) {
    if (::pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(at)) < 0) return false;
  }
  return ::fdatasync(fd) == 0;
}

struct Append {
  const std::byte* data;  // The byte at file position `position`.
  uint64_t position;
  size_t length;
};

// Queues one append per `strategy` (the write, and its fdatasync when linked): the number of
// completions to wait for.
int queue(io_uring& ring, const AppendStrategy& strategy, int fd, const Append& append) {
  io_uring_sqe* write = io_uring_get_sqe(&ring);
  io_uring_prep_write(write, fd, append.data, static_cast<unsigned>(append.length),
                      append.position);
  if (strategy.sync == AppendSync::dsync) write->rw_flags = RWF_DSYNC;
  if (strategy.sync != AppendSync::linked) return 1;
  write->flags |= IOSQE_IO_LINK;
  io_uring_prep_fsync(io_uring_get_sqe(&ring), fd, IORING_FSYNC_DATASYNC);
  return 2;
}

// The bytes an append of `record` at `head` writes: exactly them, or under O_DIRECT the
// aligned blocks covering them (the tail block again, with what the last append left in it).
Append append_at(const AppendStrategy& strategy, const std::byte* file_image, uint64_t head,
                 size_t record, uint32_t block) {
  if (!strategy.direct) return {file_image + head, head, record};
  const uint64_t from = head / block * block;
  const uint64_t to = (head + record + block - 1) / block * block;
  return {file_image + from, from, static_cast<size_t>(to - from)};
}

// `count` appends one at a time into `fd`; `file_image` holds what the file should contain.
void append_all(io_uring& ring, const AppendStrategy& strategy, int fd, const std::byte* file_image,
                size_t record, int count, uint32_t block, std::chrono::microseconds gap,
                AppendRun& run) {
  uint64_t head = 0;
  for (int i = 0; i < count; i++) {
    if (gap.count() > 0) ::usleep(static_cast<useconds_t>(gap.count()));  // Idle, as between wakes.
    const auto begun = SteadyClock::now();
    const Append append = append_at(strategy, file_image, head, record, block);
    int result = complete(ring, queue(ring, strategy, fd, append));
    if (result >= 0 && strategy.sync == AppendSync::after) {
      io_uring_prep_fsync(io_uring_get_sqe(&ring), fd, IORING_FSYNC_DATASYNC);
      result = complete(ring, 1);
    }
    if (result < 0) {
      run.ok = false;
      run.error = std::strerror(-result);
      return;
    }
    run.latencies_us.push_back(
        std::chrono::duration<double, std::micro>(SteadyClock::now() - begun).count());
    head += record;
  }
}

}  // namespace

bool init_append_ring(io_uring& ring) {
  if (io_uring_queue_init(64, &ring, 0) != 0) return false;
  unsigned workers[2] = {4, 0};  // Bounded (file I/O) capped as in io::Ring; unbounded as is.
  io_uring_register_iowq_max_workers(&ring, workers);
  return true;
}

AppendRun run_appends(const AppendStrategy& strategy, const std::string& directory, int count,
                      size_t record, std::chrono::microseconds gap, io_uring& ring) {
  AppendRun run;
  const std::string path = directory + "/hark-disk-appends.dat";
  ::unlink(path.c_str());
  const int plain = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (plain < 0) {
    run.ok = false;
    run.error = path + ": " + std::strerror(errno);
    return run;
  }
  if (strategy.prewritten && !prewrite(plain, prewrite_bytes)) {
    run.ok = false;
    run.error = "cannot pre-write " + path + ": " + std::strerror(errno);
  }
  int fd = plain;
  const Alignment alignment = dio_alignment(path);
  if (run.ok && strategy.direct) {
    fd = ::open(path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
      run.unsupported = true;
      run.error = std::string("O_DIRECT unsupported here: ") + std::strerror(errno);
      fd = plain;
    }
  }
  if (run.ok && !run.unsupported) {
    if (strategy.prewritten) {
      count = static_cast<int>(std::min<uint64_t>(count, prewrite_bytes / (record + 8192)));
    }
    const size_t align = std::max<size_t>({alignment.memory, alignment.offset, 64});
    const size_t image_bytes = ((static_cast<size_t>(count) + 1) * record + align) / align * align;
    auto* image = static_cast<std::byte*>(std::aligned_alloc(align, image_bytes));
    std::memset(image, 'x', image_bytes);
    const WorkerStats workers_before = worker_stats();
    const double cpu_before = thread_cpu_us();
    append_all(ring, strategy, fd, image, record, count, alignment.offset, gap, run);
    run.cpu_us = thread_cpu_us() - cpu_before;
    const WorkerStats workers_after = worker_stats();
    std::free(image);
    // Workers that exited during the run take their counts with them: a floor.
    run.worker_cpu_us = std::max(0.0, workers_after.cpu_us - workers_before.cpu_us);
    run.worker_slices =
        workers_after.slices - std::min(workers_after.slices, workers_before.slices);
  }
  if (fd != plain) ::close(fd);
  ::close(plain);
  ::unlink(path.c_str());
  return run;
}

}  // namespace hark::bench
