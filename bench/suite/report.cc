#include "hark/bench/suite/report.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>

namespace hark::bench {
namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// The CDF as (latency, fraction) points: every percent, then finer in the tail. Samples are
// sorted (Report::add summarized them).
std::string cdf_json(const std::vector<double>& sorted) {
  std::string out = "[";
  if (sorted.empty()) return out + "]";
  std::vector<double> fractions;
  for (int i = 0; i <= 99; i++) fractions.push_back(i / 100.0);
  for (int i = 991; i <= 999; i++) fractions.push_back(i / 1000.0);
  fractions.push_back(0.9999);
  fractions.push_back(1.0);
  for (size_t i = 0; i < fractions.size(); i++) {
    const auto index = static_cast<size_t>(fractions[i] * static_cast<double>(sorted.size() - 1));
    out +=
        (i == 0 ? "[" : ",[") + json_number(sorted[index]) + "," + json_number(fractions[i]) + "]";
  }
  return out + "]";
}

std::string cpu_text(const Row& row) {
  char text[48] = "";
  if (row.server_cpu_us_per_op >= 0) {
    std::snprintf(text, sizeof text, "%.2f µs/op", row.server_cpu_us_per_op);
  } else if (row.server_cpu_percent >= 0) {
    std::snprintf(text, sizeof text, "%.2f %%", row.server_cpu_percent);
  }
  return text;
}

std::string rate_text(double value, const char* unit) {
  if (value < 0) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%s", value, unit);
  return text;
}

}  // namespace

const Row& Report::add(Row row) {
  row.latency = summarize(row.samples_us);
  rows_.push_back(std::move(row));
  return rows_.back();
}

const Row* Report::find(const std::string& system, const std::string& prefix) const {
  for (const Row& row : rows_) {
    if (row.system == system && row.name.rfind(prefix, 0) == 0) return &row;
  }
  return nullptr;
}

void Report::print() const {
  std::printf("\n== %s ==\n", scenario_.c_str());
  const std::string us = " µs";
  std::printf("%-6s %-34s %7s %9s %9s %9s %9s %9s %10s %8s %13s  %s\n", "system", "row", "count",
              ("p50" + us).c_str(), ("p90" + us).c_str(), ("p99" + us).c_str(),
              ("p99.9" + us).c_str(), ("max" + us).c_str(), "msgs/s", "MB/s", "server cpu",
              "notes");
  for (const Row& row : rows_) {
    const Percentiles& p = row.latency;
    std::printf("%-6s %-34s %7zu %9.1f %9.1f %9.1f %9.1f %9.1f %10s %8s %13s  %s\n",
                row.system.c_str(), row.name.c_str(), p.count, p.p50, p.p90, p.p99, p.p999, p.max,
                rate_text(row.msgs_per_s, "").c_str(), rate_text(row.mb_per_s, "").c_str(),
                cpu_text(row).c_str(), row.notes.c_str());
  }
  for (const std::string& line : notes_) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

bool Report::write_json(const std::string& directory) const {
  const std::string path = directory + "/" + scenario_ + ".json";
  std::ofstream file(path, std::ios::trunc);
  if (!file) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  double load[3] = {0, 0, 0};
  (void)::getloadavg(load, 3);
  file << "{\"scenario\":" << json_string(scenario_) << ",\"unix_time\":" << std::time(nullptr)
       << ",\"cpus\":" << ::sysconf(_SC_NPROCESSORS_ONLN)
       << ",\"load_average_1m\":" << json_number(load[0]) << ",\n \"rows\":[";
  for (size_t i = 0; i < rows_.size(); i++) {
    const Row& row = rows_[i];
    const Percentiles& p = row.latency;
    file << (i == 0 ? "\n  {" : ",\n  {") << "\"system\":" << json_string(row.system)
         << ",\"name\":" << json_string(row.name) << ",\"count\":" << p.count
         << ",\"p50_us\":" << json_number(p.p50) << ",\"p90_us\":" << json_number(p.p90)
         << ",\"p99_us\":" << json_number(p.p99) << ",\"p999_us\":" << json_number(p.p999)
         << ",\"max_us\":" << json_number(p.max)
         << ",\"msgs_per_s\":" << json_number(row.msgs_per_s)
         << ",\"mb_per_s\":" << json_number(row.mb_per_s)
         << ",\"server_cpu_percent\":" << json_number(row.server_cpu_percent)
         << ",\"server_cpu_us_per_op\":" << json_number(row.server_cpu_us_per_op)
         << ",\"rss_bytes_per_op\":" << json_number(row.rss_bytes_per_op)
         << ",\"notes\":" << json_string(row.notes) << ",\"cdf\":" << cdf_json(row.samples_us)
         << "}";
  }
  file << "\n ],\n \"notes\":[";
  for (size_t i = 0; i < notes_.size(); i++) file << (i == 0 ? "" : ",") << json_string(notes_[i]);
  file << "]}\n";
  return static_cast<bool>(file);
}

}  // namespace hark::bench
