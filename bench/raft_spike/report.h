// Small helpers shared by the raft spike's parent and its node processes: a clock, percentiles,
// the process's own CPU and memory, and the report channel (one "key value" line per figure,
// written by a child into a pipe its parent reads). docs/cluster.md §Replication: the engine
// spike says what the spike measures and why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spike {

std::uint64_t now_ns();
// CPU time of the whole process (every thread, user + system), in ns.
std::uint64_t process_cpu_ns();
// Resident set now and its peak (VmHWM), in MiB.
double rss_mib();
double peak_rss_mib();
// Open file descriptors of this process.
int open_fds();

struct Percentiles {
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
};
Percentiles percentiles(std::vector<std::uint64_t> samples_ns);

// A child writes its figures with report(); the parent collects them (Phase in raft_spike.cc).
void set_report_fd(int fd);
void report(const std::string& key, double value);
void report_text(const std::string& key, const std::string& text);

}  // namespace spike
