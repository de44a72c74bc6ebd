#pragma once

#include <span>
#include <string_view>

#include "hark/tools/cli/args.h"
#include "hark/tools/cli/output.h"
#include "hark/tools/cli/stop.h"

namespace hark::cli {

// Runs one `hark` command line and returns the process's exit status (0 done, 1 the server or
// the connection failed, 2 bad arguments; help is 0). `args` is argv without the program
// name. Reads only `environment` (never the process's own), writes only to `streams`; a stop
// request ends waits and loops. main() is this function plus the process's real streams,
// environment and signals, so tests run the whole CLI in-process.
int run_cli(std::span<const std::string_view> args, const Environment& environment,
            Streams& streams, const Stop& stop);

}  // namespace hark::cli
