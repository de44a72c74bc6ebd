#pragma once

#include <string>
#include <vector>

#include "hark/bench/support/latency.h"

namespace hark::bench {

// One measured line of a scenario: a latency sample and, where the scenario has them,
// throughput and server cost. Negative numbers mean "not measured".
struct Row {
  std::string system = "hark";  // hark, redis, nats or echo (the loopback floor).
  std::string name;             // What was measured, e.g. "fanout K=100 last woken".
  std::vector<double> samples_us;
  double msgs_per_s = -1;
  double mb_per_s = -1;
  double server_cpu_percent = -1;    // Of one core, over the row's window.
  double server_cpu_us_per_op = -1;  // Per woken waiter, per message or per poll (see notes).
  double rss_bytes_per_op = -1;      // Per parked poll (idle).
  std::string notes;
  Percentiles latency;  // Filled by Report::add.
};

// The rows of one scenario: printed as a table and written as SCENARIO.json (rows with their
// percentiles and a CDF of their samples, for `hark-bench plot`).
class Report {
 public:
  explicit Report(std::string scenario) : scenario_(std::move(scenario)) {}

  // Summarizes the row's samples and keeps it; returns it for a later ratio.
  const Row& add(Row row);
  // Lines printed under the table (ratios, skips).
  void note(std::string line) { notes_.push_back(std::move(line)); }
  // The first row of `system` whose name starts with `prefix`, or nullptr.
  const Row* find(const std::string& system, const std::string& prefix) const;

  void print() const;
  // Writes DIR/SCENARIO.json; false (and a message) if it cannot.
  bool write_json(const std::string& directory) const;
  const std::string& scenario() const { return scenario_; }

 private:
  std::string scenario_;
  std::vector<Row> rows_;
  std::vector<std::string> notes_;
};

}  // namespace hark::bench
