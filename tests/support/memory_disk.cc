#include "hark/tests/support/memory_disk.h"

#include <errno.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hark::test {

class MemoryDisk::File final : public storage::DiskFile {
 public:
  File(MemoryDisk& disk, std::shared_ptr<FileData> data) : disk_(disk), data_(std::move(data)) {
    disk_.open_files_++;
  }
  ~File() override { disk_.open_files_--; }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  void write(std::span<const std::byte> bytes, uint64_t position, io::Completion& done) override {
    disk_.writes_count_++;
    disk_.queue_.push_back(Op{Op::Kind::write, data_, {}, bytes, position, &done});
  }
  void write_durable(std::span<const std::byte> bytes, uint64_t position,
                     io::Completion& done) override {
    disk_.durable_writes_count_++;
    disk_.queue_.push_back(Op{Op::Kind::durable, data_, {}, bytes, position, &done});
  }
  Status open_direct() override { return ok_status(); }
  void read(std::span<std::byte> bytes, uint64_t position, io::Completion& done) override {
    disk_.queue_.push_back(Op{Op::Kind::read, data_, bytes, {}, position, &done});
  }
  void datasync(io::Completion& done) override {
    disk_.datasyncs_count_++;
    disk_.queue_.push_back(Op{Op::Kind::sync, data_, {}, {}, 0, &done});
  }
  Result<uint64_t> size() override { return uint64_t{data_->bytes.size()}; }
  Status read_now(std::span<std::byte> bytes, uint64_t position) override {
    if (position + bytes.size() > data_->bytes.size()) return Error::cannot_read_file;
    std::memcpy(bytes.data(), data_->bytes.data() + position, bytes.size());
    return ok_status();
  }
  Status write_now(std::span<const std::byte> bytes, uint64_t position) override {
    if (disk_.crashed_ || disk_.write_errno_ != 0) return Error::cannot_write_to_file;
    const size_t end = static_cast<size_t>(position) + bytes.size();
    if (data_->bytes.size() < end) data_->bytes.resize(end);
    std::memcpy(data_->bytes.data() + position, bytes.data(), bytes.size());
    return ok_status();
  }
  Status sync_now() override {
    if (disk_.crashed_ || disk_.sync_errno_ != 0) return Error::cannot_sync_file;
    data_->synced = data_->bytes.size();
    return ok_status();
  }
  Status truncate_now(uint64_t size) override {
    if (disk_.crashed_) return Error::cannot_write_to_file;
    data_->bytes.resize(static_cast<size_t>(size));
    data_->synced = std::min(data_->synced, size);
    return ok_status();
  }

 private:
  MemoryDisk& disk_;
  std::shared_ptr<FileData> data_;
};

class MemoryDisk::Lock final : public storage::DirectoryLock {
 public:
  Lock(MemoryDisk& disk, std::string path) : disk_(disk), path_(std::move(path)) {}
  ~Lock() override { disk_.locked_.erase(path_); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  MemoryDisk& disk_;
  std::string path_;
};

Status MemoryDisk::create_directories(const std::string& path) {
  directories_.insert(path);
  return ok_status();
}

Result<std::vector<std::string>> MemoryDisk::list(const std::string& directory) {
  std::vector<std::string> names;
  const std::string prefix = directory + "/";
  for (const auto& [path, data] : files_) {
    if (path.starts_with(prefix) && path.find('/', prefix.size()) == std::string::npos) {
      names.push_back(path.substr(prefix.size()));
    }
  }
  return names;
}

Result<std::unique_ptr<storage::DiskFile>> MemoryDisk::open(const std::string& path, bool create) {
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (!create || crashed_) return Error::cannot_read_file;
    it = files_.emplace(path, std::make_shared<FileData>()).first;
  }
  return std::unique_ptr<storage::DiskFile>(std::make_unique<File>(*this, it->second));
}

Status MemoryDisk::remove(const std::string& path) {
  files_.erase(path);  // Open handles keep the data, as an unlinked inode.
  return ok_status();
}

Result<std::unique_ptr<storage::DirectoryLock>> MemoryDisk::lock(const std::string& directory) {
  if (!locked_.insert(directory).second) return Error::cannot_open_database;
  return std::unique_ptr<storage::DirectoryLock>(std::make_unique<Lock>(*this, directory));
}

void MemoryDisk::drive() {
  if (queue_.empty()) {
    // A log waiting for a completion that was never submitted would hang forever.
    std::fprintf(stderr, "MemoryDisk::drive() with nothing in flight\n");
    std::abort();
  }
  Op op = queue_.front();
  queue_.pop_front();
  run(op);
}

size_t MemoryDisk::drive_all() {
  size_t count = 0;
  while (!queue_.empty()) {
    drive();
    count++;
  }
  return count;
}

void MemoryDisk::restart() {
  crashed_ = false;
  locked_.clear();
  for (auto& [path, data] : files_) data->synced = data->bytes.size();
}

void MemoryDisk::write_file(const std::string& path, std::span<const std::byte> bytes) {
  auto data = std::make_shared<FileData>();
  data->bytes.assign(bytes.begin(), bytes.end());
  data->synced = bytes.size();
  files_[path] = std::move(data);
}

int32_t MemoryDisk::run_write(Op& op) {
  if (next_write_errno_ != 0) return -std::exchange(next_write_errno_, 0);
  if (write_errno_ != 0) return -write_errno_;
  // A durable write carries its sync: it fails as syncs do.
  if (op.kind == Op::Kind::durable && sync_errno_ != 0) return -sync_errno_;
  size_t length = op.write_from.size();
  if (short_writes_ && length > 64) length /= 2;  // Small ones complete, so progress is made.
  place(*op.file, op.write_from.first(length), op.position);
  if (op.kind == Op::Kind::durable) {
    op.file->synced = std::max<uint64_t>(op.file->synced, op.position + length);
  }
  return static_cast<int32_t>(length);
}

void MemoryDisk::run(Op& op) {
  int32_t result = -EIO;
  if (!crashed_) {
    switch (op.kind) {
      case Op::Kind::write:
      case Op::Kind::durable: result = run_write(op); break;
      case Op::Kind::read: {
        const std::vector<std::byte>& bytes = op.file->bytes;
        const size_t from = std::min(static_cast<size_t>(op.position), bytes.size());
        const size_t length = std::min(op.read_into.size(), bytes.size() - from);
        std::memcpy(op.read_into.data(), bytes.data() + from, length);
        result = static_cast<int32_t>(length);
        break;
      }
      case Op::Kind::sync:
        result = sync_errno_ != 0 ? -sync_errno_ : 0;
        if (result == 0) op.file->synced = op.file->bytes.size();
        break;
    }
  }
  op.done->complete(result, 0);
}

}  // namespace hark::test
