#include "hark/core/broker/broker.h"

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>

#include "hark/core/base/log.h"
#include "hark/core/broker/internal/broker_shard.h"
#include "hark/core/broker/internal/catalog.h"
#include "hark/core/broker/internal/conditions.h"
#include "hark/core/broker/internal/flow.h"
#include "hark/core/broker/internal/metadata_log.h"
#include "hark/core/broker/internal/notify_job.h"
#include "hark/storage/disk.h"

namespace hark::core {

using internal::BrokerShard;

namespace {

// Data directories from before metadata was persisted have partitions but no metadata.log.
// Their topics are unknown, so move them aside rather than let a new topic with the same ids
// start with someone else's messages; nothing is deleted.
Status set_aside_unlisted_data(const std::string& data) {
  std::error_code error;
  const std::filesystem::path streams = std::filesystem::path(data) / "streams";
  if (std::filesystem::exists(std::filesystem::path(data) / "metadata.log", error) ||
      !std::filesystem::exists(streams, error)) {
    return ok_status();
  }
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::filesystem::path aside =
      std::filesystem::path(data) /
      ("unlisted-" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count()));
  std::filesystem::rename(streams, aside, error);
  if (error) {
    HARK_LOG_ERROR("cannot move %s aside: %s", streams.string(), error.message());
    return Error::cannot_create_streams_directory;
  }
  HARK_LOG_WARN("%s held partitions but no metadata.log; moved them to %s", streams.string(),
                aside.string());
  return ok_status();
}

// Partition directories the catalog does not list are what a delete left when the process
// died after persisting it and before its owners removed the files: finish the delete.
void remove_deleted_partitions(const std::string& data, const internal::Catalog& catalog) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path streams = fs::path(data) / "streams";
  const auto number = [](const fs::path& path) -> std::optional<uint32_t> {
    const std::string name = path.filename().string();
    if (name.empty() || name.size() > 10 ||
        name.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    const uint64_t value = std::stoull(name);
    if (value > UINT32_MAX) return std::nullopt;
    return static_cast<uint32_t>(value);
  };
  for (const auto& stream : fs::directory_iterator(streams, error)) {
    const auto stream_id = number(stream.path());
    const auto topics = stream.path() / "topics";
    bool stream_listed = stream_id && catalog.streams.count(*stream_id) != 0;
    for (const auto& topic : fs::directory_iterator(topics, error)) {
      const auto topic_id = number(topic.path());
      for (const auto& partition : fs::directory_iterator(topic.path() / "partitions", error)) {
        const auto partition_id = number(partition.path());
        if (stream_id && topic_id && partition_id &&
            catalog.find(PartitionKey{StreamId(*stream_id), TopicId(*topic_id),
                                      PartitionId(*partition_id)}) != nullptr) {
          continue;
        }
        HARK_LOG_WARN("removing %s: its partition was deleted", partition.path().string());
        fs::remove_all(partition.path(), error);
      }
    }
    if (!stream_listed) fs::remove_all(stream.path(), error);
  }
}

}  // namespace

// Creates each shard's BrokerShard on its own thread and runs the embedder's hooks around it.
class Broker::Setup final : public io::ShardSetup {
 public:
  explicit Setup(Broker& broker) : broker_(broker) {}

  Status on_start(io::Reactor& reactor) override {
    HARK_ASSERT(reactor.id().value() < broker_.shards_.size());
    HARK_ASSERT(broker_.shards_[reactor.id().value()] == nullptr);  // Once per shard.
    auto* shard = new BrokerShard(broker_, reactor, broker_.initial_catalog_);
    broker_.shards_[reactor.id().value()] = shard;
    HARK_TRY(shard->open_partitions());
    if (broker_.options_.hooks != nullptr)
      return broker_.options_.hooks->on_start(broker_, reactor);
    return ok_status();
  }

  void on_stop(io::Reactor& reactor) override {
    if (broker_.options_.hooks != nullptr) broker_.options_.hooks->on_stop(reactor);
    BrokerShard* const shard = broker_.shards_[reactor.id().value()];
    if (shard != nullptr) shard->release_partitions();
  }

  void on_abort(io::Reactor& reactor) override {
    if (broker_.options_.hooks != nullptr) broker_.options_.hooks->on_abort(reactor);
  }

  // The embedder's requests this shard is home of run to their done() (a cancelled poll's
  // last step, a request back from another shard) before anything is freed.
  bool busy(io::Reactor& reactor) override {
    if (broker_.options_.hooks != nullptr && broker_.options_.hooks->busy(reactor)) return true;
    const BrokerShard* const shard = broker_.shards_[reactor.id().value()];
    return shard != nullptr && shard->operations_in_flight() > 0;
  }

  void on_drained(io::Reactor& reactor) override {
    if (broker_.options_.hooks != nullptr) broker_.options_.hooks->on_drained(reactor);
    BrokerShard*& shard = broker_.shards_[reactor.id().value()];
    if (shard == nullptr) return;
    shard->close_partitions();
    if (shard->operations_in_flight() > 0) {
      // drain_timeout passed: their memory (poll jobs, waits) may still be reached by them.
      HARK_LOG_WARN("shard %u: %u operations still in flight at shutdown; leaving them",
                    reactor.id().value(), shard->operations_in_flight());
      shard = nullptr;
      return;
    }
    delete shard;
    shard = nullptr;
  }

 private:
  Broker& broker_;
};

// Shutdown, step 1 (every shard refuses new waits) and step 2 (every owner aborts what is
// parked on its partitions). Two rounds, so no home parks on a partition already emptied.
class Broker::ShutdownTask final : public io::Task {
 public:
  void run() override {
    HARK_ASSERT(remaining != nullptr);
    BrokerShard& shard = *BrokerShard::current();
    if (abort) {
      shard.shut_down_waits();
    } else {
      shard.refuse_waits();
    }
    remaining->fetch_sub(1, std::memory_order_acq_rel);
  }
  bool abort = false;
  std::atomic<uint32_t>* remaining = nullptr;
};

namespace {

// Empty; membership is journaled when the journal is shared (internal::Catalog).
Ref<const internal::Catalog> initial_catalog(const BrokerOptions& options) {
  auto catalog = make_ref<internal::Catalog>();
  catalog->members_journaled = options.journal != nullptr;
  return catalog;
}

}  // namespace

Broker::Broker(const BrokerOptions& options)
    : options_(options),
      ownership_(options.shards_count),
      initial_catalog_(initial_catalog(options)),
      conditions_(std::make_unique<internal::ConditionRegistry>()),
      setup_(std::make_unique<Setup>(*this)),
      shards_(options.shards_count, nullptr) {}

Broker::~Broker() { stop(); }

Result<std::unique_ptr<Broker>> Broker::start(const BrokerOptions& options) {
  if (options.shards_count == 0 || options.max_wait < Duration(0)) {
    return Error::invalid_configuration;
  }
  HARK_TRY(storage::create_private_directories(options.data_directory));
  HARK_TRY(set_aside_unlisted_data(options.data_directory));
  std::unique_ptr<Broker> broker(new Broker(options));
  for (const auto& [name, condition] : options.conditions) {
    if (condition == nullptr) return Error::invalid_configuration;
    HARK_TRY(broker->register_condition(name, *condition));
  }
  std::vector<std::vector<std::byte>> extensions;
  HARK_TRY_ASSIGN(
      broker->metadata_log_,
      internal::MetadataLog::open(options.data_directory + "/metadata.log", broker->ownership_,
                                  SystemClock::instance(), broker->initial_catalog_, extensions,
                                  options.metadata_snapshot_entries));
  if (options.extensions != nullptr) {
    for (const auto& record : extensions) options.extensions->applied(record);
  }
  if (options.journal != nullptr) {
    broker->shared_journal_ =
        options.journal->make(*broker->metadata_log_, broker->initial_catalog_->sequence);
    if (broker->shared_journal_ == nullptr) return Error::invalid_configuration;
  }
  remove_deleted_partitions(options.data_directory, *broker->initial_catalog_);
  HARK_TRY_ASSIGN(broker->group_,
                  io::ShardGroup::start(io::ShardGroupOptions{.shards_count = options.shards_count,
                                                              .reactor = options.reactor},
                                        broker->setup_.get()));
  return broker;
}

Result<uint64_t> Broker::journaled_sequence(const std::string& data_directory) {
  HARK_TRY(storage::create_private_directories(data_directory));
  OwnershipMap ownership(1);
  Ref<const internal::Catalog> catalog = make_ref<internal::Catalog>();
  std::vector<std::vector<std::byte>> extensions;
  HARK_TRY(internal::MetadataLog::open(data_directory + "/metadata.log", ownership,
                                       SystemClock::instance(), catalog, extensions));
  return catalog->sequence;
}

Status Broker::adopt_snapshot(const std::string& data_directory,
                              std::span<const std::byte> snapshot) {
  HARK_TRY(storage::create_private_directories(data_directory));
  return internal::MetadataLog::adopt_snapshot(data_directory + "/metadata.log", snapshot);
}

MetadataJournal& Broker::journal() {
  if (shared_journal_ != nullptr) return *shared_journal_;
  return *metadata_log_;
}

std::optional<ShardId> Broker::current_shard() {
  BrokerShard* const shard = BrokerShard::current();
  if (shard == nullptr) return std::nullopt;
  return shard->id();
}

void Broker::submit(Operation& op) {
  BrokerShard* const shard = BrokerShard::current();
  if (shard != nullptr && &shard->broker() == this) {
    internal::Flow::start(op, *shard);
    return;
  }
  HARK_ASSERT(!stopped_);
  internal::Flow::start_outside(op);
  group_->post(ShardId(0), op);
}

Result<Broker::ResolvedIds> Broker::resolve(const NameOrId& stream, const NameOrId* topic) const {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  HARK_TRY_ASSIGN(const internal::StreamEntry* const stream_entry, shard->catalog().stream(stream));
  ResolvedIds ids{.stream = stream_entry->id, .topic = std::nullopt};
  if (topic != nullptr) {
    HARK_TRY_ASSIGN(const internal::TopicEntry* const topic_entry, stream_entry->topic(*topic));
    ids.topic = topic_entry->id;
  }
  return ids;
}

Result<TopicSettings> Broker::topic_settings(const NameOrId& stream, const NameOrId& topic) const {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  HARK_TRY_ASSIGN(const internal::TopicEntry* const entry, shard->catalog().topic(stream, topic));
  return entry->settings;
}

Result<uint32_t> Broker::pick_partition(const NameOrId& stream, const NameOrId& topic,
                                        const Partitioning& partitioning) const {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  HARK_TRY_ASSIGN(const internal::TopicEntry* const entry, shard->catalog().topic(stream, topic));
  return internal::pick_partition(*shard, *entry, partitioning);
}

Status Broker::member_partitions(const NameOrId& stream, const NameOrId& topic,
                                 const NameOrId& group, uint32_t member,
                                 std::vector<uint32_t>& partitions) const {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  partitions.clear();
  HARK_TRY_ASSIGN(const internal::TopicEntry* const entry, shard->catalog().topic(stream, topic));
  HARK_TRY_ASSIGN(const internal::GroupEntry* const found, entry->group(group));
  const GroupMemberInfo* const joined = found->member(member);
  if (joined == nullptr) return Error::consumer_group_member_not_found;
  partitions.assign(joined->partitions.begin(), joined->partitions.end());
  return ok_status();
}

Status Broker::topic_partitions(const NameOrId& stream, const NameOrId& topic,
                                std::vector<uint32_t>& partitions) const {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  partitions.clear();
  HARK_TRY_ASSIGN(const internal::TopicEntry* const entry, shard->catalog().topic(stream, topic));
  for (uint32_t id = 0; id < entry->partitions.size(); id++) partitions.push_back(id);
  return ok_status();
}

void Broker::partition_figures(std::optional<uint32_t> stream, std::optional<uint32_t> topic,
                               std::vector<PartitionFigures>& out) const {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  out.clear();
  for (const auto& [stream_id, stream_entry] : shard->catalog().streams) {
    if (stream && *stream != stream_id) continue;
    for (const auto& [topic_id, topic_entry] : stream_entry->topics) {
      if (topic && *topic != topic_id) continue;
      for (const auto& cell : topic_entry->partitions) {
        out.push_back(PartitionFigures{.key = cell->key, .info = cell->info()});
      }
    }
  }
}

Status Broker::host(std::span<const PartitionKey> keys, std::span<const PartitionKey> moving,
                    std::span<const HostedPlace> places) {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  HARK_ASSERT(options_.hosted_only);
  return shard->host(keys, moving, places);
}

size_t Broker::operations_in_flight() const {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  return shard->operations_in_flight();
}

void Broker::cancel(Poll& poll) {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  internal::PollJob::cancel(poll, *shard);
}

void Broker::cancel(Notify& notify) {
  BrokerShard* const shard = BrokerShard::current();
  HARK_ASSERT(shard != nullptr);
  HARK_ASSERT(&shard->broker() == this);
  internal::NotifyJob::cancel(notify, *shard);
}

Status Broker::register_condition(std::string_view name, const Condition& condition) {
  return conditions_->add(name, condition);
}

const Condition* Broker::find_condition(std::string_view name) const {
  return conditions_->find(name);
}

void Broker::stop() {
  if (group_ == nullptr || stopped_.exchange(true)) return;
  // It waits for the shards: from one of them it would wait for itself.
  HARK_ASSERT(BrokerShard::current() == nullptr);
  const uint32_t shards = options_.shards_count;
  std::vector<ShutdownTask> tasks(shards);
  std::atomic<uint32_t> remaining{0};
  for (const bool abort : {false, true}) {
    remaining.store(shards, std::memory_order_relaxed);
    for (uint32_t i = 0; i < shards; i++) {
      tasks[i].abort = abort;
      tasks[i].remaining = &remaining;
      group_->post(ShardId(i), tasks[i]);
    }
    while (remaining.load(std::memory_order_acquire) != 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  // Aborted polls are answered at their homes in the next iterations; give the embedder's
  // hooks that moment to send the answers before they stop (bounded: a poll the abort missed
  // is answered by release_partitions() during the drain anyway).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (parked_total_.load(std::memory_order_relaxed) != 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  group_->stop();
  group_.reset();
}

}  // namespace hark::core
