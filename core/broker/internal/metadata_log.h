#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/base/ref.h"
#include "hark/core/base/result.h"
#include "hark/core/broker/internal/catalog.h"
#include "hark/core/broker/metadata_journal.h"
#include "hark/core/ownership_map.h"
#include "hark/io/completion.h"
#include "hark/io/ring.h"
#include "hark/storage/record_file.h"

namespace hark::core::internal {

// The catalog on disk: <data>/metadata.log, a storage::RecordFile with magic "HARKMETA" whose
// records are journal records (journal.h), appended in order. A command is
// acknowledged only after its record is written and fdatasynced, so a restart never forgets
// an acknowledged change. docs/storage-format.md §Metadata log. The single node's
// MetadataJournal, and a cluster's local cache of the shared one (server/cluster/etcd_journal.h).
class MetadataLog final : public MetadataJournal, private io::Completion {
 public:
  static constexpr uint32_t format_version = 1;

  // Opens (creating if absent) and replays the log into `catalog`. A last record that is cut
  // short or fails its checksum (a crash during its write: it was never acknowledged) is cut
  // off and logged. The extension records it holds go to `extensions`, in order. Errors:
  // invalid_version (another format), state_file_corrupted (a record that decodes but does not
  // fit the catalog), file errors. Blocking: at start only.
  // `snapshot_entries`: past this many entries after the file's last snapshot, snapshot_due()
  // (0: never). A `<path>.tmp` left by a compaction a crash interrupted is deleted first.
  static Result<std::unique_ptr<MetadataLog>> open(const std::string& path,
                                                   const OwnershipMap& ownership, Clock& clock,
                                                   Ref<const Catalog>& catalog,
                                                   std::vector<std::vector<std::byte>>& extensions,
                                                   uint64_t snapshot_entries = 0);
  // Blocking, before the broker starts: replaces the file at `path` by the header and
  // `snapshot` (one framed snapshot record, checked by replaying it on an empty catalog first:
  // state_file_corrupted if it does not) through <path>.tmp, fdatasync, rename and a directory
  // fsync. File errors: cannot_write_to_file, cannot_sync_file.
  static Status adopt_snapshot(const std::string& path, std::span<const std::byte> snapshot);
  ~MetadataLog() override;
  MetadataLog(const MetadataLog&) = delete;
  MetadataLog& operator=(const MetadataLog&) = delete;

  // Shard 0, one at a time: appends the entry's records through the reactor's ring and
  // fdatasyncs; then calls `done.journaled()` (cannot_write_to_file / cannot_sync_file on
  // failure, the file cut back to where it was).
  void append(io::Reactor& reactor, const JournalEntry& entry, JournalDone& done) override;
  // One node: nobody else to wait for; answers at once.
  void applied(io::Reactor& reactor, uint64_t sequence, bool own, JournalDone& done) override;
  // Blocking (pwrite + fdatasync): for an undo, on an error path only.
  Status append_undo(std::span<const std::byte> records) override;
  bool snapshot_due() const override {
    return snapshot_entries_ != 0 && entries_ > snapshot_entries_;
  }
  // Compaction, shard 0, between appends: the header and `snapshot` to <path>.tmp (io_uring
  // write, fdatasync), renamed over the file, the directory fsynced; the open and the rename
  // are blocking calls on shard 0, once per compaction. A crash before the rename leaves the
  // old file (and a .tmp that open() deletes), after it the new one.
  void snapshot(io::Reactor& reactor, std::span<const std::byte> snapshot,
                JournalDone& done) override;
  void detach(JournalDone& done) override;
  // Entries past the file's last snapshot (test seam and bound).
  uint64_t entries_since_snapshot() const { return entries_; }

 private:
  enum class Step : uint8_t { append, compact_write, compact_sync, dir_sync };

  MetadataLog(storage::RecordFile file, uint64_t entries, uint64_t snapshot_entries)
      : file_(std::move(file)), entries_(entries), snapshot_entries_(snapshot_entries) {}
  void complete(int32_t result, uint32_t flags) override;
  void appended(int32_t result);
  void compacted(int32_t result);
  void renamed();
  void fail(Error error);
  void fail_compaction(Error error, int code);
  // Tells done_ (unless detached) and forgets it.
  void answer(JournalResult result);

  storage::RecordFile file_;
  io::Ring* ring_ = nullptr;
  JournalDone* done_ = nullptr;
  std::vector<std::byte> pending_;
  uint64_t written_ = 0;  // Of pending_.
  bool syncing_ = false;
  Step step_ = Step::append;
  int compact_fd_ = -1;  // <path>.tmp while it is written, then the directory while synced.
  uint64_t entries_ = 0;
  uint64_t snapshot_entries_ = 0;
};

}  // namespace hark::core::internal
