#include "hark/tests/cli/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>

namespace hark::cli::test {
namespace {

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> list;
  for (std::string& text : strings) list.push_back(text.data());
  list.push_back(nullptr);
  return list;
}

}  // namespace

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool ChildProcess::start(const std::vector<std::string>& argv,
                         const std::vector<std::string>& environment, const std::string& input) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return false;
  }
  std::vector<std::string> args = argv;
  std::vector<std::string> variables = environment;
  std::vector<char*> arg_pointers = pointers(args);
  std::vector<char*> variable_pointers = pointers(variables);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execve(arg_pointers[0], arg_pointers.data(), variable_pointers.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  EXPECT_LT(input.size(), 60'000u);  // Must fit the pipe: written before the child reads.
  const ssize_t written = ::write(in[1], input.data(), input.size());
  EXPECT_EQ(written, static_cast<ssize_t>(input.size()));
  ::close(in[1]);
  if (pid_ < 0) ADD_FAILURE() << "fork: " << std::strerror(errno);
  return pid_ > 0;
}

void ChildProcess::send_signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

bool ChildProcess::drain(int timeout_ms) {
  std::array<pollfd, 2> fds{pollfd{.fd = out_fd_, .events = POLLIN, .revents = 0},
                            pollfd{.fd = err_fd_, .events = POLLIN, .revents = 0}};
  if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return out_fd_ >= 0 || err_fd_ >= 0;
  std::array<std::string*, 2> sinks{&result_.out, &result_.err};
  std::array<int*, 2> owners{&out_fd_, &err_fd_};
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    std::array<char, 4096> chunk;
    const ssize_t received = ::read(fds[i].fd, chunk.data(), chunk.size());
    if (received > 0) {
      sinks[i]->append(chunk.data(), static_cast<size_t>(received));
    } else if (received == 0 || errno != EINTR) {
      ::close(*owners[i]);
      *owners[i] = -1;
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

ChildResult ChildProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (pid_ > 0) {
    drain(10);
    const pid_t waited = ::waitpid(pid_, &status, WNOHANG);
    if (waited == pid_) {
      pid_ = -1;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      result_.killed_late = true;
      ::kill(pid_, SIGKILL);
    }
  }
  while (drain(100)) {
  }
  result_.exited = WIFEXITED(status);
  result_.status = result_.exited ? WEXITSTATUS(status) : -1;
  result_.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result_;
}

ChildResult run_child(const std::vector<std::string>& argv,
                      const std::vector<std::string>& environment, const std::string& input,
                      std::chrono::milliseconds timeout) {
  ChildProcess child;
  if (!child.start(argv, environment, input)) return {};
  return child.wait(timeout);
}

}  // namespace hark::cli::test
