#include "hark/core/base/assert.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace hark::internal {

void assert_fail(const char* file, int line, const char* expression) {
  // Written straight to stderr, not through the logger: the process is about to die and the
  // logger's writer thread may never run again.
  char line_buffer[512];
  const int length = std::snprintf(line_buffer, sizeof line_buffer, "%s:%d: assertion failed: %s\n",
                                   file, line, expression);
  if (length > 0) {
    const auto size = static_cast<size_t>(length) < sizeof line_buffer ? static_cast<size_t>(length)
                                                                       : sizeof line_buffer - 1;
    [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line_buffer, size);
  }
  std::abort();
}

}  // namespace hark::internal
