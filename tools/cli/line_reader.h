#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hark/tools/cli/stop.h"

namespace hark::cli {

// Reads lines from a descriptor (produce's stdin) in batches: next_batch() returns the lines
// that are complete, waiting for the first one but never for more, so a pipe is read in full
// batches and a person typing sees each line go out at once. A final line without a newline
// counts at the end of the input; blank lines are skipped. Lines keep their bytes, without
// the "\n" (and a "\r" before it). Owned by one thread; the descriptor is borrowed and never
// closed. Control plane.
class LineReader {
 public:
  // `fd` and `stop` must outlive the reader.
  LineReader(int fd, const Stop& stop) : fd_(fd), stop_(stop) {}

  // Appends 1 to `lines_max` lines to `lines` and returns true; or returns false, appending
  // nothing, at the end of the input, on a read error, or when a stop was requested while
  // it waited for the first line.
  bool next_batch(std::vector<std::string>& lines, size_t lines_max);

 private:
  // Moves the complete lines of buffer_ (at most `lines_max`) to `lines`; how many.
  size_t take_lines(std::vector<std::string>& lines, size_t lines_max);
  // Waits for input or a stop (when `block`) and reads what is there; false at the end of
  // the input or on a stop. When not blocking and nothing is there, true with no bytes read.
  bool fill(bool block);

  int fd_;
  const Stop& stop_;
  std::string buffer_;
  bool ended_ = false;
};

}  // namespace hark::cli
