#pragma once

#include <string>

#include <sys/types.h>

namespace hark::test {

// A real etcd (Debian's /usr/bin/etcd) for the tests labelled `cluster`: one member on free
// loopback ports with a temporary data directory, auth enabled with a root user and a `harkd`
// user whose role may read and write /hark/ only (docs/cluster.md §etcd auth does the same by
// hand). start() returns once the member answers; the destructor kills it and removes the
// directory. SIGKILL on failure paths only.
class EtcdProcess {
 public:
  EtcdProcess() = default;
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // Empty on success, else what failed.
  std::string start();
  const std::string& url() const { return url_; }
  // Its temporary directory (removed with it): tests keep their cluster files there.
  const std::string& directory() const { return directory_; }
  static constexpr const char* user = "harkd";
  static constexpr const char* password = "harkd-secret";
  // Runs etcdctl against the member (as root once auth is on); empty on success.
  std::string etcdctl(const std::string& arguments, bool as_root);

 private:
  pid_t pid_ = -1;
  std::string directory_;
  std::string url_;
};

}  // namespace hark::test
