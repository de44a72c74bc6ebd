#pragma once

#include <string>
#include <vector>

#include <sys/types.h>

namespace hark::test {

// A real etcd (Debian's /usr/bin/etcd) for the tests labelled `cluster`: one member on free
// loopback ports with a temporary data directory, auth enabled with a root user and a `harkd`
// user whose role may read and write /hark/ only (docs/cluster.md §etcd auth does the same by
// hand). start() returns once the member answers; the destructor kills it and removes the
// directory. SIGKILL on failure paths only.
class EtcdProcess {
 public:
  // TLS on the client URL (https://), etcd asking every client for a certificate signed by
  // `ca` (--client-cert-auth): docs/cluster.md §TLS to etcd in production, as a test.
  struct Tls {
    std::string ca;           // The CA that signed both certificates.
    std::string cert, key;    // etcd's, for 127.0.0.1.
    std::string client_cert;  // The client's (harkd, etcdctl).
    std::string client_key;
  };

  EtcdProcess() = default;
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // Empty on success, else what failed. With `tls`, the client URL is https:// and the files
  // must outlive the process.
  std::string start(const Tls* tls = nullptr);
  const std::string& url() const { return url_; }
  // Its temporary directory (removed with it): tests keep their cluster files there.
  const std::string& directory() const { return directory_; }
  static constexpr const char* user = "harkd";
  static constexpr const char* password = "harkd-secret";
  // SIGKILL (an etcd crash or outage), reaped before it returns; the data directory stays.
  void kill();
  // Starts the killed member again on the same data directory and URLs; returns once it
  // answers an authenticated read. Empty on success, else what failed.
  std::string restart();
  // Runs etcdctl against the member (as root once auth is on); empty on success.
  std::string etcdctl(const std::string& arguments, bool as_root);

 private:
  std::vector<std::string> arguments() const;
  // Forks and execs etcd with arguments(); empty on success.
  std::string spawn();
  // Waits until a read through the gateway succeeds (as `user`, when not empty) or etcd exits
  // (reaped: pid_ is then -1); empty on success.
  std::string wait_answers(const std::string& user, const std::string& password);
  // The last lines of etcd's log, for a failure's message (the directory goes with the test).
  std::string log_tail() const;

  const Tls* tls_ = nullptr;
  pid_t pid_ = -1;
  std::string directory_;
  std::string url_;
  std::string peer_url_;
};

}  // namespace hark::test
