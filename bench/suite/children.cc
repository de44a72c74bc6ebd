#include "hark/bench/suite/children.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

#include <sys/prctl.h>

namespace hark::bench {
namespace {

constexpr int slots = 16;
std::atomic<pid_t> children[slots];
std::atomic<bool> stop_requested{false};

// Async-signal-safe: atomics, kill(), signal() and alarm() only.
void on_signal(int signal_number) {
  stop_requested.store(true);
  for (auto& child : children) {
    const pid_t pid = child.load();
    if (pid > 0) ::kill(pid, SIGKILL);
  }
  ::signal(signal_number, SIG_DFL);  // A second one ends hark-bench at once.
  ::alarm(20);                       // SIGALRM's default action, if unwinding hangs.
}

}  // namespace

void install_child_cleanup() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  ::sigemptyset(&action.sa_mask);
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    ::sigaction(signal_number, &action, nullptr);
  }
}

bool interrupted() { return stop_requested.load(); }

void register_child(pid_t pid) {
  for (auto& child : children) {
    pid_t empty = 0;
    if (child.compare_exchange_strong(empty, pid)) return;
  }
}

void unregister_child(pid_t pid) {
  for (auto& child : children) {
    pid_t expected = pid;
    if (child.compare_exchange_strong(expected, 0)) return;
  }
}

void prepare_child(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace hark::bench
