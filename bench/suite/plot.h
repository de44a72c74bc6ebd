#pragma once

#include <string>

namespace hark::bench {

// Draws PNGs into `out_dir` from the SCENARIO.json files in `json_dir` with gnuplot (from
// Debian's gnuplot-nox; bench/peers/setup.sh installs it): latency_cdf.png (the wake CDF of
// hark, its peers and the echo floor, log x), idle_tradeoff.png (server CPU against probe
// latency, long poll against busy polling) and fanout.png (last woken p50 by K). A plot whose
// JSON is missing is skipped with a note. False if gnuplot is missing or fails.
bool plot(const std::string& json_dir, const std::string& out_dir);
bool gnuplot_installed();

}  // namespace hark::bench
