// Covers LineReader, produce's stdin (tools/cli/line_reader.h), over a pipe: complete lines
// come in batches of at most the asked size, a line that is waiting alone goes out without
// waiting for more, CRLF, blank lines and a last line without a newline are handled, and a
// stop ends a wait for input.
#include "hark/tools/cli/line_reader.h"

#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hark::cli {
namespace {

class Pipe {
 public:
  Pipe() { EXPECT_EQ(::pipe(fds_), 0); }
  ~Pipe() {
    ::close(fds_[0]);
    close_writer();
  }
  void write(std::string_view text) {
    ASSERT_EQ(::write(fds_[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void close_writer() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }
  int reader() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
};

TEST(LineReader, BatchesHoldAtMostTheAskedNumberOfLines) {
  Pipe pipe;
  Stop stop;
  pipe.write("one\r\n\ntwo\n\nthree");
  pipe.close_writer();
  LineReader reader(pipe.reader(), stop);
  std::vector<std::string> lines;
  ASSERT_TRUE(reader.next_batch(lines, 2));
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two"}));
  lines.clear();
  ASSERT_TRUE(reader.next_batch(lines, 10));
  EXPECT_EQ(lines, (std::vector<std::string>{"three"}));  // Blank lines are skipped.
  lines.clear();
  EXPECT_FALSE(reader.next_batch(lines, 10));
  EXPECT_TRUE(lines.empty());
}

TEST(LineReader, AWaitingLineGoesOutWithoutWaitingForMore) {
  Pipe pipe;  // The writer stays open, as a person at a terminal would.
  Stop stop;
  pipe.write("typed\n");
  LineReader reader(pipe.reader(), stop);
  std::vector<std::string> lines;
  ASSERT_TRUE(reader.next_batch(lines, 100));
  EXPECT_EQ(lines, (std::vector<std::string>{"typed"}));
}

TEST(LineReader, AStopEndsTheWaitForInput) {
  Pipe pipe;
  Stop stop;
  stop.request();
  LineReader reader(pipe.reader(), stop);
  std::vector<std::string> lines;
  EXPECT_FALSE(reader.next_batch(lines, 100));
  EXPECT_TRUE(lines.empty());
}

TEST(Stop, SleepEndsEarlyOnlyWhenStopped) {
  Stop stop;
  EXPECT_FALSE(stop.requested());
  EXPECT_TRUE(stop.sleep_for(std::chrono::milliseconds(1)));
  stop.request();
  EXPECT_TRUE(stop.requested());
  EXPECT_FALSE(stop.sleep_for(std::chrono::hours(1)));
}

}  // namespace
}  // namespace hark::cli
