#include "hark/bench/peers/peer_process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "hark/bench/suite/children.h"
#include "hark/bench/suite/net.h"

namespace hark::bench {
namespace {

using namespace std::chrono_literals;

bool accepts_connections(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  const bool ok =
      fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

}  // namespace

PeerProcess::~PeerProcess() {
  stop();
  if (!directory_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
}

std::string PeerProcess::find_program(const std::string& name) {
  std::string path = ::getenv("PATH") != nullptr ? ::getenv("PATH") : "";
  path += ":/usr/sbin:/usr/bin:/usr/local/bin";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

bool PeerProcess::make_directory(const std::string& name) {
  name_ = name;
  const char* tmp = ::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                        "/hark-bench-" + name + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "%s: mkdtemp: %s\n", name.c_str(), std::strerror(errno));
    return false;
  }
  directory_ = pattern;
  return true;
}

uint16_t PeerProcess::pick_port() { return free_loopback_port(); }

bool PeerProcess::spawn(const std::vector<std::string>& args, uint16_t port) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& arg : copy) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const std::string log = directory_ + "/server.log";
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) {
    std::fprintf(stderr, "%s: cannot open %s\n", name_.c_str(), log.c_str());
    return false;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {  // Only async-signal-safe calls until exec.
    prepare_child(parent);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) {
    std::fprintf(stderr, "%s: fork: %s\n", name_.c_str(), std::strerror(errno));
    return false;
  }
  pid_ = pid;
  register_child(pid);
  // Bounded: 15 s for the port to accept, checking every 10 ms that the child still runs.
  for (int i = 0; i < 1500; i++) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      unregister_child(pid_);
      pid_ = -1;
      std::fprintf(stderr, "%s exited before listening on %u:\n%s", name_.c_str(), port,
                   log_tail().c_str());
      return false;
    }
    if (accepts_connections(port)) {
      port_ = port;
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  std::fprintf(stderr, "%s did not listen on %u within 15 s:\n%s", name_.c_str(), port,
               log_tail().c_str());
  stop();
  return false;
}

void PeerProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 1000 && !exited; i++) {  // 10 s.
    exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
    if (!exited) std::this_thread::sleep_for(10ms);
  }
  if (!exited) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  unregister_child(pid_);
  pid_ = -1;
}

std::string PeerProcess::log_tail() const {
  std::ifstream file(directory_ + "/server.log");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(file, line)) lines.push_back(line);
  std::string tail;
  for (size_t i = lines.size() > 20 ? lines.size() - 20 : 0; i < lines.size(); i++) {
    tail += "  " + lines[i] + "\n";
  }
  return tail;
}

}  // namespace hark::bench
