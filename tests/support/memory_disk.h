#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hark/storage/disk.h"

namespace hark::test {

// An in-memory storage::Disk for tests and the fuzzer: the file seam with faults on demand.
//
// Asynchronous operations queue and complete only in drive(), in submission order, so a test
// decides when the "kernel" finishes them. Faults: fail_writes()/fail_syncs() make every such
// operation fail with an errno until cleared; fail_next_write() fails one; short_writes() makes
// writes of more than 64 bytes move half of them. crash() simulates power loss: each file keeps
// what its last datasync covered plus a random part of the bytes written after it (cut at a random
// byte), queued operations fail with EIO and so does everything until restart(), so the log under
// test can be closed and dropped before it is reopened on the surviving bytes. A durable write
// (write_durable) is synced when it completes; one still queued at a crash is torn: a random
// prefix of its bytes reaches the file (a device that wrote part of a rewritten block).
//
// Single-threaded. Not thread-safe.
class MemoryDisk final : public storage::Disk {
 public:
  struct FileData {
    std::vector<std::byte> bytes;
    uint64_t synced = 0;  // Bytes [0, synced) survive a crash.
  };

  MemoryDisk() = default;
  MemoryDisk(const MemoryDisk&) = delete;
  MemoryDisk& operator=(const MemoryDisk&) = delete;

  Status create_directories(const std::string& path) override;
  Result<std::vector<std::string>> list(const std::string& directory) override;
  Result<std::unique_ptr<storage::DiskFile>> open(const std::string& path, bool create) override;
  Status remove(const std::string& path) override;
  Result<std::unique_ptr<storage::DirectoryLock>> lock(const std::string& directory) override;
  void drive() override;

  // Completes every queued operation (and those they queue). Returns how many ran.
  size_t drive_all();
  size_t pending() const { return queue_.size(); }
  // Asynchronous fdatasyncs submitted so far (group commit tests count them).
  uint64_t datasyncs_count() const { return datasyncs_count_; }
  // Asynchronous writes submitted so far (group commit tests count them).
  uint64_t writes_count() const { return writes_count_; }
  // Durable writes submitted so far, and those a crash tore.
  uint64_t durable_writes_count() const { return durable_writes_count_; }
  uint64_t torn_writes_count() const { return torn_writes_count_; }

  void fail_writes(int error_number) { write_errno_ = error_number; }
  void fail_syncs(int error_number) { sync_errno_ = error_number; }
  void fail_next_write(int error_number) { next_write_errno_ = error_number; }
  void short_writes(bool enabled) { short_writes_ = enabled; }

  // `random` picks each file's cut: called with a bound, returns a value in [0, bound].
  template <typename Random>
  void crash(Random&& random) {
    for (const Op& op : queue_) {
      if (op.kind != Op::Kind::durable) continue;
      const auto torn = static_cast<size_t>(random(op.write_from.size()));
      place(*op.file, op.write_from.first(torn), op.position);
      torn_writes_count_ += torn < op.write_from.size() ? 1 : 0;
    }
    for (auto& [path, data] : files_) {
      const uint64_t size = data->bytes.size();
      const uint64_t keep = std::min(data->synced, size);
      data->bytes.resize(static_cast<size_t>(keep + random(size - keep)));
    }
    crashed_ = true;
  }
  void restart();

  bool exists(const std::string& path) const { return files_.count(path) != 0; }
  // The bytes of a file, to inspect or damage. Requires: exists(path).
  std::vector<std::byte>& bytes(const std::string& path) { return files_.at(path)->bytes; }
  void write_file(const std::string& path, std::span<const std::byte> bytes);
  size_t files_count() const { return files_.size(); }
  // DiskFiles open now (a log's open-file budget).
  size_t open_files() const { return open_files_; }

 private:
  class File;
  class Lock;
  struct Op {
    enum class Kind : uint8_t { write, durable, read, sync } kind;
    std::shared_ptr<FileData> file;
    std::span<std::byte> read_into;
    std::span<const std::byte> write_from;
    uint64_t position = 0;
    io::Completion* done = nullptr;
  };
  void run(Op& op);
  // Copies `bytes` into `file` at `position`, growing it (with zeros) as needed.
  static void place(FileData& file, std::span<const std::byte> bytes, uint64_t position) {
    const size_t end = static_cast<size_t>(position) + bytes.size();
    if (file.bytes.size() < end) file.bytes.resize(end);
    std::copy(bytes.begin(), bytes.end(), file.bytes.begin() + static_cast<ptrdiff_t>(position));
  }
  int32_t run_write(Op& op);

  std::map<std::string, std::shared_ptr<FileData>> files_;
  std::set<std::string> directories_;
  std::set<std::string> locked_;
  std::deque<Op> queue_;
  int write_errno_ = 0;
  int sync_errno_ = 0;
  int next_write_errno_ = 0;
  bool short_writes_ = false;
  bool crashed_ = false;
  uint64_t datasyncs_count_ = 0;
  size_t open_files_ = 0;
  uint64_t writes_count_ = 0;
  uint64_t durable_writes_count_ = 0;
  uint64_t torn_writes_count_ = 0;
};

}  // namespace hark::test
