#include "hark/core/broker/internal/metadata_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <utility>

#include "hark/core/base/assert.h"
#include "hark/core/base/log.h"
#include "hark/core/broker/internal/journal.h"
#include "hark/storage/disk.h"

namespace hark::core::internal {

namespace {

constexpr std::string_view magic = "HARKMETA";

std::string temporary_path(const std::string& path) { return path + ".tmp"; }

}  // namespace

Result<std::unique_ptr<MetadataLog>> MetadataLog::open(
    const std::string& path, const OwnershipMap& ownership, Clock& clock,
    Ref<const Catalog>& catalog, std::vector<std::vector<std::byte>>& extensions,
    uint64_t snapshot_entries) {
  // A compaction a crash interrupted before its rename: the file itself is the old one, whole.
  if (::unlink(temporary_path(path).c_str()) == 0) {
    HARK_LOG_WARN("%s: removed an unfinished compaction (%s)", path, temporary_path(path));
  }
  CatalogEdit edit(*catalog, ownership, clock);
  uint64_t entries = 0;  // Past the last snapshot.
  HARK_TRY_ASSIGN(storage::RecordFile file,
                  storage::RecordFile::open(
                      path, magic, format_version, [&](std::span<const std::byte> payload) {
                        if (payload[0] == std::byte(RecordKind::entry)) {
                          entries++;
                        } else if (payload[0] == std::byte(RecordKind::snapshot)) {
                          entries = 0;
                        }
                        return replay(payload, edit);
                      }));
  catalog = edit.take();
  extensions = std::move(edit.extensions);
  HARK_LOG_INFO("%s: %u streams, entry %u, %u entries past its snapshot", path,
                catalog->streams.size(), catalog->sequence, entries);
  return std::unique_ptr<MetadataLog>(new MetadataLog(std::move(file), entries, snapshot_entries));
}

namespace {

Status write_all_and_sync(int fd, std::span<const std::byte> bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t result =
        ::pwrite(fd, bytes.data() + written, bytes.size() - written, static_cast<off_t>(written));
    if (result <= 0) return Error::cannot_write_to_file;
    written += static_cast<size_t>(result);
  }
  return ::fdatasync(fd) == 0 ? ok_status() : Status(Error::cannot_sync_file);
}

}  // namespace

Status MetadataLog::adopt_snapshot(const std::string& path, std::span<const std::byte> snapshot) {
  OwnershipMap ownership(1);
  auto empty = make_ref<Catalog>();
  CatalogEdit check(*empty, ownership, SystemClock::instance());
  const Result<storage::FramedRecord> record = storage::next_record(snapshot);
  if (!record.ok() || record->size != snapshot.size() || record->payload.empty() ||
      record->payload[0] != std::byte(RecordKind::snapshot) ||
      !replay(record->payload, check).ok()) {
    return Error::state_file_corrupted;
  }
  const auto header = storage::record_file_header(magic, format_version);
  std::vector<std::byte> bytes(header.begin(), header.end());
  bytes.insert(bytes.end(), snapshot.begin(), snapshot.end());
  const std::string temporary = temporary_path(path);
  const int fd =
      ::open(temporary.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, storage::private_file_mode);
  if (fd < 0) return Error::cannot_write_to_file;
  const Status written = write_all_and_sync(fd, bytes);
  ::close(fd);
  if (!written.ok() || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    return written.ok() ? Status(Error::cannot_write_to_file) : written;
  }
  const std::string directory = std::filesystem::path(path).parent_path().string();
  const int dir =
      ::open(directory.empty() ? "." : directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool synced = dir >= 0 && ::fsync(dir) == 0;
  if (dir >= 0) ::close(dir);
  return synced ? ok_status() : Status(Error::cannot_sync_file);
}

// A compaction cut short by a stop leaves its .tmp, which the next open() deletes.
MetadataLog::~MetadataLog() {
  if (compact_fd_ >= 0) ::close(compact_fd_);
}

void MetadataLog::append(io::Reactor& reactor, const JournalEntry& entry, JournalDone& done) {
  HARK_ASSERT(done_ == nullptr);
  HARK_ASSERT(!entry.records.empty());
  ring_ = &reactor.ring();
  done_ = &done;
  pending_.assign(entry.records.begin(), entry.records.end());
  written_ = 0;
  syncing_ = false;
  step_ = Step::append;
  ring_->write(file_.fd(), pending_, file_.size(), *this);
}

void MetadataLog::snapshot(io::Reactor& reactor, std::span<const std::byte> snapshot,
                           JournalDone& done) {
  HARK_ASSERT(done_ == nullptr);
  ring_ = &reactor.ring();
  done_ = &done;
  const auto header = storage::record_file_header(magic, format_version);
  pending_.assign(header.begin(), header.end());
  pending_.insert(pending_.end(), snapshot.begin(), snapshot.end());
  written_ = 0;
  step_ = Step::compact_write;
  const std::string temporary = temporary_path(file_.path());
  compact_fd_ =
      ::open(temporary.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, storage::private_file_mode);
  if (compact_fd_ < 0) {
    fail_compaction(Error::cannot_write_to_file, errno);
    return;
  }
  ring_->write(compact_fd_, pending_, 0, *this);
}

void MetadataLog::detach(JournalDone& done) {
  if (done_ == &done) done_ = nullptr;
}

void MetadataLog::answer(JournalResult result) {
  JournalDone* const done = std::exchange(done_, nullptr);
  if (done != nullptr) done->journaled(result);  // Null: detached (the broker stopped).
}

void MetadataLog::applied(io::Reactor& /*reactor*/, uint64_t /*sequence*/, bool /*own*/,
                          JournalDone& done) {
  done.journaled({});
}

Status MetadataLog::append_undo(std::span<const std::byte> records) {
  HARK_ASSERT(done_ == nullptr);
  return file_.append_now(records);
}

void MetadataLog::complete(int32_t result, uint32_t /*flags*/) {
  if (step_ == Step::append) {
    appended(result);
  } else {
    compacted(result);
  }
}

void MetadataLog::appended(int32_t result) {
  if (syncing_) {
    if (result < 0) {
      fail(Error::cannot_sync_file);
      return;
    }
    file_.acknowledged(pending_.size());
    if (pending_.size() > 1 + storage::record_header_bytes &&
        pending_[storage::record_header_bytes] == std::byte(RecordKind::entry)) {
      entries_++;
    }
    answer({});
    return;
  }
  if (result <= 0) {
    fail(Error::cannot_write_to_file);
    return;
  }
  written_ += static_cast<uint64_t>(result);
  if (written_ < pending_.size()) {
    ring_->write(file_.fd(), std::span(pending_).subspan(written_), file_.size() + written_, *this);
    return;
  }
  syncing_ = true;
  ring_->fdatasync(file_.fd(), *this);
}

// The steps of a compaction after the .tmp file is open: write (maybe short), fdatasync,
// rename, fsync of the directory.
void MetadataLog::compacted(int32_t result) {
  switch (step_) {
    case Step::compact_write:
      if (result <= 0) {
        fail_compaction(Error::cannot_write_to_file, -result);
        return;
      }
      written_ += static_cast<uint64_t>(result);
      if (written_ < pending_.size()) {
        ring_->write(compact_fd_, std::span(pending_).subspan(written_), written_, *this);
        return;
      }
      step_ = Step::compact_sync;
      ring_->fdatasync(compact_fd_, *this);
      return;
    case Step::compact_sync:
      if (result < 0) {
        fail_compaction(Error::cannot_sync_file, -result);
        return;
      }
      renamed();
      return;
    case Step::dir_sync:
      ::close(std::exchange(compact_fd_, -1));
      if (result < 0) {
        // The new file is in place and whole; only the rename may not survive a power loss.
        HARK_LOG_WARN("metadata log: cannot fsync the directory after a compaction: %s",
                      std::strerror(-result));
      }
      step_ = Step::append;
      answer({});
      return;
    case Step::append: HARK_UNREACHABLE();
  }
}

void MetadataLog::renamed() {
  const std::string& path = file_.path();
  if (::rename(temporary_path(path).c_str(), path.c_str()) != 0) {
    fail_compaction(Error::cannot_write_to_file, errno);
    return;
  }
  file_.replace(std::exchange(compact_fd_, -1), pending_.size());
  HARK_LOG_INFO("metadata log: compacted %u entries into a snapshot (%u bytes)", entries_,
                pending_.size());
  entries_ = 0;
  const std::string directory = std::filesystem::path(path).parent_path().string();
  compact_fd_ =
      ::open(directory.empty() ? "." : directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  step_ = Step::dir_sync;
  if (compact_fd_ < 0) {
    compacted(-errno);
    return;
  }
  ring_->fsync(compact_fd_, *this);
}

void MetadataLog::fail_compaction(Error error, int code) {
  HARK_LOG_ERROR("metadata log: compaction failed (%s: %s); the log stays as it was",
                 std::string(error_name(error)), std::strerror(code));
  if (compact_fd_ >= 0) ::close(std::exchange(compact_fd_, -1));
  ::unlink(temporary_path(file_.path()).c_str());
  step_ = Step::append;
  answer({.status = error});
}

void MetadataLog::fail(Error error) {
  HARK_LOG_ERROR("metadata log: %s; the command is refused", std::string(error_name(error)));
  // Cut back what may have been written, so the next record follows the last good one.
  // Error path only: a blocking ftruncate on shard 0 is fine here.
  (void)file_.cut_back();
  answer({.status = error});
}

}  // namespace hark::core::internal
