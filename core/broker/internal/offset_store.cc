#include "core/broker/internal/offset_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <sys/stat.h>

#include "core/base/log.h"
#include "storage/disk.h"

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

}  // namespace

Result<std::unique_ptr<OffsetStore>> OffsetStore::open(io::Ring& ring, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, storage::private_file_mode);
  if (fd < 0) {
    HARK_LOG_ERROR("cannot open %s: %s", path, std::strerror(errno));
    return Error::cannot_open_consumer_offsets_file;
  }
  std::unique_ptr<OffsetStore> store(new OffsetStore(ring, fd));
  struct stat info {};
  if (::fstat(fd, &info) != 0) return Error::cannot_read_consumer_offsets;
  std::vector<std::byte> bytes(static_cast<size_t>(info.st_size));
  if (!bytes.empty() && ::pread(fd, bytes.data(), bytes.size(), 0) != info.st_size) {
    return Error::cannot_read_consumer_offsets;
  }
  // A torn last record (a crash mid-write) is ignored; the rewrite below drops it.
  for (size_t at = 0; at + record_bytes <= bytes.size(); at += record_bytes) {
    const auto kind = static_cast<ConsumerRef::Kind>(bytes[at]);
    if (kind != ConsumerRef::Kind::consumer && kind != ConsumerRef::Kind::group) {
      HARK_LOG_WARN("%s: skipping a damaged record at byte %u", path, at);
      continue;
    }
    ConsumerRef consumer{.kind = kind};
    uint64_t offset = 0;
    std::memcpy(&consumer.id, bytes.data() + at + 4, 4);
    std::memcpy(&offset, bytes.data() + at + 8, 8);
    if (offset == deleted) {
      store->offsets_.erase(consumer);
    } else {
      store->offsets_[consumer] = offset;
    }
  }
  std::vector<std::byte> compact;
  for (const auto& [consumer, offset] : store->offsets_) append_record(compact, consumer, offset);
  if (compact.size() != bytes.size()) {
    if (!write_all(fd, compact) || ::ftruncate(fd, static_cast<off_t>(compact.size())) != 0) {
      HARK_LOG_ERROR("cannot rewrite %s: %s", path, std::strerror(errno));
      return Error::cannot_write_to_file;
    }
  }
  store->size_ = compact.size();
  return store;
}

OffsetStore::~OffsetStore() {
  close();
  ::close(fd_);
}

std::optional<uint64_t> OffsetStore::get(const ConsumerRef& consumer) const {
  const auto it = offsets_.find(consumer);
  if (it == offsets_.end()) return std::nullopt;
  return it->second;
}

void OffsetStore::set(const ConsumerRef& consumer, uint64_t offset) {
  offsets_[consumer] = offset;
  record(consumer, offset);
}

bool OffsetStore::erase(const ConsumerRef& consumer) {
  if (offsets_.erase(consumer) == 0) return false;
  record(consumer, deleted);
  return true;
}

void OffsetStore::clear() {
  close();
  offsets_.clear();
  queued_.clear();
  // Purge is a control-plane command: a blocking truncate on the owner is fine.
  if (::ftruncate(fd_, 0) != 0) {
    HARK_LOG_ERROR("cannot truncate the consumer offsets: %s", std::strerror(errno));
  }
  size_ = 0;
}

void OffsetStore::close() {
  while (writing_) ring_.run(std::nullopt);
  if (!rewrite_) return;
  // A write failed earlier: the file misses stores that memory has. Control plane (close).
  std::vector<std::byte> all;
  for (const auto& [consumer, offset] : offsets_) append_record(all, consumer, offset);
  if (write_all(fd_, all) && ::ftruncate(fd_, static_cast<off_t>(all.size())) == 0) {
    size_ = all.size();
    rewrite_ = false;
  } else {
    HARK_LOG_ERROR("cannot rewrite the consumer offsets: %s", std::strerror(errno));
  }
}

void OffsetStore::record(const ConsumerRef& consumer, uint64_t offset) {
  append_record(queued_, consumer, offset);
  if (!writing_) write_next();
}

void OffsetStore::write_next() {
  if (queued_.empty()) return;
  std::swap(in_flight_, queued_);
  queued_.clear();
  writing_ = true;
  ring_.write(fd_, in_flight_, size_, *this);
}

void OffsetStore::complete(int32_t result, uint32_t /*flags*/) {
  writing_ = false;
  if (result != static_cast<int32_t>(in_flight_.size())) {
    // The offsets stay right in memory; close() rewrites the file from there.
    HARK_LOG_WARN("consumer offsets write failed (%d); kept in memory", result);
    rewrite_ = true;
  } else {
    size_ += in_flight_.size();
  }
  in_flight_.clear();
  write_next();
}

}  // namespace hark::core::internal
