#include "hark/storage/ring_disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <utility>

#include <sys/file.h>
#include <sys/stat.h>

#include "hark/core/base/log.h"

namespace hark::storage {
namespace {

class RingFile final : public DiskFile {
 public:
  RingFile(io::Ring& ring, int fd, std::string path)
      : ring_(ring), fd_(fd), path_(std::move(path)) {}
  ~RingFile() override {
    if (direct_fd_ != fd_) ::close(direct_fd_);
    ::close(fd_);
  }
  RingFile(const RingFile&) = delete;
  RingFile& operator=(const RingFile&) = delete;

  void write(std::span<const std::byte> bytes, uint64_t position, io::Completion& done) override {
    ring_.write(fd_, bytes, position, done);
  }
  void read(std::span<std::byte> bytes, uint64_t position, io::Completion& done) override {
    ring_.read(fd_, bytes, position, done);
  }
  void datasync(io::Completion& done) override { ring_.fdatasync(fd_, done); }
  void write_durable(std::span<const std::byte> bytes, uint64_t position,
                     io::Completion& done) override {
    HARK_ASSERT(direct_fd_ >= 0);
    ring_.write_dsync(direct_fd_, bytes, position, done);
  }
  Status open_direct() override;

  Result<uint64_t> size() override {
    struct stat status {};
    if (::fstat(fd_, &status) != 0) {
      HARK_LOG_ERROR("fstat %s: %s", path_, std::strerror(errno));
      return Error::cannot_read_file_metadata;
    }
    return static_cast<uint64_t>(status.st_size);
  }

  Status read_now(std::span<std::byte> bytes, uint64_t position) override {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pread(fd_, bytes.data() + done, bytes.size() - done,
                                static_cast<off_t>(position + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        HARK_LOG_ERROR("pread %s at %u: %s", path_, position + done,
                       n == 0 ? "end of file" : std::strerror(errno));
        return Error::cannot_read_file;
      }
      done += static_cast<size_t>(n);
    }
    return ok_status();
  }

  Status write_now(std::span<const std::byte> bytes, uint64_t position) override {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                                 static_cast<off_t>(position + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        HARK_LOG_ERROR("pwrite %s at %u: %s", path_, position + done, std::strerror(errno));
        return Error::cannot_write_to_file;
      }
      done += static_cast<size_t>(n);
    }
    return ok_status();
  }

  Status sync_now() override {
    if (::fdatasync(fd_) != 0) {
      HARK_LOG_ERROR("fdatasync %s: %s", path_, std::strerror(errno));
      return Error::cannot_sync_file;
    }
    return ok_status();
  }

  Status truncate_now(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      HARK_LOG_ERROR("ftruncate %s to %u: %s", path_, size, std::strerror(errno));
      return Error::cannot_write_to_file;
    }
    return ok_status();
  }

 private:
  io::Ring& ring_;
  int fd_;
  int direct_fd_ = -1;  // fd_ itself where the file system has no O_DIRECT.
  std::string path_;
};

// True if O_DIRECT on `path` needs no stricter alignment than direct_block_bytes (statx
// STATX_DIOALIGN; a kernel that does not say is trusted with 4096, as every common block size).
bool direct_alignment_fits(const std::string& path) {
  struct statx info {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_DIOALIGN, &info) != 0 ||
      (info.stx_mask & STATX_DIOALIGN) == 0 || info.stx_dio_offset_align == 0) {
    return true;
  }
  return direct_block_bytes % info.stx_dio_offset_align == 0 &&
         direct_block_bytes % info.stx_dio_mem_align == 0;
}

Status RingFile::open_direct() {
  if (direct_fd_ >= 0) return ok_status();
  const int fd = direct_alignment_fits(path_) ? ::open(path_.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC)
                                              : (errno = EINVAL, -1);
  if (fd >= 0) {
    direct_fd_ = fd;
    return ok_status();
  }
  if (errno != EINVAL) {
    HARK_LOG_ERROR("open %s with O_DIRECT: %s", path_, std::strerror(errno));
    return Error::cannot_read_file;
  }
  // tmpfs before Linux 6.6 and a few others: the same durable writes, buffered.
  HARK_LOG_DEBUG("%s: no O_DIRECT here; durable writes are buffered", path_);
  direct_fd_ = fd_;
  return ok_status();
}

class FlockLock final : public DirectoryLock {
 public:
  explicit FlockLock(int fd) : fd_(fd) {}
  ~FlockLock() override { ::close(fd_); }  // Closing the description releases the flock.
  FlockLock(const FlockLock&) = delete;
  FlockLock& operator=(const FlockLock&) = delete;

 private:
  int fd_;
};

}  // namespace

Status create_private_directories(const std::string& path) {
  // Each prefix ending before a '/', then the whole path.
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), private_directory_mode) != 0 &&
        errno != EEXIST) {
      HARK_LOG_ERROR("mkdir %s: %s", prefix, std::strerror(errno));
      return Error::cannot_create_base_directory;
    }
    if (slash == std::string::npos) break;
  }
  return ok_status();
}

Status RingDisk::create_directories(const std::string& path) {
  return create_private_directories(path);
}

Result<std::vector<std::string>> RingDisk::list(const std::string& directory) {
  DIR* handle = ::opendir(directory.c_str());
  if (handle == nullptr) {
    HARK_LOG_ERROR("opendir %s: %s", directory, std::strerror(errno));
    return Error::cannot_read_file;
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(handle)) {
    if (entry->d_type == DT_REG || entry->d_type == DT_UNKNOWN) names.emplace_back(entry->d_name);
  }
  ::closedir(handle);
  return names;
}

Result<std::unique_ptr<DiskFile>> RingDisk::open(const std::string& path, bool create) {
  const int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  const int fd = ::open(path.c_str(), flags, private_file_mode);
  if (fd < 0) {
    HARK_LOG_ERROR("open %s: %s", path, std::strerror(errno));
    return create ? Error::cannot_create_segment_log_file : Error::cannot_read_file;
  }
  return std::unique_ptr<DiskFile>(std::make_unique<RingFile>(ring_, fd, path));
}

Status RingDisk::remove(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    HARK_LOG_ERROR("unlink %s: %s", path, std::strerror(errno));
    return Error::cannot_delete_file;
  }
  return ok_status();
}

Result<std::unique_ptr<DirectoryLock>> RingDisk::lock(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    HARK_LOG_ERROR("open %s: %s", directory, std::strerror(errno));
    return Error::cannot_open_database;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    HARK_LOG_ERROR("partition directory %s is locked by another log (flock: %s)", directory,
                   std::strerror(errno));
    ::close(fd);
    return Error::cannot_open_database;
  }
  return std::unique_ptr<DirectoryLock>(std::make_unique<FlockLock>(fd));
}

void RingDisk::drive() { ring_.run(std::nullopt); }

}  // namespace hark::storage
