#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>

namespace hark::cli::test {

// How a child ended and what it printed.
struct ChildResult {
  bool exited = false;  // Returned from main: `status` is its exit status.
  int status = -1;
  int signal = 0;            // The signal that ended it otherwise.
  bool killed_late = false;  // Still running when the wait ran out: SIGKILLed.
  std::string out;
  std::string err;
};

// One child process (the hark binary, for the CLI's end-to-end tests): `input` on its stdin
// (then closed), stdout and stderr collected, and exactly `environment` as its environment, so
// the test process's own HARK_* or IGGY_* variables never leak in. The child gets SIGKILL if
// the test's thread dies. Owned by one thread. Not thread-safe.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts argv[0] with `argv`; false (and a test failure) if it cannot.
  [[nodiscard]] bool start(const std::vector<std::string>& argv,
                           const std::vector<std::string>& environment,
                           const std::string& input = {});

  void send_signal(int signal);

  // Collects output until the child exits or `timeout` passes (then SIGKILL).
  ChildResult wait(std::chrono::milliseconds timeout);

 private:
  // Reads what the pipes hold now; false once both are closed.
  bool drain(int timeout_ms);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  ChildResult result_;
};

// Starts, then waits: for commands that end on their own.
ChildResult run_child(const std::vector<std::string>& argv,
                      const std::vector<std::string>& environment, const std::string& input = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace hark::cli::test
