#include "hark/core/broker/internal/coordinator.h"

#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "hark/core/base/log.h"
#include "hark/core/broker/internal/broker_shard.h"
#include "hark/core/broker/internal/flow.h"
#include "hark/core/broker/internal/journal.h"

namespace hark::core::internal {

namespace {

std::string stream_directory(const std::string& data, uint32_t stream) {
  return data + "/streams/" + std::to_string(stream);
}

std::string topic_directory(const std::string& data, uint32_t stream, uint32_t topic) {
  return stream_directory(data, stream) + "/topics/" + std::to_string(topic);
}

}  // namespace

Coordinator::Coordinator(BrokerShard& shard, Ref<const Catalog> catalog, MetadataLog& log)
    : shard_(shard),
      log_(log),
      catalog_(std::move(catalog)),
      tasks_(shard.broker().shards_count()) {
  HARK_ASSERT(shard.id() == ShardId(0));  // The catalog's owner.
  HARK_ASSERT(!tasks_.empty());
  for (uint32_t i = 0; i < tasks_.size(); i++) {
    tasks_[i].coordinator = this;
    tasks_[i].target = ShardId(i);
  }
}

Coordinator::~Coordinator() = default;

void Coordinator::enqueue(MetadataCommand& command) {
  shard_.expect_on(ShardId(0));
  HARK_ASSERT(&command != current_);
  queue_.push_back(&command);
  if (current_ == nullptr) start_next();
}

void Coordinator::start_next() {
  shard_.expect_on(ShardId(0));
  while (current_ == nullptr && !queue_.empty()) {
    MetadataCommand& command = *queue_.front();
    queue_.pop_front();
    CatalogEdit edit(*catalog_, shard_.ownership(), shard_.reactor().clock());
    Status status = command.apply(edit);
    if (status.ok() && !edit.created.empty()) status = check_partitions_max(edit.catalog());
    if (!status.ok()) {
      Flow::finish(command, shard_, status);
      continue;
    }
    current_ = &command;
    change_ = Change{.catalog = edit.take(),
                     .created = std::move(edit.created),
                     .removed = std::move(edit.removed),
                     .purged = std::move(edit.purged)};
    failure_ = ok_status();
    undoing_ = false;
    if (edit.journal.empty()) {
      begin_round(Round::apply);  // Purge: data, not metadata.
    } else {
      log_.append(shard_.reactor().ring(), edit.journal, *this);
    }
  }
}

Status Coordinator::check_partitions_max(const Catalog& next) const {
  const uint32_t max = shard_.options().partitions_max;
  const uint64_t count = next.partitions_count();
  if (count <= max) return ok_status();
  HARK_LOG_WARN(
      "refused a create: it needs %u partitions in all, over the limit of %u that the open-file "
      "limit allows (%u files each); raise the open-file limit (ulimit -n, LimitNOFILE) or "
      "lower limits.connections_max, then restart",
      count, max, files_per_partition);
  return Error::too_many_partitions;
}

void Coordinator::persisted(Status status) {
  shard_.expect_on(ShardId(0));
  HARK_ASSERT(current_ != nullptr);
  if (status.ok()) {
    begin_round(Round::apply);
    return;
  }
  change_ = Change{};
  MetadataCommand& command = *std::exchange(current_, nullptr);
  Flow::finish(command, shard_, status);
  start_next();
}

void Coordinator::begin_round(Round round) {
  shard_.expect_on(ShardId(0));
  HARK_ASSERT(current_ != nullptr);
  round_ = round;
  returned_ = 0;
  for (RoundTask& task : tasks_) {
    task.returning = false;
    task.result = ok_status();
    shard_.reactor().post(task.target, task);
  }
}

void Coordinator::RoundTask::run() {
  if (returning) {
    coordinator->round_done(*this);
    return;
  }
  BrokerShard& here = *BrokerShard::current();
  here.expect_on(target);
  if (coordinator->round_ == Round::apply) {
    result = here.apply(coordinator->change_);
  } else {
    here.retire(coordinator->change_);
  }
  returning = true;
  here.reactor().post(ShardId(0), *this);
}

void Coordinator::round_done(RoundTask& task) {
  shard_.expect_on(ShardId(0));
  HARK_ASSERT(task.returning);
  HARK_ASSERT(returned_ < tasks_.size());
  if (!task.result.ok() && failure_.ok()) failure_ = task.result;
  if (++returned_ < tasks_.size()) return;
  if (round_ == Round::apply && !failure_.ok() && !undoing_) {
    // A shard could not open a new partition: put the old catalog back everywhere and retire
    // what the change created.
    HARK_LOG_ERROR("metadata change failed on a shard (%s); undoing it",
                   std::string(error_name(failure_.error())));
    undoing_ = true;
    journal_undo();
    change_ = Change{.catalog = catalog_, .removed = std::move(change_.created)};
    begin_round(Round::apply);
    return;
  }
  if (round_ == Round::apply && !change_.removed.empty()) {
    begin_round(Round::retire);
    return;
  }
  complete();
}

void Coordinator::journal_undo() {
  shard_.expect_on(ShardId(0));
  HARK_ASSERT(undoing_);
  // The change's record is already durable: append its opposite, so a restart does not bring
  // back what was undone (and a retry, which reuses the ids, replays cleanly).
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> created;  // (stream, topic) -> partitions
  for (const auto& cell : change_.created) {
    created[{cell->key.stream.value(), cell->key.topic.value()}]++;
  }
  std::vector<std::byte> records;
  for (const auto& [key, count] : created) {
    const auto [stream, topic] = key;
    const auto listed = catalog_->streams.find(stream);
    if (listed != catalog_->streams.end() && listed->second->topics.count(topic) != 0) {
      journal_partitions_deleted(records, stream, topic, count);
    } else {
      journal_topic_deleted(records, stream, topic);
    }
  }
  if (records.empty()) return;
  const Status written = log_.append_now(records);
  if (!written.ok()) {
    HARK_LOG_ERROR("cannot journal the undo (%s): a restart brings the undone change back",
                   std::string(error_name(written.error())));
  }
}

void Coordinator::complete() {
  shard_.expect_on(ShardId(0));
  HARK_ASSERT(current_ != nullptr);
  if (!undoing_) catalog_ = change_.catalog;
  remove_orphan_directories();
  change_ = Change{};
  MetadataCommand& command = *std::exchange(current_, nullptr);
  Flow::finish(command, shard_, failure_);
  start_next();
}

void Coordinator::remove_orphan_directories() {
  shard_.expect_on(ShardId(0));
  // Owners deleted the partitions' files; what is left of a removed topic or stream is its
  // directories. Control plane: a blocking remove on shard 0, once per delete command.
  const std::string& data = shard_.options().data_directory;
  std::set<std::string> directories;
  for (const auto& cell : change_.removed) {
    const uint32_t stream = cell->key.stream.value();
    const uint32_t topic = cell->key.topic.value();
    const auto listed = catalog_->streams.find(stream);
    if (listed == catalog_->streams.end()) {
      directories.insert(stream_directory(data, stream));
    } else if (listed->second->topics.count(topic) == 0) {
      directories.insert(topic_directory(data, stream, topic));
    }
    // Otherwise only some partitions went: their owners removed their directories.
  }
  for (const std::string& directory : directories) {
    std::error_code error;
    std::filesystem::remove_all(directory, error);
    if (error) {
      HARK_LOG_WARN("cannot remove %s: %s", directory, error.message());
    }
  }
}

}  // namespace hark::core::internal
