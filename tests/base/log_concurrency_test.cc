// Covers the logger's lock-free queue under concurrent producers (run under ThreadSanitizer):
// every line that was not counted as dropped arrives whole, exactly once.
#include <fcntl.h>
#include <unistd.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/log.h"

namespace hark::log {
namespace {

TEST(LogConcurrency, EveryLineFromManyThreadsArrivesWholeOnce) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::string text;
  std::thread reader([&] {
    char buffer[65536];
    while (true) {
      const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
      if (n <= 0) break;
      text.append(buffer, static_cast<size_t>(n));
    }
  });
  set_output_fd(fds[1]);
  const uint64_t dropped_before = dropped_count();

  constexpr int threads_count = 4;
  constexpr int lines_per_thread = 2000;
  std::vector<std::thread> producers;
  for (int t = 0; t < threads_count; t++) {
    producers.emplace_back([t] {
      for (int i = 0; i < lines_per_thread; i++) {
        const std::string line = "line " + std::to_string(t) + "." + std::to_string(i) + " end";
        internal::emit(Level::info, __FILE__, __LINE__, 0, line);
      }
    });
  }
  for (std::thread& producer : producers) producer.join();
  set_output_fd(STDERR_FILENO);  // Flushes first.
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);

  std::set<std::string> seen;
  size_t start = 0;
  while ((start = text.find("line ", start)) != std::string::npos) {
    const size_t end = text.find(" end\n", start);
    ASSERT_NE(end, std::string::npos) << "torn line at " << start;
    EXPECT_TRUE(seen.insert(text.substr(start, end - start)).second) << "duplicate line";
    start = end;
  }
  const uint64_t dropped = dropped_count() - dropped_before;
  EXPECT_EQ(seen.size() + dropped, static_cast<size_t>(threads_count * lines_per_thread));
}

}  // namespace
}  // namespace hark::log
