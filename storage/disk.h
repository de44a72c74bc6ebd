#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/io/completion.h"

namespace hark::storage {

// Modes of everything hark creates under its data directory: messages, offsets, users and
// metadata are readable by the owner only (as users.log always was).
inline constexpr unsigned private_file_mode = 0600;
inline constexpr unsigned private_directory_mode = 0700;

// The block of durable writes (DiskFile::write_durable): a multiple of the O_DIRECT alignment
// of every Linux file system hark runs on (statx STATX_DIOALIGN; checked at open_direct()).
inline constexpr uint64_t direct_block_bytes = 4096;

// Creates `path` and its missing parents with private_directory_mode (existing ones keep
// theirs). Blocking; control plane. Error::cannot_create_base_directory (logged) on failure.
Status create_private_directories(const std::string& path);

// An open file of a partition (a segment's .log or .index). The seam between the log and the
// disk: RingDisk implements it on io::Ring, tests/support/memory_disk.h in memory with fault
// injection and simulated crashes.
//
// The asynchronous operations are the data plane: each completes exactly once, through
// `done.complete(result, 0)` (bytes moved or -errno) on the owner shard, never before the call
// returns. The buffer must stay valid and unchanged until then. The synchronous ones are the
// control plane (open, recovery, roll) and may block.
class DiskFile {
 public:
  virtual ~DiskFile() = default;

  virtual void write(std::span<const std::byte> bytes, uint64_t position, io::Completion& done) = 0;
  virtual void read(std::span<std::byte> bytes, uint64_t position, io::Completion& done) = 0;
  virtual void datasync(io::Completion& done) = 0;
  // Durability `always`: completes (with the write's result) once `bytes` are on stable
  // storage: one operation for the log (RingDisk: a write with RWF_DSYNC). The address,
  // `position` and the length are multiples of direct_block_bytes. Requires open_direct() first;
  // one at a time per file.
  virtual void write_durable(std::span<const std::byte> bytes, uint64_t position,
                             io::Completion& done) = 0;
  // Prepares write_durable() (control plane): RingDisk opens the file a second time with
  // O_DIRECT, so a write into pre-written blocks leaves its sync no block allocation to journal;
  // where the file system refuses O_DIRECT, durable writes are buffered.
  virtual Status open_direct() = 0;

  virtual Result<uint64_t> size() = 0;
  // Reads exactly bytes.size() bytes at `position`, or fails (Error::cannot_read_file).
  virtual Status read_now(std::span<std::byte> bytes, uint64_t position) = 0;
  virtual Status write_now(std::span<const std::byte> bytes, uint64_t position) = 0;
  virtual Status truncate_now(uint64_t size) = 0;
  virtual Status sync_now() = 0;
};

// Held while a directory is locked; destroying it unlocks.
class DirectoryLock {
 public:
  virtual ~DirectoryLock() = default;
};

// The file system as the log sees it. Paths are absolute or relative to the working directory.
// Owned by the log's shard and used only there.
class Disk {
 public:
  virtual ~Disk() = default;

  // Creates `path` and its missing parents.
  virtual Status create_directories(const std::string& path) = 0;
  // Names (not paths) of the regular files in `directory`.
  virtual Result<std::vector<std::string>> list(const std::string& directory) = 0;
  virtual Result<std::unique_ptr<DiskFile>> open(const std::string& path, bool create) = 0;
  virtual Status remove(const std::string& path) = 0;
  // Takes an exclusive lock on `directory`; a second lock (this or another process) fails with
  // Error::cannot_open_database until the first is destroyed.
  virtual Result<std::unique_ptr<DirectoryLock>> lock(const std::string& directory) = 0;

  // Blocks until at least one asynchronous operation completed and runs its completion. Only
  // for flush() and close(), which wait for their own operations. Never call it from inside a
  // completion: it would dispatch the ring re-entrantly.
  virtual void drive() = 0;
};

}  // namespace hark::storage
