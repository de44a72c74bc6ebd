// PartitionLog's control plane: open, recovery, close.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "hark/core/base/log.h"
#include "hark/storage/partition_log.h"
#include "hark/storage/ring_disk.h"
#include "hark/storage/segment_recovery.h"

namespace hark::storage {
namespace {

Status check_options(const LogOptions& options) {
  const bool valid =
      !options.directory.empty() && options.segment_bytes_max > 0 &&
      options.segment_bytes_max <= UINT32_MAX && options.chunk_bytes > 0 &&
      options.flush_interval.count() > 0 &&
      (options.durability != Durability::interval || options.sync_interval.count() > 0);
  if (!valid) {
    HARK_LOG_ERROR("partition %s: invalid log options", options.directory);
    return Error::invalid_configuration;
  }
  return ok_status();
}

Result<std::vector<std::byte>> read_all(DiskFile& file, uint64_t from, uint64_t to) {
  std::vector<std::byte> bytes(static_cast<size_t>(to - from));
  if (!bytes.empty()) HARK_TRY(file.read_now(bytes, from));
  return bytes;
}

}  // namespace

PartitionLog::PartitionLog(const LogEnvironment& environment, const LogOptions& options)
    : disk_(environment.disk),
      timers_(environment.timers),
      timer_clock_(environment.timer_clock),
      clock_(environment.clock),
      options_(options),
      writer_(disk_, timers_, timer_clock_, options_, segments_, accounts_, *this),
      reader_(disk_),
      window_(options.dedup_window) {}

PartitionLog::~PartitionLog() { close(); }

Result<std::unique_ptr<PartitionLog>> PartitionLog::open(io::Reactor& reactor, Clock& clock,
                                                         const LogOptions& options) {
  auto disk = std::make_unique<RingDisk>(reactor.ring());
  const LogEnvironment environment{
      .disk = *disk, .timers = reactor.timers(), .timer_clock = reactor.clock(), .clock = clock};
  HARK_TRY_ASSIGN(std::unique_ptr<PartitionLog> log, open(environment, options));
  log->owned_disk_ = std::move(disk);  // The log already refers to it; now it owns it too.
  return log;
}

Result<std::unique_ptr<PartitionLog>> PartitionLog::open(const LogEnvironment& environment,
                                                         const LogOptions& options) {
  HARK_TRY(check_options(options));
  std::unique_ptr<PartitionLog> log(new PartitionLog(environment, options));
  HARK_TRY(log->disk_.create_directories(options.directory));
  HARK_TRY_ASSIGN(log->lock_, log->disk_.lock(options.directory));
  HARK_TRY(log->recover());
  HARK_TRY(log->rebuild_window());
  log->open_ = true;
  log->writer_.start();
  return log;
}

Status PartitionLog::check_format_file(bool has_segments) {
  const std::string path = options_.directory + "/" + std::string(format_file_name);
  HARK_TRY_ASSIGN(const std::vector<std::string> names, disk_.list(options_.directory));
  const bool present =
      std::find(names.begin(), names.end(), std::string(format_file_name)) != names.end();
  if (!present && has_segments) {
    HARK_LOG_ERROR("partition %s: segments without a format file; refusing to guess",
                   options_.directory);
    return Error::invalid_version;
  }
  HARK_TRY_ASSIGN(std::unique_ptr<DiskFile> file, disk_.open(path, true));
  if (!present) {
    HARK_TRY(file->write_now(std::as_bytes(std::span(format_file_content)), 0));
    return file->sync_now();
  }
  HARK_TRY_ASSIGN(const uint64_t size, file->size());
  HARK_TRY_ASSIGN(const std::vector<std::byte> bytes, read_all(*file, 0, size));
  const std::string_view content(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (content == format_file_content_v1) {
    HARK_LOG_INFO("partition %s: format version 1 read as version 2 (marked so now)",
                  options_.directory);
    HARK_TRY(file->write_now(std::as_bytes(std::span(format_file_content)), 0));
    return file->sync_now();
  }
  if (content != format_file_content) {
    HARK_LOG_ERROR("partition %s: unknown format version; this build reads '%s'",
                   options_.directory,
                   format_file_content.substr(0, format_file_content.size() - 1));
    return Error::invalid_version;
  }
  return ok_status();
}

Status PartitionLog::recover() {
  HARK_TRY_ASSIGN(const std::vector<std::string> names, disk_.list(options_.directory));
  std::vector<Offset> starts;
  for (const std::string& name : names) {
    if (const std::optional<Offset> start = parse_log_file_name(name)) starts.push_back(*start);
  }
  std::sort(starts.begin(), starts.end());
  HARK_TRY(check_format_file(!starts.empty()));
  for (size_t i = 0; i < starts.size(); i++) {
    bool torn = false;
    HARK_TRY(recover_segment(starts[i], torn));
    const internal::Segment& recovered = *segments_.back();
    // The one before holds committed messages only and is followed by a committed one: it is
    // never written again, so its files close now rather than all at the end.
    if (!recovered.empty() && segments_.size() >= 2) {
      HARK_TRY(close_recovered(*segments_[segments_.size() - 2]));
    }
    const Offset end = recovered.empty() ? recovered.start : recovered.last_offset() + 1;
    const bool last = i + 1 == starts.size();
#ifdef HARK_MUTANT_NO_PREFIX_GUARD
    const bool ends_early = torn;  // Planted bug: a segment emptied by a crash goes unnoticed.
    (void)end;
#else
    const bool ends_early = torn || (!last && end != starts[i + 1]);
#endif
    if (!last && ends_early) {
      // A segment that ends early (torn, or cut by a crash) leaves a hole before the next one:
      // keeping what follows would serve a log that is not a prefix of what was committed.
      HARK_LOG_WARN("partition %s: segment %020u ends early; dropping the %u segment(s) after it",
                    options_.directory, starts[i].value(), starts.size() - i - 1);
      for (size_t j = i + 1; j < starts.size(); j++) {
        internal::Segment later(starts[j], options_.directory);
        remove_files(later);
      }
      break;
    }
  }
  if (segments_.empty()) HARK_TRY(add_segment(Offset(0)));
  for (auto& segment : segments_) segment->sealed = true;
  segments_.back()->sealed = false;
  const internal::Segment& last = *segments_.back();
  next_offset_ = appended_end_ = last.empty() ? last.start : last.last_offset() + 1;
  durable_end_ = ends_[0] = next_offset_;
  if (options_.durability == Durability::always) {
    // What a killed process left may still be only in the page cache: make it durable before
    // it is served as committed (a clean file syncs at no cost).
    for (auto& segment : segments_) {
      if (segment->log_file) HARK_TRY(segment->log_file->sync_now());
    }
  }
  for (const auto& segment : segments_) {
    if (!segment->empty())
      last_timestamp_ = std::max(last_timestamp_, segment->index.back().timestamp);
  }
  return ok_status();
}

Status PartitionLog::recover_segment(Offset start, bool& torn) {
  auto segment = std::make_unique<internal::Segment>(start, options_.directory);
  HARK_TRY(open_files(*segment, true));
  HARK_TRY_ASSIGN(const uint64_t log_bytes, segment->log_file->size());
  HARK_TRY_ASSIGN(const uint64_t index_bytes, segment->index_file->size());
  HARK_TRY_ASSIGN(const std::vector<std::byte> index,
                  read_all(*segment->index_file, 0, index_bytes));
  const std::vector<IndexEntry> indexed = decode_index(index, log_bytes);
  const uint64_t scan_from =
      options_.verify_checksums_on_open || indexed.empty() ? 0 : indexed.back().position;
  HARK_TRY_ASSIGN(const std::vector<std::byte> tail,
                  read_all(*segment->log_file, scan_from, log_bytes));
  HARK_TRY_ASSIGN(RecoveredSegment recovered,
                  scan_segment(SegmentScan{.start = start,
                                           .indexed = indexed,
                                           .log_bytes = log_bytes,
                                           .scan_from = scan_from,
                                           .tail = tail,
                                           .policy = options_.corruption}));
  HARK_TRY(check_order(start));
  HARK_TRY(apply_recovery(*segment, recovered, log_bytes, index_bytes));
  segment->index = std::move(recovered.entries);
  segment->size_bytes = recovered.valid_bytes;
  segment->written_bytes = segment->synced_bytes = segment->memory_position = segment->size_bytes;
  segment->prepared_bytes = segment->zeroed_bytes = segment->size_bytes;
  segment->index_written = segment->index_synced = segment->index.size();
  segments_.push_back(std::move(segment));
  // Zeros after the data are a pre-written region, not a segment that ends early.
  torn = recovered.torn && !recovered.zeros_after;
  return ok_status();
}

Status PartitionLog::close_recovered(internal::Segment& segment) {
  if (options_.durability == Durability::always) {
    // What a killed process left may still be only in the page cache: make it durable before
    // it is served as committed (a clean file syncs at no cost).
    HARK_TRY(segment.log_file->sync_now());
  }
  segment.log_file.reset();
  segment.index_file.reset();
  return ok_status();
}

Status PartitionLog::check_order(Offset start) const {
  if (segments_.empty()) return ok_status();
  const internal::Segment& previous = *segments_.back();
  const Offset previous_end = previous.empty() ? previous.start : previous.last_offset() + 1;
  if (start < previous_end) {
    HARK_LOG_ERROR("partition %s: segment %020u overlaps the one before it (which ends at %u)",
                   options_.directory, start.value(), previous_end.value());
    return Error::invalid_offset;
  }
  return ok_status();
}

Status PartitionLog::apply_recovery(internal::Segment& segment, const RecoveredSegment& recovered,
                                    uint64_t log_bytes, uint64_t index_bytes) {
  if (recovered.torn && recovered.zeros_after) {
    // Pre-written for durable writes (docs/storage-format.md §.log): not data, nothing lost.
    HARK_LOG_INFO("partition %s: segment %020u: cut %u pre-written zero bytes after its data",
                  options_.directory, segment.start.value(), log_bytes - recovered.valid_bytes);
  } else if (recovered.torn) {
    HARK_LOG_WARN(
        "partition %s: segment %020u has a torn tail: truncated %u bytes at position "
        "%u (offsets from %u were never fully written)",
        options_.directory, segment.start.value(), log_bytes - recovered.valid_bytes,
        recovered.valid_bytes, recovered.first_lost.value());
  }
  if (recovered.torn) {
    HARK_TRY(segment.log_file->truncate_now(recovered.valid_bytes));
    HARK_TRY(segment.log_file->sync_now());
  }
  const uint64_t wanted_bytes = uint64_t{recovered.entries.size()} * index_entry_bytes;
  if (!recovered.index_changed && index_bytes == wanted_bytes) return ok_status();
  HARK_LOG_INFO("partition %s: segment %020u: rebuilt its index (%u entries, file had %u bytes)",
                options_.directory, segment.start.value(), recovered.entries.size(), index_bytes);
  std::vector<std::byte> encoded(static_cast<size_t>(wanted_bytes));
  for (size_t i = 0; i < recovered.entries.size(); i++) {
    encode_index_entry(
        recovered.entries[i],
        std::span(encoded).subspan(i * index_entry_bytes).first<index_entry_bytes>());
  }
  if (!encoded.empty()) HARK_TRY(segment.index_file->write_now(encoded, 0));
  HARK_TRY(segment.index_file->truncate_now(wanted_bytes));
  return segment.index_file->sync_now();
}

Status PartitionLog::open_files(internal::Segment& segment, bool create) {
  HARK_TRY_ASSIGN(std::unique_ptr<DiskFile> log_file, disk_.open(segment.log_path, create));
  HARK_TRY_ASSIGN(std::unique_ptr<DiskFile> index_file, disk_.open(segment.index_path, create));
  // Under `always` the .log takes durable writes (O_DIRECT where the file system has it).
  if (options_.durability == Durability::always) HARK_TRY(log_file->open_direct());
  segment.log_file = internal::FileRef(std::move(log_file));
  segment.index_file = internal::FileRef(std::move(index_file));
  return ok_status();
}

void PartitionLog::close() {
  if (!open_) return;
  const Status flushed = writer_.drain(true);
  if (!flushed.ok()) {
    HARK_LOG_ERROR("partition %s: closing with %u bytes that could not be written",
                   options_.directory, accounts_.unwritten_bytes);
  }
  reader_.drain();
  writer_.stop();
  // What drain() could not commit was rolled back by the failure that stopped it.
  finish_commits(Offset(UINT64_MAX), writer_.failure() != Error::ok
                                         ? writer_.failure()
                                         : Error::cannot_save_messages_to_segment);
  for (auto& segment : segments_) {
    writer_.removed(*segment);
    segment->release_chunks(accounts_);
  }
  segments_.clear();
  read_file_.reset();
  HARK_ASSERT(accounts_.memory_bytes == 0);
  lock_.reset();
  open_ = false;
}

}  // namespace hark::storage
