#include "hark/storage/record_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <sys/stat.h>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/storage/disk.h"

namespace hark::storage {
namespace {

Status read_all(int fd, std::vector<std::byte>& bytes) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return Error::cannot_read_file;
  bytes.resize(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::cannot_read_file;
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

// A record a crash cut short: its header or payload runs to the end of the file. (A damaged
// record with more after it is corruption, not a torn write.)
bool torn_tail(std::span<const std::byte> rest) {
  if (rest.size() < record_header_bytes) return true;
  uint32_t length = 0;
  std::memcpy(&length, rest.data(), 4);
  return rest.size() - record_header_bytes <= length;
}

Status write_header(int fd, const std::array<std::byte, record_file_header_bytes>& header,
                    const std::string& path) {
  if (::pwrite(fd, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) ||
      ::ftruncate(fd, static_cast<off_t>(header.size())) != 0 || ::fdatasync(fd) != 0) {
    HARK_LOG_ERROR("cannot write %s: %s", path, std::strerror(errno));
    return Error::cannot_write_to_file;
  }
  return ok_status();
}

}  // namespace

std::array<std::byte, record_file_header_bytes> record_file_header(std::string_view magic,
                                                                   uint32_t version) {
  HARK_ASSERT(magic.size() == 8);
  std::array<std::byte, record_file_header_bytes> header{};
  std::memcpy(header.data(), magic.data(), magic.size());
  std::memcpy(header.data() + 8, &version, 4);
  return header;
}

size_t begin_record(std::vector<std::byte>& out) {
  const size_t start = out.size();
  out.resize(start + record_header_bytes);
  return start;
}

void finish_record(std::vector<std::byte>& out, size_t start) {
  HARK_ASSERT(out.size() > start + record_header_bytes);
  const size_t payload = out.size() - start - record_header_bytes;
  HARK_ASSERT(payload <= UINT32_MAX);
  const auto length = static_cast<uint32_t>(payload);
  const uint32_t checksum = XXH32(out.data() + start + record_header_bytes, payload, 0);
  std::memcpy(out.data() + start, &length, 4);
  std::memcpy(out.data() + start + 4, &checksum, 4);
}

Result<FramedRecord> next_record(std::span<const std::byte> bytes) {
  if (bytes.size() < record_header_bytes) return Error::state_file_corrupted;
  uint32_t length = 0;
  uint32_t checksum = 0;
  std::memcpy(&length, bytes.data(), 4);
  std::memcpy(&checksum, bytes.data() + 4, 4);
  if (length == 0 || bytes.size() - record_header_bytes < length) {
    return Error::state_file_corrupted;
  }
  const std::span<const std::byte> payload = bytes.subspan(record_header_bytes, length);
  if (XXH32(payload.data(), payload.size(), 0) != checksum) return Error::state_file_corrupted;
  return FramedRecord{payload, record_header_bytes + length};
}

Result<RecordFile> RecordFile::open(const std::string& path, std::string_view magic,
                                    uint32_t version,
                                    absl::FunctionRef<Status(std::span<const std::byte>)> replay) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, private_file_mode);
  if (fd < 0) {
    HARK_LOG_ERROR("cannot open %s: %s", path, std::strerror(errno));
    return Error::cannot_open_database;
  }
  RecordFile file(fd, 0, path);
  std::vector<std::byte> bytes;
  HARK_TRY(read_all(fd, bytes));
  const auto header = record_file_header(magic, version);
  if (bytes.size() < record_file_header_bytes) {
    // New (or cut before its header was whole: nothing was ever acknowledged).
    HARK_TRY(write_header(fd, header, path));
    file.size_ = record_file_header_bytes;
    return file;
  }
  if (std::memcmp(bytes.data(), header.data(), 12) != 0) {
    HARK_LOG_ERROR("%s is not a hark %s file of format %u", path, std::string(magic), version);
    return Error::invalid_version;
  }
  size_t at = record_file_header_bytes;
  uint32_t records = 0;
  while (at < bytes.size()) {
    const auto record = next_record(std::span(bytes).subspan(at));
    if (!record.ok()) {
      if (torn_tail(std::span(bytes).subspan(at))) break;
      HARK_LOG_ERROR(
          "%s: record %u at byte %u is damaged and not the last one; refusing to start rather "
          "than forget the changes after it",
          path, records, at);
      return Error::state_file_corrupted;
    }
    const Status applied = replay(record->payload);
    if (!applied.ok()) {
      HARK_LOG_ERROR("%s: record %u at byte %u cannot be applied: %s", path, records, at,
                     error_name(applied.error()));
      return applied.error();
    }
    at += record->size;
    records++;
  }
  if (at < bytes.size()) {
    HARK_LOG_WARN("%s: cut %u bytes of an unfinished last record (never acknowledged)", path,
                  bytes.size() - at);
    if (::ftruncate(fd, static_cast<off_t>(at)) != 0 || ::fdatasync(fd) != 0) {
      return Error::cannot_write_to_file;
    }
  }
  file.size_ = at;
  HARK_LOG_INFO("%s: %u records", path, records);
  return file;
}

RecordFile::RecordFile(RecordFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), path_(std::move(other.path_)) {}

RecordFile& RecordFile::operator=(RecordFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    path_ = std::move(other.path_);
  }
  return *this;
}

void RecordFile::replace(int fd, uint64_t size) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  size_ = size;
}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RecordFile::append_now(std::span<const std::byte> records) {
  HARK_ASSERT(fd_ >= 0);
  size_t done = 0;
  while (done < records.size()) {
    const ssize_t n = ::pwrite(fd_, records.data() + done, records.size() - done,
                               static_cast<off_t>(size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      HARK_LOG_ERROR("%s: cannot write: %s", path_, std::strerror(errno));
      (void)cut_back();
      return Error::cannot_write_to_file;
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) {
    HARK_LOG_ERROR("%s: cannot sync: %s", path_, std::strerror(errno));
    (void)cut_back();
    return Error::cannot_sync_file;
  }
  size_ += records.size();
  return ok_status();
}

Status RecordFile::cut_back() {
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    HARK_LOG_ERROR("%s: cannot cut back to %u bytes: %s", path_, size_, std::strerror(errno));
    return Error::cannot_write_to_file;
  }
  return ok_status();
}

}  // namespace hark::storage
