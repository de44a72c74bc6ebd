#pragma once

#include <string>
#include <vector>

#include "hark/tools/cli/args.h"
#include "hark/tools/cli/stop.h"

namespace hark::cli::test {

// What one in-process run of the CLI returned and printed.
struct CliRun {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs run_cli() with `args` (argv without the program name), `environment`, `input` on
// stdin (a pipe, closed after it) and memory streams for stdout and stderr. `stop` may be
// requested by another thread to end waits; a fresh one is used when null.
CliRun run_cli_in_process(const std::vector<std::string>& args, const Environment& environment = {},
                          const std::string& input = {}, const Stop* stop = nullptr);

}  // namespace hark::cli::test
