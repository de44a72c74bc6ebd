#include "hark/tests/e2e/harkd_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "hark/tests/support/wait_until.h"

namespace hark::test {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view ready_prefix = "harkd listening on 127.0.0.1:";

std::string errno_text(std::string_view what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// A pidfd (Linux 5.3) turns "wait for the child, with a timeout" into one poll(); -1 if the
// kernel has none, and wait_exit() falls back to polling waitpid.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

int milliseconds_until(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

ProcessExit exit_of(int wait_status) {
  ProcessExit exit;
  if (WIFEXITED(wait_status)) {
    exit.exited = true;
    exit.code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    exit.signal = WTERMSIG(wait_status);
  }
  return exit;
}

// Runs in the forked child, before exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const std::vector<char*>& argv, int stdout_fd, int stderr_fd,
                             int stdin_fd, pid_t parent, uint64_t open_files_max) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (open_files_max > 0) {
    const rlimit limit{.rlim_cur = open_files_max, .rlim_max = open_files_max};
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(126);
  }
  if (::getppid() != parent) ::_exit(127);  // The parent died before prctl took effect.
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(stdin_fd, STDIN_FILENO);
  ::dup2(stdout_fd, STDOUT_FILENO);
  ::dup2(stderr_fd, STDERR_FILENO);
  ::execv(argv[0], argv.data());
  constexpr std::string_view message = "harkd_process: execv failed\n";
  (void)!::write(STDERR_FILENO, message.data(), message.size());
  ::_exit(127);
}

}  // namespace

std::string describe(const ProcessExit& exit) {
  std::string text = exit.exited ? "exited " + std::to_string(exit.code)
                                 : "killed by signal " + std::to_string(exit.signal);
  if (exit.killed_late) text += " (SIGKILLed after the stop wait ran out)";
  return text;
}

HarkdProcess::~HarkdProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  if (drainer_.joinable()) drainer_.join();
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (pidfd_ >= 0) ::close(pidfd_);
  // HARK_KEEP_DIRS=1 keeps the data and stderr for a post-mortem (tests/README.md).
  if (!root_directory_.empty() && ::getenv("HARK_KEEP_DIRS") == nullptr) {
    std::error_code ignored;
    std::filesystem::remove_all(root_directory_, ignored);
  } else if (!root_directory_.empty()) {
    std::fprintf(stderr, "harkd directory kept: %s\n", root_directory_.c_str());
  }
}

bool HarkdProcess::start(const Options& options) {
  options_ = options;
  const char* tmp = ::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hark-e2e-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return fail_start(errno_text("mkdtemp " + pattern));
  root_directory_ = pattern;
  data_directory_ =
      options.data_directory.empty() ? root_directory_ + "/data" : options.data_directory;
  stderr_path_ = root_directory_ + "/harkd.stderr";
  if (options.data_directory.empty() && ::mkdir(data_directory_.c_str(), 0700) != 0) {
    return fail_start(errno_text("mkdir"));
  }

  std::vector<std::string> args = {options.harkd_path,
                                   "--address",
                                   "127.0.0.1:0",
                                   "--data-dir",
                                   data_directory_,
                                   "--shards",
                                   std::to_string(options.shards_count)};
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return fail_start(errno_text("pipe2"));
  const int stderr_fd =
      ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int stdin_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = (stderr_fd >= 0 && stdin_fd >= 0) ? ::fork() : -1;
  if (pid == 0) exec_child(argv, pipe_fds[1], stderr_fd, stdin_fd, parent, options.open_files_max);
  ::close(pipe_fds[1]);
  if (stderr_fd >= 0) ::close(stderr_fd);
  if (stdin_fd >= 0) ::close(stdin_fd);
  stdout_fd_ = pipe_fds[0];
  if (pid < 0) return fail_start(errno_text("open or fork"));
  pid_ = pid;
  pidfd_ = open_pidfd(pid);
  if (!read_ready_line(options.ready_timeout)) return false;
  drainer_ = std::thread([this] { drain_stdout(); });
  return true;
}

bool HarkdProcess::read_ready_line(std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  std::string line;
  while (true) {
    pollfd fds[2] = {{.fd = stdout_fd_, .events = POLLIN, .revents = 0},
                     {.fd = pidfd_, .events = POLLIN, .revents = 0}};
    const int ready = ::poll(fds, pidfd_ >= 0 ? 2 : 1, milliseconds_until(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return fail_start(errno_text("poll"));
    if (ready == 0) {
      return fail_start("no ready line within " + std::to_string(timeout.count()) +
                        " ms; stdout so far: '" + line + "'");
    }
    if ((fds[0].revents & (POLLIN | POLLHUP)) != 0) {
      char buffer[256];
      const ssize_t got = ::read(stdout_fd_, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        return fail_start("harkd closed stdout before its ready line; stdout: '" + line + "'");
      }
      line.append(buffer, static_cast<size_t>(got));
      const size_t end = line.find('\n');
      if (end == std::string::npos) continue;
      stdout_seen_ = line;
      const std::string first = line.substr(0, end);
      if (first.rfind(ready_prefix, 0) != 0) {
        return fail_start("unexpected first stdout line: '" + first + "'");
      }
      const std::string digits = first.substr(ready_prefix.size());
      char* rest = nullptr;
      const unsigned long port = std::strtoul(digits.c_str(), &rest, 10);
      if (digits.empty() || *rest != '\0' || port == 0 || port > 65535) {
        return fail_start("malformed port in ready line: '" + first + "'");
      }
      port_ = static_cast<uint16_t>(port);
      address_ = "127.0.0.1:" + std::to_string(port_);
      return true;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      return fail_start("harkd exited before its ready line; stdout: '" + line + "'");
    }
  }
}

uint16_t HarkdProcess::metrics_port() const {
  constexpr std::string_view prefix = "\nharkd metrics on 127.0.0.1:";
  const size_t at = stdout_seen_.find(prefix);
  if (at == std::string::npos) return 0;
  const unsigned long port = std::strtoul(stdout_seen_.c_str() + at + prefix.size(), nullptr, 10);
  return port <= 65535 ? static_cast<uint16_t>(port) : 0;
}

bool HarkdProcess::fail_start(std::string text) {
  error_text_ = std::move(text);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    error_text_ += " (harkd " + describe(exit_of(status)) + ")";
    pid_ = -1;
  }
  return false;
}

ProcessExit HarkdProcess::stop() {
  if (pid_ <= 0) return ProcessExit{};
  ::kill(pid_, SIGTERM);
  ProcessExit exit = wait_exit(options_.stop_timeout);
  pid_ = -1;
  if (drainer_.joinable()) drainer_.join();
  return exit;
}

void HarkdProcess::signal(int signal_number) {
  if (pid_ <= 0) return;
  ::kill(pid_, signal_number);
  if (signal_number != SIGKILL) return;
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  if (drainer_.joinable()) drainer_.join();
}

ProcessExit HarkdProcess::wait_exit(std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  int status = 0;
  if (pidfd_ >= 0) {
    pollfd fd = {.fd = pidfd_, .events = POLLIN, .revents = 0};
    int ready = 0;
    do {
      ready = ::poll(&fd, 1, milliseconds_until(deadline));
    } while (ready < 0 && errno == EINTR);
    if (ready > 0 && ::waitpid(pid_, &status, 0) == pid_) return exit_of(status);
  } else {
    // No pidfd: poll waitpid, bounded by the same deadline.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (wait_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, left,
                   std::chrono::milliseconds(5))) {
      return exit_of(status);
    }
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  ProcessExit exit = exit_of(status);
  exit.killed_late = true;
  return exit;
}

void HarkdProcess::drain_stdout() {
  // harkd prints one line; anything later goes to a file next to stderr's, so a chatty harkd
  // never blocks on a full pipe and what it said stays readable.
  const std::string path = root_directory_ + "/harkd.stdout";
  const int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out >= 0) (void)!::write(out, stdout_seen_.data(), stdout_seen_.size());
  char buffer[4096];
  while (true) {
    const ssize_t got = ::read(stdout_fd_, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (out >= 0) (void)!::write(out, buffer, static_cast<size_t>(got));
  }
  if (out >= 0) ::close(out);
}

namespace {

std::optional<uint64_t> stats_field(const std::string& line, const std::string& name) {
  const size_t at = line.find(" " + name + "=");
  if (at == std::string::npos) return std::nullopt;
  return std::stoull(line.substr(at + name.size() + 2));
}

// "shard_connections=a/b": one count per shard; empty if the field is missing.
std::vector<uint32_t> shard_counts(const std::string& line) {
  std::vector<uint32_t> counts;
  const std::string key = " shard_connections=";
  const size_t at = line.find(key);
  if (at == std::string::npos) return counts;
  size_t position = at + key.size();
  while (position < line.size() && std::isdigit(static_cast<unsigned char>(line[position]))) {
    size_t used = 0;
    counts.push_back(static_cast<uint32_t>(std::stoul(line.substr(position), &used)));
    position += used;
    if (position < line.size() && line[position] == '/') position++;
  }
  return counts;
}

std::optional<HarkdStats> parse_stats(const std::string& line) {
  HarkdStats stats;
  const std::pair<const char*, uint64_t HarkdStats::*> fields[] = {
      {"connections", &HarkdStats::connections},
      {"parked_now", &HarkdStats::parked_now},
      {"parked", &HarkdStats::parked},
      {"woken", &HarkdStats::woken},
      {"timed_out", &HarkdStats::timed_out},
      {"cancelled", &HarkdStats::cancelled},
      {"aborted", &HarkdStats::aborted},
      {"rejected_full", &HarkdStats::rejected_full},
      {"reparked", &HarkdStats::reparked},
      {"conditions_evaluated", &HarkdStats::conditions_evaluated},
      {"condition_reports", &HarkdStats::condition_reports},
      {"migrations", &HarkdStats::migrations},
      {"migrations_refused", &HarkdStats::refused},
      {"refused_per_address", &HarkdStats::refused_per_address},
      {"evicted", &HarkdStats::evicted},
      {"login_timeouts", &HarkdStats::login_timeouts},
      {"write_timeouts", &HarkdStats::write_timeouts},
      {"refused_no_files", &HarkdStats::refused_no_files},
      {"heartbeat_evictions", &HarkdStats::heartbeat_evictions},
      {"receive_paused", &HarkdStats::receive_paused},
      {"tls_failures", &HarkdStats::tls_failures},
  };
  for (const auto& [name, member] : fields) {
    const std::optional<uint64_t> value = stats_field(line, name);
    if (!value.has_value()) return std::nullopt;
    stats.*member = *value;
  }
  const std::pair<const char*, uint64_t HarkdStats::*> cluster_fields[] = {
      {"links_up", &HarkdStats::links_up},
      {"link_handshakes_refused", &HarkdStats::link_handshakes_refused},
      {"link_tls_failures", &HarkdStats::link_tls_failures},
      {"forwarded", &HarkdStats::forwarded},
      {"forwarded_executed", &HarkdStats::forwarded_executed},
      {"links_dropped", &HarkdStats::links_dropped},
      {"forwarded_replayed", &HarkdStats::forwarded_replayed},
      {"forwarded_forgotten", &HarkdStats::forwarded_forgotten},
      {"forward_unavailable", &HarkdStats::forward_unavailable},
      {"forwarded_not_hosted", &HarkdStats::forwarded_not_hosted},
      {"rerouted", &HarkdStats::rerouted},
      {"view_assignments", &HarkdStats::view_assignments},
      {"view_nodes", &HarkdStats::view_nodes},
  };
  for (const auto& [name, member] : cluster_fields) {
    stats.*member = stats_field(line, name).value_or(0);
  }
  stats.by_shard = shard_counts(line);
  if (stats.by_shard.empty()) return std::nullopt;
  return stats;
}

// The first whole stats line harkd wrote to `path` past byte `from`; empty if none yet.
std::string stats_line_after(const std::string& path, uintmax_t from) {
  std::ifstream file(path);
  file.seekg(static_cast<std::streamoff>(from));
  for (std::string line; std::getline(file, line) && !file.eof();) {
    const size_t at = line.find("stats: ");
    if (at != std::string::npos) return line.substr(at);
  }
  return {};
}

}  // namespace

uint32_t HarkdStats::total() const {
  uint32_t sum = 0;
  for (const uint32_t count : by_shard) sum += count;
  return sum;
}

std::ostream& operator<<(std::ostream& out, const HarkdStats& stats) {
  out << "connections=" << stats.connections << " parked_now=" << stats.parked_now
      << " parked=" << stats.parked << " woken=" << stats.woken << " timed_out=" << stats.timed_out
      << " cancelled=" << stats.cancelled << " aborted=" << stats.aborted
      << " rejected_full=" << stats.rejected_full << " reparked=" << stats.reparked
      << " conditions_evaluated=" << stats.conditions_evaluated
      << " condition_reports=" << stats.condition_reports << " migrations=" << stats.migrations
      << " migrations_refused=" << stats.refused << " login_timeouts=" << stats.login_timeouts
      << " heartbeat_evictions=" << stats.heartbeat_evictions;
  return out;
}

std::optional<HarkdStats> HarkdProcess::stats() {
  std::error_code error;
  const uintmax_t from = std::filesystem::file_size(stderr_path_, error);
  if (error) return std::nullopt;
  const auto deadline = SteadyClock::now() + std::chrono::seconds(5);
  std::string line;
  while (line.empty() && SteadyClock::now() < deadline) {
    signal(SIGUSR1);
    // Not out within a second: the rate limit dropped it (a new second admits the next one).
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    wait_until(
        [&] {
          line = stats_line_after(stderr_path_, from);
          return !line.empty();
        },
        std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(1100)));
  }
  return line.empty() ? std::nullopt : parse_stats(line);
}

bool wait_until_parked(HarkdProcess& harkd, uint64_t count) {
  return wait_for_stats(harkd,
                        [count](const HarkdStats& stats) { return stats.parked_now == count; });
}

std::string HarkdProcess::stderr_tail(size_t lines) const {
  std::ifstream file(stderr_path_);
  std::vector<std::string> all;
  for (std::string line; std::getline(file, line);) all.push_back(std::move(line));
  std::ostringstream tail;
  const size_t from = all.size() > lines ? all.size() - lines : 0;
  for (size_t i = from; i < all.size(); i++) tail << all[i] << '\n';
  return tail.str();
}

}  // namespace hark::test
