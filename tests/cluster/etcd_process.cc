#include "etcd_process.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <netinet/in.h>
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

std::vector<std::string> EtcdProcess::arguments(const std::string& client,
                                                const std::string& peer) const {
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
  const std::string client = (tls == nullptr ? "http://" : "https://") + std::string("127.0.0.1:") +
                             std::to_string(free_port());
  const std::string peer = "http://127.0.0.1:" + std::to_string(free_port());
  url_ = client;
  const std::vector<std::string> args = arguments(client, peer);
  pid_ = ::fork();
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid_ < 0) return "fork failed";
  server::cluster::GatewayOptions probing{.endpoints = {url_}};
  if (tls != nullptr) {
    probing.ca_file = tls->ca;
    probing.cert_file = tls->client_cert;
    probing.key_file = tls->client_key;
  }
  auto probe = *server::cluster::EtcdGateway::create(probing);
  if (!wait_until([&] { return probe->range("/", false).ok(); })) {
    return "etcd did not answer on " + url_ + " (log: " + directory_ + "/etcd.log)";
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

}  // namespace hark::test
