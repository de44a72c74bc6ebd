#include "hark/tools/cli/line_reader.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <array>

namespace hark::cli {

size_t LineReader::take_lines(std::vector<std::string>& lines, size_t lines_max) {
  size_t taken = 0;
  size_t start = 0;
  while (taken < lines_max) {
    const size_t end = buffer_.find('\n', start);
    if (end == std::string::npos) break;
    size_t length = end - start;
    if (length > 0 && buffer_[end - 1] == '\r') --length;
    if (length > 0) {
      lines.push_back(buffer_.substr(start, length));
      ++taken;
    }
    start = end + 1;
  }
  buffer_.erase(0, start);
  if (taken < lines_max && ended_ && !buffer_.empty()) {
    lines.push_back(std::move(buffer_));  // The last line had no newline.
    buffer_.clear();
    ++taken;
  }
  return taken;
}

bool LineReader::fill(bool block) {
  std::array<pollfd, 2> waiting{pollfd{.fd = fd_, .events = POLLIN, .revents = 0},
                                pollfd{.fd = stop_.fd(), .events = POLLIN, .revents = 0}};
  int ready;
  do {
    ready = ::poll(waiting.data(), waiting.size(), block ? -1 : 0);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0 || waiting[1].revents != 0) return false;  // Stopped.
  if (waiting[0].revents == 0) return true;                // Nothing waiting, not blocking.
  std::array<char, 64 * 1024> chunk;
  ssize_t received;
  do {
    received = ::read(fd_, chunk.data(), chunk.size());
  } while (received < 0 && errno == EINTR);
  if (received <= 0) {
    ended_ = true;  // End of input, or an error that ends it all the same.
    return true;
  }
  buffer_.append(chunk.data(), static_cast<size_t>(received));
  return true;
}

bool LineReader::next_batch(std::vector<std::string>& lines, size_t lines_max) {
  size_t taken = take_lines(lines, lines_max);
  // Block for the first line; after it, take only what is already there.
  while (taken == 0 && !ended_) {
    if (!fill(/*block=*/true)) return false;
    taken += take_lines(lines, lines_max);
  }
  while (taken > 0 && taken < lines_max && !ended_) {
    const size_t before = buffer_.size();
    if (!fill(/*block=*/false)) break;               // Stopped: send what was read.
    if (buffer_.size() == before && !ended_) break;  // Nothing more right now.
    taken += take_lines(lines, lines_max - taken);
  }
  return taken > 0;
}

}  // namespace hark::cli
