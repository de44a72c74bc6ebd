#include "hark/bench/suite/plot.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <sys/wait.h>

#include "hark/bench/suite/json.h"

namespace hark::bench {
namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// Writes a row's CDF points ("latency_us fraction" per line); false if it has none.
bool write_cdf(const Json& row, const std::string& path) {
  std::ofstream file(path, std::ios::trunc);
  size_t points = 0;
  for (const Json& point : row["cdf"].items) {
    if (point.items.size() != 2) continue;
    file << std::max(point.items[0].number, 0.1) << ' ' << point.items[1].number << '\n';
    points++;
  }
  return points > 0 && static_cast<bool>(file);
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The wake CDFs: peers.json when the peers ran (hark, redis, nats and echo from one run), else
// wake.json.
std::string cdf_plot(const std::string& json_dir, const std::string& out_dir) {
  std::optional<Json> source = read_json_file(json_dir + "/peers.json");
  if (!source) source = read_json_file(json_dir + "/wake.json");
  if (!source) return "";
  std::string lines;
  int index = 0;
  for (const Json& row : (*source)["rows"].items) {
    const std::string system = row["system"].text;
    const std::string name = row["name"].text;
    if (!starts_with(name, "wake") && system != "echo") continue;
    const std::string data = out_dir + "/cdf_" + std::to_string(index++) + ".dat";
    if (!write_cdf(row, data)) continue;
    lines += (lines.empty() ? "plot " : ", ") + quoted(data) +
             " using 1:2 with lines linewidth 2 title " + quoted(system + ": " + name);
  }
  if (lines.empty()) return "";
  return "set output " + quoted(out_dir + "/latency_cdf.png") +
         "\nset title 'Wake-up latency CDF (" + (*source)["scenario"].text +
         " scenario; 1 ms idle gap)'\nset logscale x\nset xlabel 'latency (µs, log)'\n"
         "set ylabel 'fraction of messages'\nset key bottom right\nset grid\nset yrange [0:1]\n"
         "set xrange [*:*]\n" +
         lines + "\nunset logscale\nset autoscale xy\n";
}

// Server CPU against probe latency: one point per idle row (p50, with p99 as the bar's top).
std::string idle_plot(const std::string& json_dir, const std::string& out_dir) {
  const std::optional<Json> idle = read_json_file(json_dir + "/idle.json");
  if (!idle) return "";
  const std::string data = out_dir + "/idle.dat";
  std::ofstream file(data, std::ios::trunc);
  size_t points = 0;
  for (const Json& row : (*idle)["rows"].items) {
    const double cpu = row["server_cpu_percent"].number_or(-1);
    const double p50 = row["p50_us"].number_or(0);
    if (cpu < 0 || p50 <= 0) continue;
    file << std::max(cpu, 0.01) << ' ' << p50 << ' ' << std::max(row["p99_us"].number_or(p50), p50)
         << " \"" << row["name"].text << "\"\n";
    points++;
  }
  if (points == 0) return "";
  return "set autoscale xy\nset output " + quoted(out_dir + "/idle_tradeoff.png") +
         "\nset title 'Idle consumers: harkd CPU with no traffic vs delivery latency (p50, bar to "
         "p99)'\nset logscale xy\nset xlabel 'harkd CPU while idle (% of one core, log)'\n"
         "set ylabel 'latency of a message to all N consumers (µs, log)'\nset key off\nset grid\n"
         "set xrange [0.005:2000]\n"
         "plot " +
         quoted(data) + " using 1:2:2:3 with yerrorbars pointtype 7 pointsize 1.5, " +
         quoted(data) + " using 1:2:4 with labels offset 1,0.8 left font ',9'\nunset logscale\n";
}

// Last-woken p50 by K: hark's fanout rows, and the peers' from peers.json.
std::string fanout_plot(const std::string& json_dir, const std::string& out_dir) {
  std::optional<Json> source = read_json_file(json_dir + "/peers.json");
  if (!source) source = read_json_file(json_dir + "/fanout.json");
  if (!source) return "";
  std::string lines;
  for (const std::string system : {"hark", "redis", "nats"}) {
    const std::string data = out_dir + "/fanout_" + system + ".dat";
    std::ofstream file(data, std::ios::trunc);
    size_t points = 0;
    for (const Json& row : (*source)["rows"].items) {
      const std::string name = row["name"].text;
      if (row["system"].text != system || !starts_with(name, "fanout K=") ||
          name.find("last") == std::string::npos) {
        continue;
      }
      file << std::atof(name.c_str() + 9) << ' ' << row["p50_us"].number_or(0) << ' '
           << row["p99_us"].number_or(0) << '\n';
      points++;
    }
    if (points == 0) continue;
    lines += (lines.empty() ? "plot " : ", ") + quoted(data) +
             " using 1:2 with linespoints linewidth 2 title " + quoted(system + " p50") + ", " +
             quoted(data) + " using 1:3 with linespoints dashtype 2 title " +
             quoted(system + " p99");
  }
  if (lines.empty()) return "";
  return "set autoscale xy\nset output " + quoted(out_dir + "/fanout.png") +
         "\nset title 'Fan-out: one send to K parked consumers, last one woken'\nset logscale xy\n"
         "set xlabel 'K consumers (log)'\nset ylabel 'send to last woken (µs, log)'\n"
         "set key top left\nset grid\n" +
         lines + "\nunset logscale\n";
}

}  // namespace

bool gnuplot_installed() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

bool plot(const std::string& json_dir, const std::string& out_dir) {
  if (!gnuplot_installed()) {
    std::fprintf(stderr, "plot: gnuplot not installed (run bench/peers/setup.sh)\n");
    return false;
  }
  std::string script = "set terminal pngcairo size 960,600 noenhanced font ',10'\n";
  const std::pair<const char*, std::string> parts[] = {
      {"latency_cdf.png (needs peers.json or wake.json)", cdf_plot(json_dir, out_dir)},
      {"idle_tradeoff.png (needs idle.json)", idle_plot(json_dir, out_dir)},
      {"fanout.png (needs peers.json or fanout.json)", fanout_plot(json_dir, out_dir)}};
  bool any = false;
  for (const auto& [name, part] : parts) {
    if (part.empty()) {
      std::printf("plot: skipped %s\n", name);
      continue;
    }
    script += part;
    any = true;
  }
  if (!any) return false;
  const std::string script_path = out_dir + "/plots.gnuplot";
  std::ofstream(script_path, std::ios::trunc) << script;
  const int status = std::system(("gnuplot " + quoted(script_path)).c_str());
  if (status != 0) {
    std::fprintf(stderr, "plot: gnuplot failed (status %d); script: %s\n", status,
                 script_path.c_str());
    return false;
  }
  std::printf("plot: wrote PNGs to %s\n", out_dir.c_str());
  return true;
}

}  // namespace hark::bench
