#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "core/base/result.h"
#include "core/broker/operations.h"
#include "io/completion.h"
#include "io/ring.h"

namespace hark::core::internal {

// The stored consumer offsets of one partition: in memory, and in <partition>/consumer_offsets
// as 16-byte records [kind u8][0 u8 × 3][consumer id u32][offset u64] (offset UINT64_MAX: the
// consumer's offset was deleted), appended through the ring on every change. Like Iggy's
// offsets they are not fsynced: after a crash the last few stores may be lost and a consumer
// reads a few messages again (at-least-once), while the data itself follows the durability
// policy. At open the last record per consumer wins and the file is rewritten compactly.
// Owner shard only.
class OffsetStore final : private io::Completion {
 public:
  // Blocking: at partition open only. Errors: cannot_read_consumer_offsets, file errors.
  static Result<std::unique_ptr<OffsetStore>> open(io::Ring& ring, const std::string& path);
  ~OffsetStore();
  OffsetStore(const OffsetStore&) = delete;
  OffsetStore& operator=(const OffsetStore&) = delete;

  std::optional<uint64_t> get(const ConsumerRef& consumer) const;
  void set(const ConsumerRef& consumer, uint64_t offset);
  // Returns false if nothing was stored for `consumer`.
  bool erase(const ConsumerRef& consumer);
  // Forgets every offset (purge). Waits for a write in flight.
  void clear();
  // Waits for the write in flight, if any (drives the ring: not from inside a completion).
  void close();

 private:
  OffsetStore(io::Ring& ring, int fd) : ring_(ring), fd_(fd) {}
  void record(const ConsumerRef& consumer, uint64_t offset);
  void write_next();
  void complete(int32_t result, uint32_t flags) override;

  io::Ring& ring_;
  int fd_;
  absl::flat_hash_map<ConsumerRef, uint64_t> offsets_;
  std::vector<std::byte> queued_;     // Records not yet submitted.
  std::vector<std::byte> in_flight_;  // The write in flight.
  uint64_t size_ = 0;                 // File size once in_flight_ is written.
  bool writing_ = false;
  bool rewrite_ = false;  // A write failed: close() rewrites the file from memory.
};

}  // namespace hark::core::internal
