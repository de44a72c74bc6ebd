#include "hark/bench/suite/process_stats.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace hark::bench {
namespace {

int64_t cpu_from_stat(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(file, text)) return -1;
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  // state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  if (std::sscanf(text.c_str() + close + 1,
                  " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) {
    return -1;
  }
  return static_cast<int64_t>((utime + stime) * (1'000'000'000ull / ::sysconf(_SC_CLK_TCK)));
}

// Calls `visit(path)` for each thread of `pid` (/proc/PID/task/TID): what the kernel counts
// per thread (run time, context switches) is summed over all of them, not only the main one.
template <typename Visit>
void for_each_task(pid_t pid, Visit visit) {
  std::error_code error;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, error)) visit(task.path());
}

}  // namespace

int64_t process_cpu_ns(pid_t pid) {
  if (pid <= 0) return -1;
  int64_t total = 0;
  bool any = false;
  for_each_task(pid, [&](const std::filesystem::path& task) {
    std::ifstream file(task / "schedstat");
    long long run_ns = 0;
    if (file >> run_ns) {
      total += run_ns;
      any = true;
    }
  });
  return any ? total : cpu_from_stat(pid);
}

int64_t process_rss_bytes(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream file("/proc/" + std::to_string(pid) + "/statm");
  long long size = 0;
  long long resident = 0;
  if (!(file >> size >> resident)) return -1;
  return resident * ::sysconf(_SC_PAGESIZE);
}

int64_t process_context_switches(pid_t pid) {
  if (pid <= 0) return -1;
  int64_t total = 0;
  bool any = false;
  for_each_task(pid, [&](const std::filesystem::path& task) {
    std::ifstream file(task / "status");
    std::string line;
    while (std::getline(file, line)) {
      long long count = 0;
      if (std::sscanf(line.c_str(), "voluntary_ctxt_switches: %lld", &count) == 1 ||
          std::sscanf(line.c_str(), "nonvoluntary_ctxt_switches: %lld", &count) == 1) {
        total += count;
        any = true;
      }
    }
  });
  return any ? total : -1;
}

bool pin_process(pid_t pid, const cpu_set_t& cpus) {
  bool any = false;
  for_each_task(pid, [&](const std::filesystem::path& task) {
    const pid_t tid = std::atoi(task.filename().c_str());
    if (tid > 0 && ::sched_setaffinity(tid, sizeof cpus, &cpus) == 0) any = true;
  });
  return any;
}

CpuWindow::CpuWindow(pid_t pid) : CpuWindow(std::span<const pid_t>(&pid, 1)) {}

CpuWindow::CpuWindow(std::span<const pid_t> pids) : pids_(pids.begin(), pids.end()) {
  for (const pid_t pid : pids_) start_ns_.push_back(pid > 0 ? process_cpu_ns(pid) : -1);
}

int64_t CpuWindow::used_ns() const {
  if (pids_.empty()) return -1;
  int64_t total = 0;
  for (size_t i = 0; i < pids_.size(); i++) {
    if (start_ns_[i] < 0) return -1;
    const int64_t now = process_cpu_ns(pids_[i]);
    if (now < 0) return -1;
    total += now - start_ns_[i];
  }
  return total;
}

}  // namespace hark::bench
