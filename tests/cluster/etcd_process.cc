#include "etcd_process.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <vector>

#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "hark/server/cluster/etcd_gateway.h"
#include "hark/tests/support/wait_until.h"

namespace hark::test {
namespace {

// A port the kernel just handed out and released (etcd binds it a moment later).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

EtcdProcess::~EtcdProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (!directory_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
}

std::string EtcdProcess::etcdctl(const std::string& arguments, bool as_root) {
  const std::string tls =
      tls_ == nullptr
          ? ""
          : " --cacert=" + tls_->ca + " --cert=" + tls_->client_cert + " --key=" + tls_->client_key;
  const std::string command = "ETCDCTL_API=3 etcdctl --endpoints=" + url_ + tls +
                              (as_root ? " --user=root:root-secret " : " ") + arguments +
                              " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0 ? "" : "failed: " + command;
}

std::vector<std::string> EtcdProcess::arguments() const {
  const std::string& client = url_;
  const std::string& peer = peer_url_;
  std::vector<std::string> args = {"/usr/bin/etcd",
                                   "--name",
                                   "t",
                                   "--data-dir",
                                   directory_ + "/data",
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   "t=" + peer,
                                   "--logger",
                                   "zap",
                                   "--log-outputs",
                                   directory_ + "/etcd.log"};
  if (tls_ != nullptr) {
    args.insert(args.end(), {"--cert-file", tls_->cert, "--key-file", tls_->key,
                             "--trusted-ca-file", tls_->ca, "--client-cert-auth"});
  }
  return args;
}

std::string EtcdProcess::start(const Tls* tls) {
  tls_ = tls;
  std::string pattern = (std::filesystem::temp_directory_path() / "hark-etcd-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return "mkdtemp failed";
  directory_ = pattern;
  // The ports are free when chosen, but another test's process may bind one before etcd does;
  // etcd then exits at once, and a fresh pair on a fresh data directory is tried.
  for (int attempt = 1;; attempt++) {
    url_ = (tls == nullptr ? "http://" : "https://") + std::string("127.0.0.1:") +
           std::to_string(free_port());
    peer_url_ = "http://127.0.0.1:" + std::to_string(free_port());
    if (std::string failed = spawn(); !failed.empty()) return failed;
    const std::string failed = wait_answers("", "");
    if (failed.empty()) break;
    if (pid_ > 0 || attempt == 3) return failed;  // Running but silent, or out of attempts.
    std::error_code ignored;
    std::filesystem::remove_all(directory_ + "/data", ignored);
  }
  for (const std::string& step :
       {std::string("user add root:root-secret"), std::string("role add harkd"),
        std::string("role grant-permission harkd --prefix=true readwrite /hark/"),
        std::string("user add harkd:") + password, std::string("user grant-role harkd harkd"),
        std::string("auth enable")}) {
    if (std::string failed = etcdctl(step, false); !failed.empty()) return failed;
  }
  return "";
}

void EtcdProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string EtcdProcess::restart() {
  if (pid_ > 0) return "etcd is still running";
  if (std::string failed = spawn(); !failed.empty()) return failed;
  // Auth is on since start(): an anonymous read would be refused.
  return wait_answers(user, password);
}

std::string EtcdProcess::spawn() {
  const std::vector<std::string> args = arguments();
  pid_ = ::fork();
  if (pid_ == 0) {
    // A test that aborts (a failed dereference, a sanitizer report) takes etcd with it: ctest
    // would otherwise wait on the pipe etcd inherited until the test's timeout.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    std::vector<char*> argv;
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid_ < 0 ? "fork failed" : "";
}

std::string EtcdProcess::wait_answers(const std::string& as_user,
                                      const std::string& with_password) {
  server::cluster::GatewayOptions probing{
      .endpoints = {url_}, .user = as_user, .password = with_password};
  if (tls_ != nullptr) {
    probing.ca_file = tls_->ca;
    probing.cert_file = tls_->client_cert;
    probing.key_file = tls_->client_key;
  }
  auto probe = *server::cluster::EtcdGateway::create(probing);
  bool exited = false;
  if (wait_until([&] {
        exited = ::waitpid(pid_, nullptr, WNOHANG) == pid_;
        return exited || probe->range("/hark/", true).ok();
      }) &&
      !exited) {
    return "";
  }
  if (exited) pid_ = -1;  // Reaped.
  return std::string(exited ? "etcd exited before it answered on " : "etcd did not answer on ") +
         url_ + "; the end of its log:\n" + log_tail();
}

std::string EtcdProcess::log_tail() const {
  std::ifstream log(directory_ + "/etcd.log");
  std::deque<std::string> lines;
  for (std::string line; std::getline(log, line);) {
    lines.push_back(line);
    if (lines.size() > 5) lines.pop_front();
  }
  std::string tail;
  for (const std::string& line : lines) tail += line + "\n";
  return tail;
}

}  // namespace hark::test
