#include "hark/core/broker/internal/offset_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <sys/stat.h>

#include "hark/core/base/log.h"
#include "hark/storage/disk.h"

namespace hark::core::internal {

namespace {

constexpr size_t record_bytes = 16;
constexpr uint64_t deleted = UINT64_MAX;

void append_record(std::vector<std::byte>& out, const ConsumerRef& consumer, uint64_t offset) {
  std::array<std::byte, record_bytes> record{};
  record[0] = static_cast<std::byte>(consumer.kind);
  std::memcpy(record.data() + 4, &consumer.id, 4);  // Little-endian hosts (journal.cc).
  std::memcpy(record.data() + 8, &offset, 8);
  out.insert(out.end(), record.begin(), record.end());
}

// Applies the records in `bytes` to `offsets` (the last per consumer wins); a torn last record
// (a crash mid-write) is ignored. Returns false if a record was damaged (it is skipped).
bool apply_records(std::span<const std::byte> bytes,
                   absl::flat_hash_map<ConsumerRef, uint64_t>& offsets) {
  bool intact = true;
  for (size_t at = 0; at + record_bytes <= bytes.size(); at += record_bytes) {
    const auto kind = static_cast<ConsumerRef::Kind>(bytes[at]);
    if (kind != ConsumerRef::Kind::consumer && kind != ConsumerRef::Kind::group) {
      intact = false;
      continue;
    }
    ConsumerRef consumer{.kind = kind};
    uint64_t offset = 0;
    std::memcpy(&consumer.id, bytes.data() + at + 4, 4);
    std::memcpy(&offset, bytes.data() + at + 8, 8);
    if (offset == deleted) {
      offsets.erase(consumer);
    } else {
      offsets[consumer] = offset;
    }
  }
  return intact;
}

std::vector<std::byte> snapshot(const absl::flat_hash_map<ConsumerRef, uint64_t>& offsets) {
  std::vector<std::byte> bytes;
  bytes.reserve(offsets.size() * record_bytes);
  for (const auto& [consumer, offset] : offsets) append_record(bytes, consumer, offset);
  return bytes;
}

bool write_all(int fd, const std::vector<std::byte>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string temporary_path(const std::string& path) { return path + ".tmp"; }

bool sync_directory_now(const std::string& path) {
  const std::string directory = std::filesystem::path(path).parent_path().string();
  const int fd =
      ::open(directory.empty() ? "." : directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  return synced;
}

// Replaces the file at `path` with `bytes`, blocking (control plane: open and close): written
// to <path>.tmp, fdatasynced if `sync`, renamed over `path`, so a crash leaves the old file or
// the new one, never a mix.
bool replace_file_now(const std::string& path, const std::vector<std::byte>& bytes, bool sync) {
  const std::string temporary = temporary_path(path);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                        storage::private_file_mode);
  if (fd < 0) return false;
  const bool written = write_all(fd, bytes) && (!sync || ::fdatasync(fd) == 0);
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    return false;
  }
  return !sync || sync_directory_now(path);
}

}  // namespace

Result<std::unique_ptr<OffsetStore>> OffsetStore::open(io::Ring& ring, const std::string& path,
                                                       bool sync) {
  ::unlink(temporary_path(path).c_str());  // A compaction a crash interrupted.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, storage::private_file_mode);
  if (fd < 0) {
    HARK_LOG_ERROR("cannot open %s: %s", path, std::strerror(errno));
    return Error::cannot_open_consumer_offsets_file;
  }
  std::unique_ptr<OffsetStore> store(new OffsetStore(ring, path, fd, sync));
  // Compaction keeps the file within max(64 KiB, twice the live records): read it whole.
  struct stat info {};
  if (::fstat(fd, &info) != 0) return Error::cannot_read_consumer_offsets;
  std::vector<std::byte> bytes(static_cast<size_t>(info.st_size));
  if (!bytes.empty() && ::pread(fd, bytes.data(), bytes.size(), 0) != info.st_size) {
    return Error::cannot_read_consumer_offsets;
  }
  if (!apply_records(bytes, store->offsets_)) {
    HARK_LOG_WARN("%s: skipped damaged records", path);
  }
  store->durable_ = store->offsets_;
  const std::vector<std::byte> compact = snapshot(store->offsets_);
  if (compact.size() != bytes.size()) {
    if (!replace_file_now(path, compact, sync)) {
      HARK_LOG_ERROR("cannot rewrite %s: %s", path, std::strerror(errno));
      return Error::cannot_write_to_file;
    }
    ::close(store->fd_);
    store->fd_ = fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return Error::cannot_open_consumer_offsets_file;
  }
  store->size_ = compact.size();
  return store;
}

OffsetStore::~OffsetStore() {
  if (fd_ >= 0) {
    close();
    ::close(fd_);
  }
}

std::optional<uint64_t> OffsetStore::get(const ConsumerRef& consumer) const {
  const auto it = offsets_.find(consumer);
  if (it == offsets_.end()) return std::nullopt;
  return it->second;
}

void OffsetStore::set(const ConsumerRef& consumer, uint64_t offset, OffsetWritten& done) {
  offsets_[consumer] = offset;
  record(consumer, offset, done);
}

bool OffsetStore::erase(const ConsumerRef& consumer, OffsetWritten& done) {
  if (offsets_.erase(consumer) == 0) return false;
  record(consumer, deleted, done);
  return true;
}

bool OffsetStore::adopt(std::span<const std::pair<ConsumerRef, uint64_t>> wanted,
                        OffsetWritten& done) {
  Offsets next(wanted.begin(), wanted.end());
  bool changed = false;
  for (const auto& [consumer, offset] : offsets_) {
    if (!next.contains(consumer)) {
      append_record(queued_, consumer, deleted);
      changed = true;
    }
  }
  for (const auto& [consumer, offset] : next) {
    const auto held = offsets_.find(consumer);
    if (held != offsets_.end() && held->second == offset) continue;
    append_record(queued_, consumer, offset);
    changed = true;
  }
  if (!changed) return false;
  offsets_ = std::move(next);
  done.sequence_ = ++sequence_;
  waiters_.push_back(done);
  start_next();
  return true;
}

void OffsetStore::clear() {
  close();
  offsets_.clear();
  durable_.clear();
  // Purge is a control-plane command: a blocking truncate on the owner is fine.
  if (::ftruncate(fd_, 0) != 0) {
    HARK_LOG_ERROR("cannot truncate the consumer offsets: %s", std::strerror(errno));
    dirty_ = true;
  }
  size_ = 0;
}

void OffsetStore::close() {
  start_next();
  while (step_ != Step::idle) ring_.run(std::nullopt);
  if (!dirty_) return;
  // A write failed earlier and no later one replaced the file. Control plane (close).
  if (replace_file_now(path_, snapshot(offsets_), sync_)) {
    ::close(fd_);
    fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    size_ = offsets_.size() * record_bytes;
    dirty_ = fd_ < 0;
  } else {
    HARK_LOG_ERROR("cannot rewrite %s: %s", path_, std::strerror(errno));
  }
}

void OffsetStore::record(const ConsumerRef& consumer, uint64_t offset, OffsetWritten& done) {
#ifdef HARK_MUTANT_ACK_BEFORE_WRITE
  append_record(queued_, consumer, offset);
  start_next();
  done.offset_written(ok_status());  // Planted bug: acknowledged before the write.
  return;
#endif
  append_record(queued_, consumer, offset);
  done.sequence_ = ++sequence_;
  waiters_.push_back(done);
  start_next();
}

bool OffsetStore::compaction_due() const {
  const uint64_t bound = std::max<uint64_t>(compact_bytes_min, 2 * offsets_.size() * record_bytes);
  return dirty_ || size_ + queued_.size() > bound;
}

void OffsetStore::start_next() {
  if (step_ != Step::idle || queued_.empty() || fd_ < 0) return;
  batch_sequence_ = sequence_;
  written_ = 0;
  if (compaction_due()) {
    start_compaction();
    return;
  }
  in_flight_.swap(queued_);
  queued_.clear();
  position_ = size_;
  step_ = Step::append;
  submit_write();
}

void OffsetStore::start_compaction() {
  // Every live offset (the queued changes included) to <file>.tmp, then renamed over the file.
  in_flight_ = snapshot(offsets_);
  queued_.clear();
  position_ = 0;
  step_ = Step::compact_write;
  const std::string temporary = temporary_path(path_);
  compact_fd_ = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                       storage::private_file_mode);
  if (compact_fd_ < 0) {
    fail(Error::cannot_write_to_file, -errno);
    return;
  }
  if (in_flight_.empty()) {
    advance(0);
    return;
  }
  submit_write();
}

void OffsetStore::submit_write() {
  const int fd = step_ == Step::compact_write ? compact_fd_ : fd_;
  ring_.write(fd, std::span<const std::byte>(in_flight_).subspan(written_), position_ + written_,
              *this);
}

void OffsetStore::complete(int32_t result, uint32_t /*flags*/) {
  const bool writing = step_ == Step::append || step_ == Step::compact_write;
  if (writing ? result <= 0 : result < 0) {
    fail(writing ? Error::cannot_write_to_file : Error::cannot_sync_file, result);
    return;
  }
  advance(result);
}

// The operation in flight moved `result` bytes (writes) or completed (syncs): the next step.
void OffsetStore::advance(int32_t result) {
  switch (step_) {
    case Step::append:
    case Step::compact_write:
      written_ += static_cast<uint64_t>(result);
      if (written_ < in_flight_.size()) {
        submit_write();  // A short write: the rest, at once.
        return;
      }
      if (sync_) {
        const bool append = step_ == Step::append;
        step_ = append ? Step::append_sync : Step::compact_sync;
        ring_.fdatasync(append ? fd_ : compact_fd_, *this);
        return;
      }
      if (step_ == Step::compact_write) {
        compaction_written();
        return;
      }
      break;
    case Step::compact_sync: compaction_written(); return;
    case Step::dir_sync:
      ::close(compact_fd_);
      compact_fd_ = -1;
      break;
    case Step::append_sync: break;
    case Step::idle: HARK_UNREACHABLE();
  }
  finish_batch();
}

void OffsetStore::compaction_written() {
  const std::string temporary = temporary_path(path_);
  if (::rename(temporary.c_str(), path_.c_str()) != 0) {
    fail(Error::cannot_write_to_file, -errno);
    return;
  }
  ::close(fd_);
  fd_ = compact_fd_;
  compact_fd_ = -1;
  // The file is the snapshot now (finish_batch() has nothing left to add).
  size_ = in_flight_.size();
  durable_.clear();
  apply_records(in_flight_, durable_);
  in_flight_.clear();
  dirty_ = false;
  compactions_++;
  if (sync_) {
    // The rename must survive a power loss too: fsync the directory.
    const std::string directory = std::filesystem::path(path_).parent_path().string();
    compact_fd_ =
        ::open(directory.empty() ? "." : directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (compact_fd_ < 0) {
      fail(Error::cannot_sync_file, -errno);
      return;
    }
    step_ = Step::dir_sync;
    ring_.fsync(compact_fd_, *this);
    return;
  }
  finish_batch();
}

void OffsetStore::finish_batch() {
  size_ += in_flight_.size();
  apply_records(in_flight_, durable_);
  in_flight_.clear();
  step_ = Step::idle;
  const uint64_t done_up_to = batch_sequence_;
  // The next write starts before anyone hears of this one: the disk stays busy.
  start_next();
  while (!waiters_.empty() && waiters_.front().sequence_ <= done_up_to) {
    written(*waiters_.pop_front(), ok_status());
  }
}

void OffsetStore::written(OffsetWritten& done, Status status) {
  if (listener_ != nullptr) {
    listener_->offset_written(done, std::move(status));
  } else {
    done.offset_written(std::move(status));
  }
}

void OffsetStore::fail(Error error, int32_t result) {
  HARK_LOG_ERROR(
      "%s: consumer offsets %s failed (%s): the stores waiting for it are answered %s and "
      "forgotten",
      path_, error == Error::cannot_sync_file ? "fdatasync" : "write",
      result == 0 ? "no progress" : std::strerror(-result), std::string(error_name(error)));
  if (compact_fd_ >= 0) {
    ::close(compact_fd_);
    compact_fd_ = -1;
    if (step_ != Step::dir_sync) ::unlink(temporary_path(path_).c_str());
  }
  step_ = Step::idle;
  in_flight_.clear();
  queued_.clear();
  // The file may hold part of what failed: the next write replaces it whole.
  dirty_ = true;
  offsets_ = durable_;
  while (OffsetWritten* done = waiters_.pop_front()) written(*done, error);
}

}  // namespace hark::core::internal
