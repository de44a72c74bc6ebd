#include "report.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>

#include <sys/resource.h>

namespace spike {
namespace {
int report_fd = -1;

double status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.starts_with(prefix)) return std::stod(line.substr(prefix.size()));
  }
  return 0;
}

void write_line(const std::string& line) {
  if (report_fd < 0) {
    std::fputs(line.c_str(), stdout);
    return;
  }
  // One write per line, shorter than PIPE_BUF: lines of several children never interleave.
  const ssize_t n = ::write(report_fd, line.data(), line.size());
  (void)n;
}
}  // namespace

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t process_cpu_ns() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ns = [](const timeval& tv) {
    return static_cast<std::uint64_t>(tv.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(tv.tv_usec) * 1000ULL;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

double rss_mib() { return status_kib("VmRSS") / 1024.0; }
double peak_rss_mib() { return status_kib("VmHWM") / 1024.0; }

int open_fds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count - 3;  // ".", ".." and the directory's own descriptor
}

Percentiles percentiles(std::vector<std::uint64_t> samples_ns) {
  if (samples_ns.empty()) return {};
  std::sort(samples_ns.begin(), samples_ns.end());
  auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(samples_ns.size() - 1));
    return static_cast<double>(samples_ns[i]) / 1000.0;
  };
  return {.p50_us = at(0.50), .p99_us = at(0.99), .max_us = at(1.0)};
}

void set_report_fd(int fd) { report_fd = fd; }

void report(const std::string& key, double value) {
  char line[256];
  std::snprintf(line, sizeof line, "%s %.3f\n", key.c_str(), value);
  write_line(line);
}

void report_text(const std::string& key, const std::string& text) {
  write_line(key + " " + text + "\n");
}

}  // namespace spike
