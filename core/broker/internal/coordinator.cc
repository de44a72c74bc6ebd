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

Coordinator::Coordinator(BrokerShard& shard, Ref<const Catalog> catalog, MetadataJournal& journal)
    : shard_(shard),
      journal_(journal),
      catalog_(std::move(catalog)),
      tasks_(shard.broker().shards_count()),
      sequence_(catalog_->sequence) {
  HARK_ASSERT(shard.id() == ShardId(0));  // The catalog's owner.
  HARK_ASSERT(!tasks_.empty());
  for (uint32_t i = 0; i < tasks_.size(); i++) {
    tasks_[i].coordinator = this;
    tasks_[i].target = ShardId(i);
  }
}

// A compaction may still be in flight (the broker stops between commands).
Coordinator::~Coordinator() { journal_.detach(*this); }

void Coordinator::enqueue(MetadataCommand& command) {
  shard_.expect_on(ShardId(0));
  HARK_ASSERT(&command != current_);
  (command.journaled_sequence() != 0 ? entries_ : queue_).push_back(&command);
  if (current_ == nullptr) start_next();
}

MetadataCommand* Coordinator::take_next() {
  if (stalled_) return nullptr;
  while (!entries_.empty()) {
    MetadataCommand& entry = *entries_.front();
    const uint64_t sequence = entry.journaled_sequence();
    if (sequence > sequence_ + 1) {
      HARK_LOG_ERROR(
          "metadata journal: entry %u arrived while this node holds %u; waiting for "
          "the ones between",
          sequence, sequence_);
      return nullptr;
    }
    entries_.pop_front();
    if (sequence == sequence_ + 1) return &entry;
    Flow::finish(entry, shard_, ok_status());  // Already applied (this node wrote it).
  }
  if (queue_.empty() || waiting_for_ > sequence_) return nullptr;
  MetadataCommand* const command = queue_.front();
  queue_.pop_front();
  return command;
}

void Coordinator::start_next() {
  shard_.expect_on(ShardId(0));
  if (phase_ == Phase::compacting || (current_ == nullptr && compact())) return;
  while (current_ == nullptr) {
    MetadataCommand* const command = take_next();
    if (command == nullptr) break;
    run(*command);
  }
  // What is left waits for an entry, and none will come.
  if (current_ == nullptr && stopping_) refuse_queued();
}

void Coordinator::stop_waiting() {
  shard_.expect_on(ShardId(0));
  stopping_ = true;
  // Idle, everything that could run has (start_next() runs after each command): the rest
  // waits. A command or compaction in progress refuses it when it ends (start_next()).
  if (current_ == nullptr && phase_ != Phase::compacting) refuse_queued();
}

void Coordinator::refuse_queued() {
  for (std::deque<MetadataCommand*>* waiting : {&entries_, &queue_}) {
    while (!waiting->empty()) {
      MetadataCommand& command = *waiting->front();
      waiting->pop_front();
      Flow::finish(command, shard_, Error::feature_unavailable);
    }
  }
}

void Coordinator::run(MetadataCommand& command) {
  const uint64_t adopted = command.journaled_sequence();
  CatalogEdit edit(*catalog_, shard_.ownership(), shard_.reactor().clock());
  Status status = command.apply(edit);
  // Another node's entry is the cluster's: this node's open-file budget cannot refuse it.
  if (status.ok() && adopted == 0 && !edit.created.empty()) {
    status = check_partitions_max(edit.catalog());
  }
  if (!status.ok()) {
    if (adopted != 0) {
      // Applying later entries without this one would make another catalog: stop here.
      HARK_LOG_ERROR(
          "metadata journal: entry %u does not apply to this node's catalog (%s); "
          "this node applies no more metadata until it is restarted on a fresh "
          "data directory",
          adopted, std::string(error_name(status.error())));
      entries_.push_front(&command);
      stalled_ = true;
      return;
    }
    Flow::finish(command, shard_, status);
    return;
  }
  const uint64_t sequence = adopted != 0 ? adopted : sequence_ + 1;
  if (adopted != 0) {
    records_ = static_cast<ApplyJournalEntry&>(command).records;
  } else {
    if (!edit.journal.empty()) {
      edit.set_sequence(sequence);
      journal_entry(records_, sequence, edit.journal);
    }
  }
  current_ = &command;
  change_ = Change{.catalog = edit.take(),
                   .created = std::move(edit.created),
                   .removed = std::move(edit.removed),
                   .purged = std::move(edit.purged),
                   .extensions = std::move(edit.extensions)};
  failure_ = ok_status();
  undoing_ = false;
  if (records_.empty()) {
    phase_ = Phase::rounds;
    begin_round(Round::apply);  // Purge: data, not metadata.
    return;
  }
  JournalEntry entry{.sequence = sequence, .records = records_, .adopted = adopted != 0};
  for (const auto& cell : change_.created) {
    const Result<const TopicEntry*> topic = change_.catalog->topic(
        NameOrId::id(cell->key.stream.value()), NameOrId::id(cell->key.topic.value()));
    entry.created.push_back(
        {.key = cell->key,
         .replication_factor = topic.ok() ? (*topic)->settings.replication_factor : uint8_t{1}});
  }
  for (const auto& cell : change_.removed) entry.removed.push_back(cell->key);
  phase_ = Phase::journaling;
  journal_.append(shard_.reactor(), entry, *this);
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

bool Coordinator::compact() {
  if (stalled_ || !journal_.snapshot_due() || compaction_failed_at_ == sequence_) return false;
  HARK_ASSERT(phase_ == Phase::idle && catalog_->sequence == sequence_);
  std::vector<std::vector<std::byte>> extensions;
  if (shard_.options().extensions != nullptr) shard_.options().extensions->snapshot(extensions);
  std::vector<std::byte> snapshot;
  journal_snapshot(snapshot, *catalog_, extensions);
  phase_ = Phase::compacting;
  journal_.snapshot(shard_.reactor(), snapshot, *this);  // Copied before it returns.
  return true;
}

void Coordinator::journaled(JournalResult result) {
  shard_.expect_on(ShardId(0));
  if (phase_ == Phase::compacting) {
    phase_ = Phase::idle;
    if (!result.status.ok()) compaction_failed_at_ = sequence_;  // Logged by the journal.
    start_next();
    return;
  }
  HARK_ASSERT(current_ != nullptr);
  const Phase phase = std::exchange(phase_, Phase::idle);
  if (phase == Phase::settling) {
    finish_current(failure_);
    return;
  }
  HARK_ASSERT(phase == Phase::journaling);
  if (result.status.ok() && !result.taken) {
    sequence_ = change_.catalog->sequence;
    phase_ = Phase::rounds;
    begin_round(Round::apply);
    return;
  }
  const uint64_t sequence = change_.catalog->sequence;
  MetadataCommand& command = *std::exchange(current_, nullptr);
  change_ = Change{};
  records_.clear();
  if (result.taken) {
    // Another node wrote this entry first: apply its entry when it arrives, then check the
    // command again against the catalog it makes (a name it took gives the usual error).
    waiting_for_ = sequence;
    queue_.push_front(&command);
  } else if (command.journaled_sequence() != 0) {
    HARK_LOG_ERROR(
        "metadata journal: cannot keep entry %u locally (%s); this node applies no "
        "more metadata until it is restarted",
        sequence, std::string(error_name(result.status.error())));
    entries_.push_front(&command);
    stalled_ = true;
    return;
  } else {
    Flow::finish(command, shard_, result.status);
  }
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
  const Status written = journal_.append_undo(records);
  if (!written.ok()) {
    HARK_LOG_ERROR("cannot journal the undo (%s): a restart brings the undone change back",
                   std::string(error_name(written.error())));
  }
}

void Coordinator::complete() {
  shard_.expect_on(ShardId(0));
  HARK_ASSERT(current_ != nullptr);
  if (!undoing_) {
    catalog_ = change_.catalog;
  } else if (catalog_->sequence != sequence_) {
    // The entry stays journaled, its undo after it: the catalog is the old one at its number.
    auto undone = make_ref<Catalog>(*catalog_);
    undone->sequence = sequence_;
    catalog_ = std::move(undone);
  }
  remove_orphan_directories();
  JournalExtensions* const extensions = shard_.options().extensions;
  if (!undoing_ && extensions != nullptr) {
    for (const auto& record : change_.extensions) extensions->applied(record);
  }
  if (records_.empty()) {
    finish_current(failure_);  // A purge: nothing journaled.
    return;
  }
  phase_ = Phase::settling;
  journal_.applied(shard_.reactor(), sequence_, current_->journaled_sequence() == 0, *this);
}

void Coordinator::finish_current(Status status) {
  change_ = Change{};
  records_.clear();
  MetadataCommand& command = *std::exchange(current_, nullptr);
  Flow::finish(command, shard_, status);
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
