#include "hark/server/process_stats.h"

#include <stdio.h>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

namespace hark::server {

// Resident set size in bytes: the second field of /proc/self/statm, in pages.
uint64_t resident_bytes() {
  FILE* file = fopen("/proc/self/statm", "re");
  if (file == nullptr) return 0;
  unsigned long long size_pages = 0;
  unsigned long long resident_pages = 0;
  const int read = fscanf(file, "%llu %llu", &size_pages, &resident_pages);
  fclose(file);
  if (read != 2) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  return resident_pages * static_cast<uint64_t>(page > 0 ? page : 4096);
}

uint64_t cpu_micros() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  const auto micros = [](const timeval& time) {
    return static_cast<uint64_t>(time.tv_sec) * 1'000'000 + static_cast<uint64_t>(time.tv_usec);
  };
  return micros(usage.ru_utime) + micros(usage.ru_stime);
}

namespace {

void fill_system(protocol::StatsResponse& response, const std::string& data_directory) {
  struct sysinfo info {};
  if (sysinfo(&info) == 0) {
    response.total_memory = static_cast<uint64_t>(info.totalram) * info.mem_unit;
    response.available_memory =
        (static_cast<uint64_t>(info.freeram) + info.bufferram) * info.mem_unit;
  }
  struct statvfs disk {};
  if (statvfs(data_directory.c_str(), &disk) == 0) {
    response.free_disk_space = static_cast<uint64_t>(disk.f_bavail) * disk.f_frsize;
    response.total_disk_space = static_cast<uint64_t>(disk.f_blocks) * disk.f_frsize;
  }
  utsname name{};
  if (uname(&name) == 0) {
    response.os_name = name.sysname;
    response.os_version = name.version;
    response.kernel_version = name.release;
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) response.hostname = host;
}

}  // namespace

protocol::StatsResponse stats_response(const core::BrokerStats& stats,
                                       const StatsContext& context) {
  protocol::StatsResponse response;
  response.process_id = static_cast<uint32_t>(getpid());
  const uint64_t run_micros =
      context.now > context.started_at ? context.now - context.started_at : 0;
  if (run_micros > 0) {
    response.cpu_usage = static_cast<float>(static_cast<double>(cpu_micros()) * 100.0 /
                                            static_cast<double>(run_micros));
  }
  response.memory_usage = resident_bytes();
  response.run_time = run_micros;
  response.start_time = context.started_at;
  response.messages_size_bytes = stats.size_bytes;
  response.streams_count = static_cast<uint32_t>(stats.streams);
  response.topics_count = static_cast<uint32_t>(stats.topics);
  response.partitions_count = static_cast<uint32_t>(stats.partitions);
  response.segments_count = static_cast<uint32_t>(stats.segments);
  response.messages_count = stats.messages_count;
  response.clients_count = context.clients_count;
  response.consumer_groups_count = static_cast<uint32_t>(stats.consumer_groups);
  response.server_version = server_version;
  response.server_semver = 0;
  response.threads_count = context.threads_count;
  fill_system(response, context.data_directory);
  return response;
}

}  // namespace hark::server
