#include "hark/server/instance_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <utility>

#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "hark/core/base/assert.h"
#include "hark/storage/disk.h"

namespace hark::server {
namespace {

// The pid written in the lock file by the harkd holding it ("" if unreadable).
std::string holder_pid(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return "";
  std::string pid(text, static_cast<size_t>(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

Result<int> lock_directory(const std::string& data_directory, std::string& why) {
  const std::string path = data_directory + "/harkd.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, storage::private_file_mode);
  if (fd < 0) {
    why = "cannot open " + path + ": " + strerror(errno);
    return Error::cannot_open_database;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const std::string pid = holder_pid(fd);
    why = "the data directory " + data_directory + " is in use by another harkd" +
          (pid.empty() ? "" : " (pid " + pid + ")") + ": stop it, or use another --data-dir";
    ::close(fd);
    return Error::cannot_open_database;
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  // Only a second harkd's message would lack the pid: not worth refusing to start over.
  (void)(::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) >= 0);
  return fd;
}

Result<int> bind_port_name(const io::SocketAddress& address_and_port, std::string& why) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::string("socket(AF_UNIX): ") + strerror(errno);
    return Error::cannot_bind_to_socket;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string taken = address_and_port.to_string();
  const std::string name = "hark-port-" + taken;
  memcpy(address.sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract.
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    why = errno == EADDRINUSE ? taken + " is in use by another harkd (on another data directory)"
                              : std::string("bind(@") + name + "): " + strerror(errno);
    ::close(fd);
    return Error::cannot_bind_to_socket;
  }
  return fd;
}

}  // namespace

Result<InstanceLock> InstanceLock::acquire(const std::string& data_directory, std::string& why) {
  HARK_TRY_ASSIGN(const int directory_fd, lock_directory(data_directory, why));
  return InstanceLock(directory_fd);
}

Status InstanceLock::lock_port(const io::SocketAddress& address, std::string& why) {
  HARK_ASSERT(port_fd_ < 0);
  HARK_TRY_ASSIGN(port_fd_, bind_port_name(address, why));
  return ok_status();
}

InstanceLock::InstanceLock(InstanceLock&& other) noexcept
    : directory_fd_(std::exchange(other.directory_fd_, -1)),
      port_fd_(std::exchange(other.port_fd_, -1)) {}

InstanceLock::~InstanceLock() {
  if (port_fd_ >= 0) ::close(port_fd_);
  // Closing the description releases the flock; the file stays (removing it would race with
  // a harkd starting now, which could lock the unlinked file).
  if (directory_fd_ >= 0) ::close(directory_fd_);
}

}  // namespace hark::server
