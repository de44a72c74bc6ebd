#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hark/io/ring.h"
#include "hark/storage/disk.h"

namespace hark::storage {

// The real Disk: asynchronous reads, writes and fdatasync on the shard's io::Ring; the control
// plane (open, list, remove, lock, recovery reads) with plain blocking syscalls, because it
// runs at open, at a segment roll and at retention, not per message. Owner shard only.
class RingDisk final : public Disk {
 public:
  // `ring` must outlive the disk and every file it opens.
  explicit RingDisk(io::Ring& ring) : ring_(ring) {}

  Status create_directories(const std::string& path) override;
  Result<std::vector<std::string>> list(const std::string& directory) override;
  Result<std::unique_ptr<DiskFile>> open(const std::string& path, bool create) override;
  Status remove(const std::string& path) override;
  // flock(LOCK_EX | LOCK_NB) on the directory itself: held per open file description, so a
  // second open in this process conflicts too, and the kernel drops it if the process dies.
  Result<std::unique_ptr<DirectoryLock>> lock(const std::string& directory) override;
  void drive() override;

 private:
  io::Ring& ring_;
};

}  // namespace hark::storage
