#pragma once

#include <cstdint>
#include <string>

#include "hark/core/base/result.h"
#include "hark/io/socket.h"

namespace hark::server {

// What keeps two harkd from sharing a data directory or a port, and frees both the moment a
// harkd dies (even by SIGKILL), so an immediate restart always succeeds:
//   - `<data_dir>/harkd.lock`, flock(LOCK_EX | LOCK_NB), holding the owner's pid;
//   - for a fixed port, the abstract unix socket name `hark-port-<address>:<port>` bound (never
//     listened on, so it accepts nothing) in the network namespace: SO_REUSEPORT would
//     otherwise let a second harkd of the same user, on another data directory, bind the same
//     address and port and silently take part of its connections. Keyed by address and port,
//     so nodes of a local cluster share a port on addresses of their own (127.0.0.11:8090,
//     127.0.0.12:8090: tools/cluster.sh); TCP gives a connection to the exact address's
//     listener before a wildcard one, so those take nothing from each other.
// The kernel drops both with the process's file table. A port-based probe could not tell a
// live harkd from a killed one: io_uring closes a killed ring's listeners asynchronously, a
// moment after the process is gone (see open_listeners()). Held until destroyed. Control plane.
class InstanceLock {
 public:
  // Takes the data directory. Error (with a message in `why` naming the other harkd and the
  // fix): cannot_open_database (in use, or its lock file cannot be opened).
  static Result<InstanceLock> acquire(const std::string& data_directory, std::string& why);

  // Takes `address` (its port): a fixed one before listening, an ephemeral one once bound (so
  // a harkd asking for it later is refused too). Error: cannot_bind_to_socket (another harkd
  // holds it; `why` says so). Once per lock.
  Status lock_port(const io::SocketAddress& address, std::string& why);

  InstanceLock(InstanceLock&& other) noexcept;
  InstanceLock& operator=(InstanceLock&&) = delete;
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;
  ~InstanceLock();

 private:
  explicit InstanceLock(int directory_fd) : directory_fd_(directory_fd) {}

  int directory_fd_ = -1;
  int port_fd_ = -1;
};

}  // namespace hark::server
