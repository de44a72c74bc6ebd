#pragma once

#include "hark/core/base/units.h"

namespace hark::cli {

// The request to stop, as a readable descriptor: a pipe that request() (or, after
// handle_signals(), SIGINT or SIGTERM) writes one byte to and nobody reads. A blocked client
// call watches fd() (ClientOptions::cancel_fd) and gives up at once; loops check requested()
// between commands; sleeps end early.
//
// handle_signals() is the one piece of process-wide state in the CLI: a signal handler can
// only reach static storage, so the handler writes to a file-static copy of the pipe's write
// end. Only one Stop may handle signals at a time (asserted); main owns it. The handlers are
// installed with SA_RESETHAND, so a second Ctrl-C kills the process the default way.
// Owned by one thread. Control plane.
class Stop {
 public:
  Stop();
  ~Stop();
  Stop(const Stop&) = delete;
  Stop& operator=(const Stop&) = delete;

  // SIGINT and SIGTERM now request a stop. Restored by the destructor.
  void handle_signals();

  void request();
  bool requested() const;
  // Waits for `duration` or a stop, whichever comes first; false if stopped.
  bool sleep_for(Duration duration) const;

  // Readable once a stop was requested; stays readable.
  int fd() const { return read_fd_; }

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  bool handling_signals_ = false;
};

}  // namespace hark::cli
