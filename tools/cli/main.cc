// hark: the command-line client (docs/cli.md). Everything but the process's streams,
// environment and signals lives in run_cli() (tools/cli/cli.h).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "hark/core/base/log.h"
#include "hark/tools/cli/args.h"
#include "hark/tools/cli/cli.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/stop.h"

int main(int argc, char** argv) {
  using namespace hark::cli;
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  Environment environment;
  for (const std::string_view name : environment_names) {
    if (const char* value = std::getenv(std::string(name).c_str())) {
      environment.values.emplace(name, value);
    }
  }
  Streams streams{.in = STDIN_FILENO, .out = stdout, .err = stderr};
  Stop stop;
  stop.handle_signals();
  const int status = run_cli(args, environment, streams, stop);
  hark::log::flush();
  return status;
}
