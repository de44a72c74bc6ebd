#include "hark/tests/cli/cli_runner.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <gtest/gtest.h>

#include "hark/tools/cli/cli.h"
#include "hark/tools/cli/output.h"

namespace hark::cli::test {

CliRun run_cli_in_process(const std::vector<std::string>& args, const Environment& environment,
                          const std::string& input, const Stop* stop) {
  int input_pipe[2];
  EXPECT_EQ(::pipe(input_pipe), 0);
  // Small inputs only: the whole input must fit the pipe before the CLI reads it.
  EXPECT_LT(input.size(), 60'000u);
  EXPECT_EQ(::write(input_pipe[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
  ::close(input_pipe[1]);
  char* out_buffer = nullptr;
  char* err_buffer = nullptr;
  size_t out_size = 0;
  size_t err_size = 0;
  Streams streams{.in = input_pipe[0],
                  .out = open_memstream(&out_buffer, &out_size),
                  .err = open_memstream(&err_buffer, &err_size)};
  const std::vector<std::string_view> views(args.begin(), args.end());
  Stop own_stop;
  CliRun run;
  run.status = run_cli(views, environment, streams, stop != nullptr ? *stop : own_stop);
  std::fclose(streams.out);
  std::fclose(streams.err);
  run.out.assign(out_buffer, out_size);
  run.err.assign(err_buffer, err_size);
  std::free(out_buffer);
  std::free(err_buffer);
  ::close(input_pipe[0]);
  return run;
}

}  // namespace hark::cli::test
