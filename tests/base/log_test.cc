// Covers the logger: line format, per-call-site rate limiting, and that a stalled sink never
// blocks the caller (lines are dropped and counted instead). Output goes to a pipe we read.
#include "hark/core/base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace hark::log {
namespace {

// Redirects the logger into a pipe for the lifetime of the object.
class CapturedLog {
 public:
  CapturedLog() {
    EXPECT_EQ(::pipe2(fds_, O_CLOEXEC), 0);
    set_output_fd(fds_[1]);
  }
  ~CapturedLog() {
    set_output_fd(STDERR_FILENO);
    ::close(fds_[0]);
    ::close(fds_[1]);
  }

  // Everything written so far (after a flush).
  std::string read_all() {
    flush();
    std::string text;
    char buffer[65536];
    ::fcntl(fds_[0], F_SETFL, O_NONBLOCK);
    while (true) {
      const ssize_t n = ::read(fds_[0], buffer, sizeof buffer);
      if (n <= 0) break;
      text.append(buffer, static_cast<size_t>(n));
    }
    ::fcntl(fds_[0], F_SETFL, 0);
    return text;
  }

 private:
  int fds_[2] = {-1, -1};
};

size_t count_lines(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    count++;
  }
  return count;
}

TEST(Log, LineHasTimestampLevelThreadAndSite) {
  CapturedLog captured;
  set_thread_name("shard-7");
  HARK_LOG_WARN("partition %u: %s", 3u, "slow disk");
  const std::string text = captured.read_all();
  set_thread_name("main");
  EXPECT_NE(text.find(" W [shard-7] log_test.cc:"), std::string::npos) << text;
  EXPECT_NE(text.find("partition 3: slow disk\n"), std::string::npos) << text;
  EXPECT_EQ(text.find('Z'), 26u) << text;  // 2026-11-29T17:39:40.123456Z
}

TEST(Log, LevelsBelowTheThresholdAreSkipped) {
  CapturedLog captured;
  set_level(Level::warn);
  HARK_LOG_INFO("not shown");
  HARK_LOG_ERROR("shown");
  set_level(Level::info);
  const std::string text = captured.read_all();
  EXPECT_EQ(text.find("not shown"), std::string::npos);
  EXPECT_NE(text.find("shown"), std::string::npos);
}

TEST(Log, AFloodFromOneSiteIsRateLimited) {
  CapturedLog captured;
  for (int i = 0; i < 1000; i++) HARK_LOG_WARN("bad frame %d", i);
  const std::string text = captured.read_all();
  EXPECT_LE(count_lines(text, "bad frame"), 2 * site_lines_per_second_max);
  EXPECT_GE(count_lines(text, "bad frame"), 1u);
}

TEST(LogSite, ReportsHowManyLinesWereSuppressed) {
  Site site;
  uint64_t suppressed = 0;
  for (uint32_t i = 0; i < site_lines_per_second_max; i++) EXPECT_TRUE(site.admit(100, suppressed));
  EXPECT_FALSE(site.admit(100, suppressed));
  EXPECT_FALSE(site.admit(100, suppressed));
  ASSERT_TRUE(site.admit(101, suppressed));
  EXPECT_EQ(suppressed, 2u);
}

TEST(Log, AStalledSinkDropsLinesInsteadOfBlocking) {
  CapturedLog captured;  // Nobody reads the pipe until the end: the writer thread blocks.
  const uint64_t dropped_before = dropped_count();
  const std::string line(200, 'x');
  for (int i = 0; i < 5000; i++) internal::emit(Level::info, __FILE__, __LINE__, 0, line);
  EXPECT_GT(dropped_count(),
            dropped_before);  // Reaching here at all shows the caller never blocked.
  std::string text;
  for (int i = 0; i < 100 && text.find("lines dropped") == std::string::npos; i++) {
    text += captured.read_all();
  }
  EXPECT_NE(text.find("lines dropped (queue full)"), std::string::npos);
}

TEST(Log, ASinkWhoseReaderIsGoneDoesNotKillTheProcess) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[0]);  // Writes now fail with EPIPE (and would raise SIGPIPE).
  set_output_fd(fds[1]);
  HARK_LOG_ERROR("nobody reads this");
  flush();
  set_output_fd(STDERR_FILENO);
  ::close(fds[1]);
  SUCCEED() << "still alive";
}

TEST(Log, ParsesLevelNames) {
  EXPECT_EQ(parse_level("debug"), Level::debug);
  EXPECT_EQ(parse_level("warn"), Level::warn);
  EXPECT_EQ(parse_level("loud"), std::nullopt);
}

}  // namespace
}  // namespace hark::log
