#include "hark/core/broker/internal/metadata_log.h"

#include <string_view>
#include <utility>

#include "hark/core/base/log.h"
#include "hark/core/broker/internal/journal.h"

namespace hark::core::internal {

namespace {

constexpr std::string_view magic = "HARKMETA";

}  // namespace

Result<std::unique_ptr<MetadataLog>> MetadataLog::open(
    const std::string& path, const OwnershipMap& ownership, Clock& clock,
    Ref<const Catalog>& catalog, std::vector<std::vector<std::byte>>& extensions) {
  CatalogEdit edit(*catalog, ownership, clock);
  HARK_TRY_ASSIGN(storage::RecordFile file,
                  storage::RecordFile::open(path, magic, format_version,
                                            [&edit](std::span<const std::byte> payload) {
                                              return replay(payload, edit);
                                            }));
  catalog = edit.take();
  extensions = std::move(edit.extensions);
  HARK_LOG_INFO("%s: %u streams", path, catalog->streams.size());
  return std::unique_ptr<MetadataLog>(new MetadataLog(std::move(file)));
}

MetadataLog::~MetadataLog() = default;

void MetadataLog::append(io::Reactor& reactor, const JournalEntry& entry, JournalDone& done) {
  HARK_ASSERT(done_ == nullptr);
  HARK_ASSERT(!entry.records.empty());
  ring_ = &reactor.ring();
  done_ = &done;
  pending_.assign(entry.records.begin(), entry.records.end());
  written_ = 0;
  syncing_ = false;
  ring_->write(file_.fd(), pending_, file_.size(), *this);
}

void MetadataLog::applied(io::Reactor& /*reactor*/, uint64_t /*sequence*/, bool /*own*/,
                          JournalDone& done) {
  done.journaled({});
}

Status MetadataLog::append_undo(std::span<const std::byte> records) {
  HARK_ASSERT(done_ == nullptr);
  return file_.append_now(records);
}

void MetadataLog::complete(int32_t result, uint32_t /*flags*/) {
  if (syncing_) {
    if (result < 0) {
      fail(Error::cannot_sync_file);
      return;
    }
    file_.acknowledged(pending_.size());
    std::exchange(done_, nullptr)->journaled({});
    return;
  }
  if (result <= 0) {
    fail(Error::cannot_write_to_file);
    return;
  }
  written_ += static_cast<uint64_t>(result);
  if (written_ < pending_.size()) {
    ring_->write(file_.fd(), std::span(pending_).subspan(written_), file_.size() + written_, *this);
    return;
  }
  syncing_ = true;
  ring_->fdatasync(file_.fd(), *this);
}

void MetadataLog::fail(Error error) {
  HARK_LOG_ERROR("metadata log: %s; the command is refused", std::string(error_name(error)));
  // Cut back what may have been written, so the next record follows the last good one.
  // Error path only: a blocking ftruncate on shard 0 is fine here.
  (void)file_.cut_back();
  std::exchange(done_, nullptr)->journaled({.status = error});
}

}  // namespace hark::core::internal
