#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "hark/core/base/units.h"
#include "hark/io/completion.h"
#include "hark/storage/disk.h"
#include "hark/storage/internal/file_ref.h"
#include "hark/storage/read_view.h"

namespace hark::storage::internal {

// Reads of committed messages that are no longer in memory: one ring read into a fresh Chunk,
// then every message is checked (complete, checksum, offsets increasing from the expected
// first) before it is served, because bytes from a disk are input, not our data. Damage is
// reported (Error::invalid_message_checksum) and never served.
//
// Owner shard only. Read operations come from a free list that grows to the peak number of
// concurrent disk reads and is reused after that; each read allocates only its buffer.
class DiskReader {
 public:
  // `disk` must outlive the reader.
  explicit DiskReader(Disk& disk);
  ~DiskReader();
  DiskReader(const DiskReader&) = delete;
  DiskReader& operator=(const DiskReader&) = delete;

  struct Request {
    FileRef file;       // Kept open until the read completes.
    uint64_t position;  // Of the first message in the .log.
    uint64_t bytes;     // To read; the last message may end before (a skipped gap).
    Offset first;       // The offset the first message must carry.
    uint32_t count;     // At most this many messages.
    Offset end;         // Messages at or past this offset are not served.
  };

  // Starts the read; `done` is called once from a ring completion.
  void read(Request request, ReadCompletion& done);

  size_t in_flight() const { return in_flight_; }
  // Drives the disk until no read is in flight (close). Never from inside a completion.
  void drain();

 private:
  class ReadOp;
  void finished(ReadOp& op);

  Disk& disk_;
  std::vector<std::unique_ptr<ReadOp>> ops_;  // Every op ever made; owns them.
  std::vector<ReadOp*> free_;
  size_t in_flight_ = 0;
};

}  // namespace hark::storage::internal
