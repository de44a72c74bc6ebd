#pragma once

#include <sched.h>

#include <cstdint>
#include <span>
#include <vector>

#include <sys/types.h>

namespace hark::bench {

// CPU time (user + system) of every live thread of `pid` in ns, summed from
// /proc/PID/task/*/schedstat (ns resolution, so one wake-up's cost is visible); where the kernel
// has no schedstat, from /proc/PID/stat (clock ticks, 10 ms). -1 if the process is gone.
int64_t process_cpu_ns(pid_t pid);
// Resident set size of `pid` in bytes (/proc/PID/statm); -1 if unknown.
int64_t process_rss_bytes(pid_t pid);

// Context switches (voluntary + involuntary) of every live thread of `pid`, summed from
// /proc/PID/task/*/status (/proc/PID/status alone counts the main thread only); -1 if the
// process is gone.
int64_t process_context_switches(pid_t pid);

// Sets the CPU affinity of every live thread of `pid` (threads it starts later inherit their
// creator's). Threads that refuse (io_uring's io-wq workers) keep theirs. False if no thread
// took it.
bool pin_process(pid_t pid, const cpu_set_t& cpus);

// A process's CPU over a window, or several processes' together (the nodes of a cluster):
// construct at its start, read at its end.
class CpuWindow {
 public:
  explicit CpuWindow(pid_t pid);
  explicit CpuWindow(std::span<const pid_t> pids);
  // CPU ns the processes used since construction, summed (-1 without a pid, or if one is gone).
  int64_t used_ns() const;

 private:
  std::vector<pid_t> pids_;
  std::vector<int64_t> start_ns_;
};

}  // namespace hark::bench
