#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>

namespace hark::bench {

// A peer server (redis-server, nats-server) the bench starts on its own loopback port with a
// fresh temporary directory for its state, and stops by PID: stop(), the destructor, or
// hark-bench's SIGINT/SIGTERM handler (children.h); the child also gets SIGKILL if hark-bench
// dies (PR_SET_PDEATHSIG). It never touches a server it did not start (Debian's redis on
// 6379 included). One thread.
class PeerProcess {
 public:
  PeerProcess() = default;
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  // The program's path if it is installed (PATH, then /usr/sbin and /usr/bin), else "".
  static std::string find_program(const std::string& name);

  // Creates the temporary directory, then for each try picks a free loopback port, runs
  // make_args(directory, port) (argv[0] the program's path) with stdout and stderr in
  // DIRECTORY/server.log, and waits until the port accepts a connection. Up to 3 tries (the
  // port may be taken between picking and binding). False with a message if it never came up.
  template <typename MakeArgs>
  bool start(const std::string& name, MakeArgs make_args);

  // SIGTERM, then SIGKILL after 10 s. Idempotent.
  void stop();
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& directory() const { return directory_; }

 private:
  bool make_directory(const std::string& name);
  uint16_t pick_port();
  bool spawn(const std::vector<std::string>& args, uint16_t port);
  std::string log_tail() const;

  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string name_;
  std::string directory_;
};

template <typename MakeArgs>
bool PeerProcess::start(const std::string& name, MakeArgs make_args) {
  if (!make_directory(name)) return false;
  for (int attempt = 0; attempt < 3; attempt++) {
    const uint16_t port = pick_port();
    if (port != 0 && spawn(make_args(directory_, port), port)) return true;
  }
  return false;
}

}  // namespace hark::bench
