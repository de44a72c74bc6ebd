// `notify`: notifications (docs/notifications.md) in process, against a core::Broker this
// scenario starts (--shards, --durability; no server, no sockets), so it measures the core
// alone. All requests come from this thread, so their home is shard 0; the measured partition
// is owned by another shard when there is one (every wake crosses shards, as a poll on a
// connection that was not migrated). In alternating blocks, so a neighbour's load weighs on all
// rows alike:
//  (a) commit cost: appends of one message, one at a time, with 0, 1, 100 and 1000 parked
//      hark.lag watchers on the partition (threshold never reached) and with 1000 parked
//      hark.messages watchers whose threshold is not reached: each append's round trip, and
//      the broker's CPU per commit (the process's CPU minus this thread's);
//  (b) latency from the trigger to the answer of one parked waiter: append -> hark.messages,
//      append -> hark.lag `above`, StoreOffset -> hark.lag `below`, and append -> a parked
//      Poll (the poll's wake, in the same run on the same shards). Before each trigger the
//      waiter is parked (the broker's parked_now counter) and the shards idle `--gap-us`.
#include <time.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "hark/bench/suite/echo.h"
#include "hark/bench/suite/net.h"
#include "hark/bench/suite/scenarios.h"
#include "hark/core/base/message_layout.h"
#include "hark/core/broker/blocking.h"
#include "hark/core/broker/broker.h"
#include "hark/core/broker/notify_operations.h"
#include "hark/core/broker/stats.h"

namespace hark::bench {
namespace {

using namespace std::chrono_literals;
using core::Blocking;
using core::ConsumerRef;
using core::NameOrId;

constexpr auto watcher_wait = 30s;  // Longer than any phase: a watcher ends by our cancel.
constexpr ConsumerRef lag_consumer{ConsumerRef::Kind::consumer, 1};
constexpr ConsumerRef watch_consumer{ConsumerRef::Kind::consumer, 2};

// Set once on a shard, waited for here. The set notifies under the lock, so the waiter cannot
// return (and destroy it) before the set is over.
class Latch {
 public:
  void set() {
    std::lock_guard lock(mutex_);
    set_ = true;
    changed_.notify_one();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return set_; });
  }
  bool is_set() {
    std::lock_guard lock(mutex_);
    return set_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool set_ = false;
};

// An operation submitted without blocking: done() stamps the time, then sets `finished`.
// Waiting for it is bounded by the operation's own wait (every one here has one, or none).
template <typename Op>
class Stamped final : public Op {
 public:
  void done() override {
    at = SteadyClock::now();
    finished.set();
  }
  SteadyClock::time_point at;
  Latch finished;
};

// Cancels parked watchers on their home, shard 0 (Broker::cancel runs there only).
struct CancelAll final : io::Task {
  void run() override {
    for (auto& watcher : *watchers) broker->cancel(*watcher);
    ran.set();
  }
  core::Broker* broker = nullptr;
  std::vector<std::unique_ptr<Stamped<core::Notify>>>* watchers = nullptr;
  Latch ran;
};

class Shard0 final : public core::ShardHooks {
 public:
  Status on_start(core::Broker&, io::Reactor& reactor) override {
    if (reactor.id() == ShardId(0)) reactor_ = &reactor;
    return ok_status();
  }
  void on_stop(io::Reactor&) override {}
  io::Reactor* reactor() const { return reactor_; }

 private:
  io::Reactor* reactor_ = nullptr;
};

std::optional<storage::Durability> durability_named(const std::string& name) {
  if (name == "memory") return storage::Durability::memory;
  if (name == "write") return storage::Durability::write;
  if (name == "interval") return storage::Durability::interval;
  if (name == "always") return storage::Durability::always;
  return std::nullopt;
}

// The broker of one run, its topic (one partition per shard) and the partition measured.
class InProcess {
 public:
  ~InProcess() {
    if (broker_ != nullptr) broker_->stop();
    broker_.reset();
    std::error_code error;
    std::filesystem::remove_all(directory_, error);
  }

  bool start(const Options& options);
  core::Broker& broker() { return *broker_; }
  uint32_t partition() const { return partition_; }
  ShardId owner() const { return owner_; }
  uint64_t next_offset() const { return next_offset_; }

  // One message to the measured partition, submitted from here: its round trip, or -1.
  double append_blocking();
  void address(core::Notify& notify, ConsumerRef consumer) const;
  // The stored offset of the lag consumer = the last offset: its lag is 0.
  bool catch_up();
  void store_request(core::StoreOffset& store) const;
  // Waits until exactly `count` waits are parked (the broker's own counter).
  bool wait_parked(uint64_t count);
  // Cancels them all, then settles their registrations with one more append.
  bool cancel(std::vector<std::unique_ptr<Stamped<core::Notify>>>& watchers);
  void append_request(core::Append& append);

 private:
  bool create_topic(uint32_t partitions);

  std::filesystem::path directory_;
  Shard0 hooks_;
  std::unique_ptr<core::Broker> broker_;
  std::vector<std::byte> message_ = std::vector<std::byte>(message_layout::header_bytes + 8);
  uint32_t partition_ = 0;
  ShardId owner_{0};
  uint64_t next_offset_ = 0;
};

bool InProcess::start(const Options& options) {
  const std::optional<storage::Durability> durability = durability_named(options.durability);
  if (!durability) {
    std::fprintf(stderr, "notify: unknown --durability '%s'\n", options.durability.c_str());
    return false;
  }
  directory_ =
      std::filesystem::temp_directory_path() / ("hark-bench-notify-" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory_);
  core::BrokerOptions broker_options;
  broker_options.data_directory = directory_.string();
  broker_options.shards_count = options.shards;
  broker_options.max_wait = 2 * watcher_wait;
  broker_options.log.durability = *durability;
  broker_options.hooks = &hooks_;
  auto broker = core::Broker::start(broker_options);
  if (!broker.ok()) {
    std::fprintf(stderr, "notify: broker start failed: %s\n",
                 std::string(error_name(broker.error())).c_str());
    return false;
  }
  broker_ = std::move(broker).value();
  store_u32(message_, message_layout::payload_length, 8);
  return create_topic(options.shards);
}

// One message on every partition (a store needs one); measures the first owned by a shard
// other than 0 (the requests' home), or partition 0 on one shard.
bool InProcess::create_topic(uint32_t partitions) {
  Blocking<core::CreateStream> stream;
  stream.name = "notify";
  Blocking<core::CreateTopic> topic;
  topic.stream = NameOrId::id(0);
  topic.name = "events";
  topic.settings.partitions_count = partitions;
  if (!stream.call(*broker_).ok() || !topic.call(*broker_).ok()) {
    std::fprintf(stderr, "notify: cannot create the topic\n");
    return false;
  }
  std::optional<uint32_t> chosen;
  for (uint32_t p = partitions; p-- > 0;) {
    Blocking<core::Append> append;
    partition_ = p;
    append_request(append);
    if (!append.call(*broker_).ok() || !append.owner_shard) return false;
    if (*append.owner_shard != ShardId(0) || (p == 0 && !chosen)) {
      chosen = p;
      owner_ = *append.owner_shard;
    }
  }
  partition_ = *chosen;
  next_offset_ = 1;
  return true;
}

void InProcess::append_request(core::Append& append) {
  append.stream = NameOrId::id(0);
  append.topic = NameOrId::id(0);
  append.partitioning = core::Partitioning{core::Partitioning::Kind::partition, partition_};
  append.messages = message_;
  append.count = 1;
}

double InProcess::append_blocking() {
  Blocking<core::Append> append;
  append_request(append);
  const auto sent = SteadyClock::now();
  if (!append.call(*broker_).ok()) return -1;
  next_offset_++;
  return micros_between(sent, SteadyClock::now());
}

void InProcess::address(core::Notify& notify, ConsumerRef consumer) const {
  notify.stream = NameOrId::id(0);
  notify.topic = NameOrId::id(0);
  notify.partition = partition_;
  notify.consumer = consumer;
  notify.wait = watcher_wait;
}

void InProcess::store_request(core::StoreOffset& store) const {
  store.stream = NameOrId::id(0);
  store.topic = NameOrId::id(0);
  store.partition = partition_;
  store.consumer = lag_consumer;
  store.offset = next_offset_ - 1;
}

bool InProcess::catch_up() {
  Blocking<core::StoreOffset> store;
  store_request(store);
  return store.call(*broker_).ok();
}

bool InProcess::wait_parked(uint64_t count) {
  const auto deadline = SteadyClock::now() + 10s;
  while (SteadyClock::now() < deadline) {
    Blocking<core::GetStats> stats;
    if (!stats.call(*broker_).ok()) return false;
    if (stats.stats.waits.parked_now == count) return true;
    std::this_thread::yield();
  }
  std::fprintf(stderr, "notify: %llu waits never parked\n", static_cast<unsigned long long>(count));
  return false;
}

bool InProcess::cancel(std::vector<std::unique_ptr<Stamped<core::Notify>>>& watchers) {
  CancelAll task;
  task.broker = broker_.get();
  task.watchers = &watchers;
  hooks_.reactor()->post_from_outside(task);
  task.ran.wait();
  for (auto& watcher : watchers) watcher->finished.wait();  // Answered Disconnected.
  watchers.clear();
  // Their registrations go home at the owner's next commit: make it now, outside any window.
  return wait_parked(0) && append_blocking() >= 0;
}

using Watchers = std::vector<std::unique_ptr<Stamped<core::Notify>>>;

// What the commit-cost rows park on the partition.
struct CostCase {
  const char* name;
  std::string_view condition;  // Empty: nobody.
  size_t watchers;
};
constexpr CostCase cost_cases[] = {
    {"commit, 0 watchers", "", 0},
    {"commit, 1 hark.lag watcher", core::lag_condition, 1},
    {"commit, 100 hark.lag watchers", core::lag_condition, 100},
    {"commit, 1000 hark.lag watchers", core::lag_condition, 1000},
    {"commit, 1000 hark.messages (unmet)", core::messages_condition, 1000},
};

// The CPU the broker's threads used since construction: the process's minus this thread's
// (hark-bench runs no other thread in this scenario).
class BrokerCpu {
 public:
  int64_t used_ns() const { return process_ns() - self_ns() - start_; }

 private:
  static int64_t clock_ns(clockid_t clock) {
    timespec now{};
    ::clock_gettime(clock, &now);
    return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  }
  static int64_t process_ns() { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }
  static int64_t self_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
  int64_t start_ = process_ns() - self_ns();
};

// Parks `count` watchers of `condition` that no append reaches (lag above 2^62; 2^32 - 1
// messages past offset 0).
bool park_watchers(InProcess& run, std::string_view condition, size_t count, Watchers& out) {
  for (size_t i = 0; i < count; i++) {
    auto watcher = std::make_unique<Stamped<core::Notify>>();
    run.address(*watcher, watch_consumer);
    if (condition == core::lag_condition) {
      core::wait_for_lag(*watcher, {.direction = core::LagParams::Direction::above,
                                    .threshold = uint64_t{1} << 62});
    } else {
      core::wait_for_messages(*watcher, {.min_messages = UINT32_MAX, .offset = 0});
    }
    run.broker().submit(*watcher);
    out.push_back(std::move(watcher));
  }
  return run.wait_parked(count);
}

struct CostSamples {
  std::vector<double> round_trip_us;
  int64_t cpu_ns = 0;
  size_t commits = 0;
};

// One block of one case: park, `appends` appends, check no watcher answered, cancel.
bool measure_cost(InProcess& run, const CostCase& which, int appends, CostSamples& into) {
  Watchers watchers;
  if (!park_watchers(run, which.condition, which.watchers, watchers)) return false;
  std::vector<double> block;
  const BrokerCpu cpu;
  for (int i = 0; i < appends; i++) {
    const double us = run.append_blocking();
    if (us < 0) return false;
    block.push_back(us);
  }
  into.cpu_ns += cpu.used_ns();
  into.commits += block.size();
  for (const auto& watcher : watchers) {
    if (watcher->finished.is_set()) {
      std::fprintf(stderr, "notify: a watcher of %s answered during the appends\n", which.name);
      return false;
    }
  }
  block = without_warmup(std::move(block));
  into.round_trip_us.insert(into.round_trip_us.end(), block.begin(), block.end());
  return run.cancel(watchers);
}

// Submits `waiter`, waits until it is parked, idles `gap`, triggers: trigger -> answer, in µs
// (-1 on failure; the waiter has ended either way).
template <typename Op, typename Trigger>
double time_wake(InProcess& run, Stamped<Op>& waiter, std::chrono::microseconds gap,
                 Trigger trigger) {
  run.broker().submit(waiter);
  const bool parked = run.wait_parked(1);
  if (parked && gap.count() > 0) std::this_thread::sleep_for(gap);
  const auto sent = SteadyClock::now();
  const bool triggered = parked && trigger();
  if (!triggered) {
    std::fprintf(stderr, "notify: %s\n",
                 parked ? "the trigger failed" : "the waiter answered at once");
  }
  waiter.finished.wait();  // Answered by the trigger, or by its wait when that failed.
  if (!triggered || !waiter.status().ok()) return -1;
  return micros_between(sent, waiter.at);
}

// The four waiters of part (b), in the order one round measures them.
struct LatencySamples {
  std::vector<double> messages, above, below, poll;
};

double time_messages(InProcess& run, std::chrono::microseconds gap) {
  Stamped<core::Notify> notify;
  run.address(notify, watch_consumer);
  core::wait_for_messages(notify, {.min_messages = 1, .offset = run.next_offset()});
  const double us = time_wake(run, notify, gap, [&] { return run.append_blocking() >= 0; });
  return notify.answers.size() == 1 ? us : -1;
}

double time_poll(InProcess& run, std::chrono::microseconds gap) {
  Stamped<core::Poll> poll;
  poll.stream = NameOrId::id(0);
  poll.topic = NameOrId::id(0);
  poll.partition = run.partition();
  poll.consumer = watch_consumer;
  poll.from = core::PollFrom::offset;
  poll.value = run.next_offset();
  poll.wait = watcher_wait;
  const double us = time_wake(run, poll, gap, [&] { return run.append_blocking() >= 0; });
  return poll.result.messages.count() == 1 ? us : -1;
}

// `above 1` from lag 0, fired by an append; then `below 0` from lag 1, fired by the store.
bool time_lag(InProcess& run, std::chrono::microseconds gap, LatencySamples& into) {
  if (!run.catch_up()) return false;
  Stamped<core::Notify> above;
  run.address(above, lag_consumer);
  core::wait_for_lag(above, {.direction = core::LagParams::Direction::above, .threshold = 1});
  const double above_us = time_wake(run, above, gap, [&] { return run.append_blocking() >= 0; });
  Stamped<core::Notify> below;
  run.address(below, lag_consumer);
  core::wait_for_lag(below, {.direction = core::LagParams::Direction::below, .threshold = 0});
  const double below_us = time_wake(run, below, gap, [&] { return run.catch_up(); });
  if (above_us < 0 || below_us < 0 || above.total != 1 || below.total != 0) return false;
  into.above.push_back(above_us);
  into.below.push_back(below_us);
  return true;
}

bool measure_latency(InProcess& run, std::chrono::microseconds gap, int rounds,
                     LatencySamples& into) {
  LatencySamples block;
  for (int i = 0; i < rounds; i++) {
    const double messages_us = time_messages(run, gap);
    const double poll_us = time_poll(run, gap);
    if (messages_us < 0 || poll_us < 0 || !time_lag(run, gap, block)) {
      std::fprintf(stderr, "notify: a latency round failed\n");
      return false;
    }
    block.messages.push_back(messages_us);
    block.poll.push_back(poll_us);
  }
  using Column = std::pair<std::vector<double>*, std::vector<double>*>;
  const Column columns[] = {{&block.messages, &into.messages},
                            {&block.above, &into.above},
                            {&block.below, &into.below},
                            {&block.poll, &into.poll}};
  for (auto [from, to] : columns) {
    *from = without_warmup(std::move(*from));
    to->insert(to->end(), from->begin(), from->end());
  }
  return true;
}

void report_cost(std::vector<CostSamples>& cost, const std::string& setup, Report& report) {
  const auto per_commit_ns = [](const CostSamples& c) {
    return c.commits == 0 ? 0.0 : static_cast<double>(c.cpu_ns) / static_cast<double>(c.commits);
  };
  const double none_ns = per_commit_ns(cost[0]);
  for (size_t i = 0; i < cost.size(); i++) {
    const double ns = per_commit_ns(cost[i]);
    char notes[200];
    std::snprintf(notes, sizeof notes, "broker CPU %.0f ns/commit (x%.2f of 0 watchers); ", ns,
                  none_ns > 0 ? ns / none_ns : 0.0);
    report.add({.name = cost_cases[i].name,
                .samples_us = std::move(cost[i].round_trip_us),
                .server_cpu_us_per_op = ns / 1e3,
                .notes = notes + std::string("append round trip from outside; ") + setup});
  }
}

void report_latency(LatencySamples& latency, const std::string& setup, Report& report) {
  const double poll_p50 = report
                              .add({.name = "poll wake (append -> Poll)",
                                    .samples_us = std::move(latency.poll),
                                    .notes = "parked Poll, from offset; " + setup})
                              .latency.p50;
  const std::pair<const char*, std::vector<double>*> rows[] = {
      {"hark.messages (append -> Notify)", &latency.messages},
      {"hark.lag above (append -> Notify)", &latency.above},
      {"hark.lag below (store -> Notify)", &latency.below},
  };
  for (auto [name, samples] : rows) {
    const double p50 =
        report.add({.name = name, .samples_us = std::move(*samples), .notes = setup}).latency.p50;
    char line[160];
    std::snprintf(line, sizeof line, "%s p50 / poll wake p50 = %.2f", name,
                  poll_p50 > 0 ? p50 / poll_p50 : 0.0);
    report.note(line);
  }
}

}  // namespace

bool run_notify(const Options& options, Report& report) {
  if (!options.address.empty()) {
    report.note("notify runs in process (a core::Broker of its own): --address is ignored");
  }
  InProcess run;
  if (!run.start(options)) return false;
  const int blocks = options.smoke ? 1 : 10;
  const int appends = options.smoke ? 50 : 500;
  const int rounds = options.smoke ? 10 : 200;
  std::vector<CostSamples> cost(std::size(cost_cases));
  LatencySamples latency;
  bool ok = true;
  for (int block = 0; block < blocks && ok; block++) {
    for (size_t i = 0; i < cost.size() && ok; i++) {
      ok = measure_cost(run, cost_cases[i], appends, cost[i]);
    }
    ok = ok && measure_latency(run, options.gap, rounds, latency);
  }
  const std::string setup = std::to_string(options.shards) + " shards, " + options.durability +
                            ", home shard 0, partition on shard " +
                            std::to_string(run.owner().value()) + ", gap " +
                            std::to_string(options.gap.count()) + " µs";
  report_cost(cost, options.durability + ", " + std::to_string(options.shards) + " shards", report);
  report_latency(latency, setup, report);
  if (options.smoke) report.note("[smoke: too few samples to mean anything]");
  return ok;
}

}  // namespace hark::bench
