#include "core/broker/broker.h"

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>

#include "core/base/log.h"
#include "core/broker/internal/broker_shard.h"
#include "core/broker/internal/catalog.h"

namespace hark::core {

using internal::BrokerShard;

namespace {

// Metadata does not survive a restart yet (issue 7), so partition files a previous run left
// would be picked up by whatever new topic gets the same ids. Move them aside instead: nothing
// is deleted, and a new topic never starts with someone else's messages.
Status set_aside_previous_data(const std::string& data) {
  std::error_code error;
  const std::filesystem::path streams = std::filesystem::path(data) / "streams";
  if (!std::filesystem::exists(streams, error)) return ok_status();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::filesystem::path aside =
      std::filesystem::path(data) /
      ("previous-run-" +
       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count()));
  std::filesystem::rename(streams, aside, error);
  if (error) {
    HARK_LOG_ERROR("cannot move %s aside: %s", streams.string(), error.message());
    return Error::cannot_create_streams_directory;
  }
  HARK_LOG_WARN(
      "%s held partitions of an earlier run; metadata is not persisted yet, so they were moved "
      "to %s",
      streams.string(), aside.string());
  return ok_status();
}

}  // namespace

// Creates each shard's BrokerShard on its own thread and runs the embedder's hooks around it.
class Broker::Setup final : public io::ShardSetup {
 public:
  explicit Setup(Broker& broker) : broker_(broker) {}

  Status on_start(io::Reactor& reactor) override {
    auto* shard = new BrokerShard(broker_, reactor, broker_.initial_catalog_);
    broker_.shards_[reactor.id().value()] = shard;
    if (broker_.options_.hooks != nullptr)
      return broker_.options_.hooks->on_start(broker_, reactor);
    return ok_status();
  }

  void on_stop(io::Reactor& reactor) override {
    if (broker_.options_.hooks != nullptr) broker_.options_.hooks->on_stop(reactor);
    BrokerShard* const shard = broker_.shards_[reactor.id().value()];
    if (shard != nullptr) shard->release_partitions();
  }

  void on_drained(io::Reactor& reactor) override {
    if (broker_.options_.hooks != nullptr) broker_.options_.hooks->on_drained(reactor);
    BrokerShard*& shard = broker_.shards_[reactor.id().value()];
    if (shard == nullptr) return;
    shard->close_partitions();
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

Broker::Broker(const BrokerOptions& options)
    : options_(options),
      ownership_(options.shards_count),
      initial_catalog_(std::make_shared<internal::Catalog>()),
      setup_(std::make_unique<Setup>(*this)),
      shards_(options.shards_count, nullptr) {}

Broker::~Broker() { stop(); }

Result<std::unique_ptr<Broker>> Broker::start(const BrokerOptions& options) {
  if (options.shards_count == 0 || options.max_wait < Duration(0)) {
    return Error::invalid_configuration;
  }
  std::error_code error;
  std::filesystem::create_directories(options.data_directory, error);
  if (error) {
    HARK_LOG_ERROR("cannot create the data directory %s: %s", options.data_directory,
                   error.message());
    return Error::cannot_create_base_directory;
  }
  HARK_TRY(set_aside_previous_data(options.data_directory));
  std::unique_ptr<Broker> broker(new Broker(options));
  HARK_TRY_ASSIGN(broker->group_,
                  io::ShardGroup::start(io::ShardGroupOptions{.shards_count = options.shards_count,
                                                              .reactor = options.reactor},
                                        broker->setup_.get()));
  return broker;
}

std::optional<ShardId> Broker::current_shard() {
  BrokerShard* const shard = BrokerShard::current();
  if (shard == nullptr) return std::nullopt;
  return shard->id();
}

void Broker::submit(Operation& op) {
  op.status_ = ok_status();
  op.stage_ = 0;
  BrokerShard* const shard = BrokerShard::current();
  if (shard != nullptr && &shard->broker() == this) {
    op.home_ = shard->id();
    op.step(*shard);
    return;
  }
  HARK_ASSERT(!stopped_);
  op.home_ = ShardId(0);
  group_->post(ShardId(0), op);
}

void Broker::cancel(Poll& poll) {
  BrokerShard& shard = *BrokerShard::current();
  HARK_ASSERT(shard.id() == poll.home_);
  if (poll.wait_ == nullptr) {
    poll.cancel_requested_ = true;  // In flight: it ends when it comes home.
    return;
  }
  shard.waits().cancel(*poll.wait_);
  poll.wait_ = nullptr;
  parked_total_.fetch_sub(1, std::memory_order_relaxed);
  poll.go_to(shard, shard.id(), Poll::Stage::cancelled);
}

void Broker::stop() {
  if (stopped_ || group_ == nullptr) return;
  stopped_ = true;
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
