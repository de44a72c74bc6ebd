#include "core/broker/internal/metadata_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <sys/stat.h>

#include "core/base/log.h"
#include "core/broker/internal/journal.h"

namespace hark::core::internal {

namespace {

constexpr std::array<char, 8> magic = {'H', 'A', 'R', 'K', 'M', 'E', 'T', 'A'};
constexpr size_t header_bytes = 16;

std::array<std::byte, header_bytes> make_header() {
  std::array<std::byte, header_bytes> header{};
  std::memcpy(header.data(), magic.data(), magic.size());
  const uint32_t version = MetadataLog::format_version;
  std::memcpy(header.data() + 8, &version, 4);
  return header;
}

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

}  // namespace

Result<std::unique_ptr<MetadataLog>> MetadataLog::open(const std::string& path,
                                                       const OwnershipMap& ownership, Clock& clock,
                                                       Ref<const Catalog>& catalog) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    HARK_LOG_ERROR("cannot open %s: %s", path, std::strerror(errno));
    return Error::cannot_open_database;
  }
  std::unique_ptr<MetadataLog> log(new MetadataLog(fd, 0));
  std::vector<std::byte> bytes;
  HARK_TRY(read_all(fd, bytes));
  const auto header = make_header();
  if (bytes.size() < header_bytes) {
    // New (or cut before its header was whole: nothing was ever acknowledged).
    if (::pwrite(fd, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) ||
        ::ftruncate(fd, header_bytes) != 0 || ::fdatasync(fd) != 0) {
      HARK_LOG_ERROR("cannot write %s: %s", path, std::strerror(errno));
      return Error::cannot_write_to_file;
    }
    log->size_ = header_bytes;
    return log;
  }
  if (std::memcmp(bytes.data(), header.data(), 8) != 0 ||
      std::memcmp(bytes.data() + 8, header.data() + 8, 4) != 0) {
    HARK_LOG_ERROR("%s is not a hark metadata log of format %u", path, format_version);
    return Error::invalid_version;
  }
  CatalogEdit edit(*catalog, ownership, clock);
  size_t at = header_bytes;
  uint32_t records = 0;
  while (at < bytes.size()) {
    const auto record = next_record(std::span(bytes).subspan(at));
    if (!record.ok()) {
      if (torn_tail(std::span(bytes).subspan(at))) break;
      HARK_LOG_ERROR(
          "%s: record %u at byte %u is damaged and not the last one; refusing to "
          "start rather than forget the changes after it",
          path, records, at);
      return Error::state_file_corrupted;
    }
    const Status applied = replay(record->payload, edit);
    if (!applied.ok()) {
      HARK_LOG_ERROR("%s: record %u at byte %u does not fit the catalog", path, records, at);
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
  log->size_ = at;
  catalog = edit.take();
  HARK_LOG_INFO("%s: %u records, %u streams", path, records, catalog->streams.size());
  return log;
}

MetadataLog::~MetadataLog() { ::close(fd_); }

void MetadataLog::append(io::Ring& ring, std::span<const std::byte> records, PersistDone& done) {
  HARK_ASSERT(done_ == nullptr);
  ring_ = &ring;
  done_ = &done;
  pending_.assign(records.begin(), records.end());
  written_ = 0;
  syncing_ = false;
  ring.write(fd_, pending_, size_, *this);
}

Status MetadataLog::append_now(std::span<const std::byte> records) {
  HARK_ASSERT(done_ == nullptr);
  size_t done = 0;
  while (done < records.size()) {
    const ssize_t n = ::pwrite(fd_, records.data() + done, records.size() - done,
                               static_cast<off_t>(size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
        HARK_LOG_ERROR("metadata log: cannot cut back to %u bytes", size_);
      }
      return Error::cannot_write_to_file;
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) return Error::cannot_sync_file;
  size_ += records.size();
  return ok_status();
}

void MetadataLog::complete(int32_t result, uint32_t /*flags*/) {
  if (syncing_) {
    if (result < 0) {
      fail(Error::cannot_sync_file);
      return;
    }
    size_ += pending_.size();
    std::exchange(done_, nullptr)->persisted(ok_status());
    return;
  }
  if (result <= 0) {
    fail(Error::cannot_write_to_file);
    return;
  }
  written_ += static_cast<uint64_t>(result);
  if (written_ < pending_.size()) {
    ring_->write(fd_, std::span(pending_).subspan(written_), size_ + written_, *this);
    return;
  }
  syncing_ = true;
  ring_->fdatasync(fd_, *this);
}

void MetadataLog::fail(Error error) {
  HARK_LOG_ERROR("metadata log: %s; the command is refused", std::string(error_name(error)));
  // Cut back what may have been written, so the next record follows the last good one.
  // Error path only: a blocking ftruncate on shard 0 is fine here.
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    HARK_LOG_ERROR("metadata log: cannot cut back to %u bytes: %s", size_, std::strerror(errno));
  }
  std::exchange(done_, nullptr)->persisted(error);
}

}  // namespace hark::core::internal
