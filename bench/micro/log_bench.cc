// Google Benchmark figures for the logger (core/base/log.h): what a caller pays to format one
// line into the queue (the writer thread writes it to /dev/null), text against JSON.
//   BM_log_emit/0  text, a plain message
//   BM_log_emit/1  json, the same message
//   BM_log_emit/2  json, a message that is mostly escapes (quotes, control bytes, bad UTF-8)
// Counters: allocs_per_op (the counting allocator: formatting allocates nothing) and
// dropped_per_op (0: the queue is emptied, untimed, every 512 lines, so every line is formatted).
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <benchmark/benchmark.h>

#include "hark/core/base/log.h"
#include "hark/tests/support/counting_allocator.h"

namespace hark::log {
namespace {

void BM_log_emit(benchmark::State& state) {
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  set_output_fd(null_fd);
  set_format(state.range(0) == 0 ? Format::text : Format::json);
  const std::string plain = "connection 127.0.0.1:40312: login failed: InvalidCredentials";
  const std::string hostile = "user \"x\\y\"\n\t\x01\xff\xfe" + std::string(40, '"');
  const std::string& message = state.range(0) == 2 ? hostile : plain;
  const uint64_t allocations = test::allocations_count();
  const uint64_t dropped = dropped_count();
  uint64_t since_flush = 0;
  for (auto _ : state) {
    internal::emit(Level::info, __FILE__, __LINE__, 0, message);
    if (++since_flush == 512) {
      // Half the queue: let the writer empty it, untimed, so no line is dropped.
      state.PauseTiming();
      flush();
      since_flush = 0;
      state.ResumeTiming();
    }
  }
  const auto per_op = [&](uint64_t count) {
    return benchmark::Counter(static_cast<double>(count) / static_cast<double>(state.iterations()));
  };
  state.counters["allocs_per_op"] = per_op(test::allocations_count() - allocations);
  state.counters["dropped_per_op"] = per_op(dropped_count() - dropped);
  set_format(Format::text);
  set_output_fd(STDERR_FILENO);
  ::close(null_fd);
}
BENCHMARK(BM_log_emit)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace hark::log

BENCHMARK_MAIN();
