#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/functional/function_ref.h>

#include "hark/core/base/result.h"

namespace hark::storage {

// hark's one way to keep a log of framed records in a file (docs/storage-format.md §Framed
// record files): the broker's metadata log (<data>/metadata.log) and harkd's users
// (<data>/users.log) both use it. Layout: a 16-byte header ([magic 8 bytes][format version
// u32][reserved u32 = 0]), then records [payload length u32][XXH32 (seed 0) of the payload
// u32][payload], little-endian. A record is acknowledged only once it is written and
// fdatasynced; a last record cut short by a crash was never acknowledged and is cut off at
// open. Control plane: blocking file calls, made at start or off the data path.

inline constexpr size_t record_file_header_bytes = 16;
inline constexpr size_t record_header_bytes = 8;

// The header of a record file with `magic` (exactly 8 bytes) and `version`.
std::array<std::byte, record_file_header_bytes> record_file_header(std::string_view magic,
                                                                   uint32_t version);

// Starts a record at the end of `out`: reserves its header. Append the payload, then call
// finish_record(out, start) with the returned start.
size_t begin_record(std::vector<std::byte>& out);
// Writes the length and checksum of the record begun at `start` (its payload runs to the end
// of `out`). Requires: a non-empty payload.
void finish_record(std::vector<std::byte>& out, size_t start);

// The first whole, intact record at the start of `bytes`: its payload, and how many bytes it
// takes. Error::state_file_corrupted if it is cut short or its checksum does not match.
struct FramedRecord {
  std::span<const std::byte> payload;
  size_t size = 0;
};
Result<FramedRecord> next_record(std::span<const std::byte> bytes);

// An open record file: its descriptor and the size of its acknowledged records (where the
// next one goes). Owns `fd`.
class RecordFile {
 public:
  // Opens (creating if absent, with its header) `path` and calls `replay` with each record's
  // payload in order. A damaged last record (a torn write) is cut off and logged; a damaged
  // record with more after it is state_file_corrupted. Errors: invalid_version (another magic
  // or version), cannot_open_database, cannot_read_file, cannot_write_to_file, or the first
  // error `replay` returns (logged with the record's index).
  static Result<RecordFile> open(const std::string& path, std::string_view magic, uint32_t version,
                                 absl::FunctionRef<Status(std::span<const std::byte>)> replay);

  RecordFile(RecordFile&& other) noexcept;
  RecordFile& operator=(RecordFile&& other) noexcept;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  ~RecordFile();

  // Appends whole framed records (pwrite + fdatasync, blocking). On failure the file is cut
  // back to its acknowledged size. Errors: cannot_write_to_file, cannot_sync_file.
  Status append_now(std::span<const std::byte> records);
  // After an asynchronous append of `bytes` (written and synced by the caller's ring).
  void acknowledged(uint64_t bytes) { size_ += bytes; }
  // Cuts the file back to its acknowledged size (after a failed asynchronous append).
  Status cut_back();

  // After `fd` (a file with the same header and `size` bytes of records, written and synced)
  // was renamed over this one's path: it becomes this file; the old descriptor is closed.
  void replace(int fd, uint64_t size);
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  RecordFile(int fd, uint64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}

  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

}  // namespace hark::storage
