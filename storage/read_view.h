#pragma once

#include <cstdint>
#include <span>

#include "hark/core/base/intrusive_list.h"
#include "hark/core/base/result.h"
#include "hark/core/base/units.h"
#include "hark/storage/chunk.h"

namespace hark::storage {

namespace internal {
class LogWriter;
}

// Committed messages of one partition, contiguous and in Iggy's stored format (64-byte header,
// payload, user headers; docs/storage-format.md), ready to be written to a socket as they are.
//
// Holds a reference on the immutable Chunk its bytes live in, so the bytes stay valid until the
// view is destroyed, even after the log dropped them (retention, purge, eviction) and on any
// thread: the broker may move a view to the shard of the poll it answers (docs/architecture.md
// §storage). Movable, not copyable. A default view is empty (count 0).
class ReadView {
 public:
  ReadView() = default;
  // Requires: `bytes` lie inside `chunk` and hold `count` whole messages, the first at `first`,
  // the last at `last`.
  ReadView(ChunkRef chunk, std::span<const std::byte> bytes, uint32_t count, Offset first,
           Offset last);
  ReadView(ReadView&&) noexcept = default;
  ReadView& operator=(ReadView&&) noexcept = default;
  ReadView(const ReadView&) = delete;
  ReadView& operator=(const ReadView&) = delete;

  std::span<const std::byte> bytes() const { return bytes_; }
  uint32_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Offset of the first message. Requires: !empty().
  Offset first() const { return first_; }
  // Offset of the last message (what auto-commit stores). Requires: !empty().
  Offset last() const { return last_; }

 private:
  ChunkRef chunk_;
  std::span<const std::byte> bytes_;
  uint32_t count_ = 0;
  Offset first_;
  Offset last_;
};

// Receives the result of PartitionLog::read(): exactly one call per read, on the log's shard,
// either before read() returns (data in memory) or later from a ring completion (data on disk).
// The object must stay alive until then.
class ReadCompletion {
 public:
  virtual void read_done(Result<ReadView> view) = 0;

 protected:
  ~ReadCompletion() = default;
};

// Receives the end of an asynchronous PartitionLog::flush(): once, on the log's shard, when
// every byte appended before the call is written (and synced, if asked), or with the error
// that stopped it. The object must stay alive until then.
struct FlushTag;
class FlushCompletion : public ListHook<FlushTag> {
 public:
  virtual void flushed(Status status) = 0;

 protected:
  virtual ~FlushCompletion() = default;

 private:
  friend class internal::LogWriter;
  uint64_t target_ = 0;
  bool sync_ = false;
};

}  // namespace hark::storage
