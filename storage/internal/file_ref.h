#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "hark/core/base/assert.h"
#include "hark/storage/disk.h"

namespace hark::storage::internal {

// A counted reference to an open DiskFile, shared by the segment that owns it and the
// operations in flight on it, so retention or purge can drop a segment while a read or write
// still runs: the file closes when the last reference goes. Owner shard only (every holder
// lives and completes there), so the count is a plain integer. Move-only; copy() is explicit.
class FileRef {
 public:
  FileRef() = default;
  explicit FileRef(std::unique_ptr<DiskFile> file)
      : holder_(std::make_unique<Holder>(Holder{std::move(file), 1}).release()) {}
  FileRef(FileRef&& other) noexcept : holder_(std::exchange(other.holder_, nullptr)) {}
  FileRef& operator=(FileRef&& other) noexcept {
    if (this != &other) {
      reset();
      holder_ = std::exchange(other.holder_, nullptr);
    }
    return *this;
  }
  FileRef(const FileRef&) = delete;
  FileRef& operator=(const FileRef&) = delete;
  ~FileRef() { reset(); }

  FileRef copy() const {
    HARK_ASSERT(holder_ != nullptr);
    holder_->refs++;
    FileRef other;
    other.holder_ = holder_;
    return other;
  }
  void reset() {
    if (holder_ == nullptr) return;
    HARK_ASSERT(holder_->refs > 0);
    if (--holder_->refs == 0) std::unique_ptr<Holder> last(holder_);
    holder_ = nullptr;
  }

  DiskFile& operator*() const { return *holder_->file; }
  DiskFile* operator->() const { return holder_->file.get(); }
  explicit operator bool() const { return holder_ != nullptr; }

 private:
  struct Holder {
    std::unique_ptr<DiskFile> file;
    uint32_t refs;
  };
  Holder* holder_ = nullptr;
};

}  // namespace hark::storage::internal
