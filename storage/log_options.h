#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "hark/core/base/units.h"

namespace hark::storage {

// When an appended batch commits — is acknowledged, readable and wakes parked polls — and when
// its bytes reach the disk (docs/operations.md §Durability, docs/architecture.md §storage):
//   memory    at append; the bytes are written in the background (flush_bytes, flush_interval).
//             A process crash loses acknowledged messages: an explicit opt-in for speed.
//   write     (default) once the write() of its bytes completed: they are in the kernel, so a
//             process crash (SIGKILL, abort, OOM kill) loses nothing acknowledged; a power loss
//             or kernel crash may lose what was not synced yet.
//   interval  as `write`, and every written segment file is fdatasynced every sync_interval.
//   always    once the fdatasync covering its bytes completed.
// Outside `memory` a write starts as soon as bytes are appended and none is in flight; batches
// appended meanwhile share the next write (and, under `always`, fdatasync): group commit.
enum class Durability : uint8_t { memory, write, interval, always };

// What recovery does with a message that is present and indexed but fails validation
// (checksum, offset, reserved field) — damage, not a torn tail. Either way it is never served.
enum class CorruptionPolicy : uint8_t {
  refuse,  // open() fails with Error::invalid_message_checksum, naming the offset.
  skip,    // Logged loudly; the message (and its offset) is left out of the index.
};

// Settings of one partition log. Control plane: read at open().
struct LogOptions {
  // The partition directory: <data>/streams/<s>/topics/<t>/partitions/<p>. Created if absent.
  std::string directory;
  // A segment rolls when the next batch would take it past this. At most 2^32 - 1 (index
  // positions are u32).
  uint64_t segment_bytes_max = 1ull << 30;
  Durability durability = Durability::write;
  // `interval`: fdatasync of every written segment file this often.
  Duration sync_interval = std::chrono::seconds(1);
  // `memory`: background writes start when this many bytes are unwritten, or flush_interval
  // after the first unwritten byte, whichever comes first (other policies write at once).
  // Failed writes are retried every flush_interval.
  uint64_t flush_bytes = 1 << 20;
  Duration flush_interval = std::chrono::milliseconds(100);

  // Retention, applied to sealed segments only (apply_retention(), and after every roll).
  // Zero disables each rule. Age counts from a segment's newest message timestamp.
  Duration retention_age = Duration(0);
  uint64_t retention_bytes = 0;

  CorruptionPolicy corruption = CorruptionPolicy::refuse;
  // Scan every segment fully at open (checksums of every message). Default: only each
  // segment's unindexed tail is scanned; reads from disk verify checksums anyway.
  bool verify_checksums_on_open = false;

  // Memory: appended bytes live in chunks of this size (a bigger batch gets its own chunk).
  uint64_t chunk_bytes = 1 << 20;
  // Written (and, under `interval`, synced) chunks are kept for reads until the log holds this
  // many bytes of chunks; older ones are dropped and read from disk through the ring.
  uint64_t memory_bytes_max = 64ull << 20;
  // Appends are rejected (Error::cannot_append_message) while this many bytes wait to be
  // written: the disk is slower than the producers.
  uint64_t unwritten_bytes_max = 256ull << 20;

  // The message-id deduplication window (PartitionLog::append, DedupWindow): a sent message
  // whose id is among the ids of the last `dedup_window` messages appended is dropped. 0: off
  // (harkd's --dedup-window sets it for every partition; docs/cluster.md §The data path).
  uint32_t dedup_window = 0;
};

}  // namespace hark::storage
