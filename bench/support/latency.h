#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace hark::bench {

// Percentiles of a latency sample, in microseconds.
struct Percentiles {
  size_t count = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double p999 = 0;
  double max = 0;
};

// Sorts `samples_us` in place.
inline Percentiles summarize(std::vector<double>& samples_us) {
  Percentiles result;
  result.count = samples_us.size();
  if (samples_us.empty()) return result;
  std::sort(samples_us.begin(), samples_us.end());
  auto at = [&](double quantile) {
    const auto index = static_cast<size_t>(quantile * static_cast<double>(samples_us.size() - 1));
    return samples_us[index];
  };
  result.p50 = at(0.50);
  result.p90 = at(0.90);
  result.p99 = at(0.99);
  result.p999 = at(0.999);
  result.max = samples_us.back();
  return result;
}

inline void print_header() {
  std::printf("%-34s %8s %9s %9s %9s %9s %9s  %s\n", "scenario", "count", "p50 µs", "p90 µs",
              "p99 µs", "p99.9 µs", "max µs", "notes");
}

inline void print_row(const std::string& name, const Percentiles& p, const std::string& notes) {
  std::printf("%-34s %8zu %9.2f %9.2f %9.2f %9.2f %9.2f  %s\n", name.c_str(), p.count, p.p50, p.p90,
              p.p99, p.p999, p.max, notes.c_str());
}

}  // namespace hark::bench
