// Covers the Reactor and ShardGroup: stepping a shard with run_once(false) and a manual clock
// (timers fire on the step after their deadline, no sleeping), tasks posted from outside and
// between shards, one eventfd write per target per iteration, tasks that run only once the ring
// took what the tasks before them queued, and clean start/stop.
#include "hark/io/reactor.h"

#include <unistd.h>

#include <atomic>
#include <span>
#include <vector>

#include <gtest/gtest.h>
#include <sys/socket.h>

#include "hark/io/shard_group.h"
#include "hark/tests/io/recorder.h"
#include "hark/tests/support/wait_until.h"

namespace hark::io {
namespace {

using namespace std::chrono_literals;

struct CountingTask final : Task {
  void run() override { runs.fetch_add(1, std::memory_order_relaxed); }
  std::atomic<int> runs{0};
};

struct Deadline final : Timer {
  void expire() override { fired++; }
  int fired = 0;
};

struct Hook final : IterationHook {
  void on_iteration_end() override { calls++; }
  int calls = 0;
};

TEST(Reactor, TimersFireWhenTheManualClockPassesThem) {
  ManualClock clock;
  auto reactor = std::move(Reactor::create(ShardId(0), ReactorOptions{.clock = &clock})).value();
  Deadline deadline;
  reactor->timers().add(deadline, clock.monotonic_now() + 30ms);
  reactor->run_once(false);
  EXPECT_EQ(deadline.fired, 0);
  clock.advance(29ms);
  reactor->run_once(false);
  EXPECT_EQ(deadline.fired, 0);
  clock.advance(2ms);
  reactor->run_once(false);
  EXPECT_EQ(deadline.fired, 1);
}

TEST(Reactor, BlockingRunSleepsUntilTheNextTimer) {
  auto reactor = std::move(Reactor::create(ShardId(0), ReactorOptions{})).value();
  Deadline deadline;
  reactor->timers().add(deadline, reactor->clock().monotonic_now() + 2ms);
  for (int i = 0; i < 100 && deadline.fired == 0; i++) reactor->run_once(true);
  EXPECT_EQ(deadline.fired, 1);
  EXPECT_GE(reactor->counters().sleeps, 1u);
}

TEST(Reactor, TasksFromOutsideRunAndTheHookRunsEveryIteration) {
  auto reactor = std::move(Reactor::create(ShardId(0), ReactorOptions{})).value();
  Hook hook;
  reactor->set_iteration_hook(&hook);
  CountingTask task;
  reactor->post_from_outside(task);
  EXPECT_EQ(reactor->run_once(true), 1u);
  EXPECT_EQ(task.runs.load(), 1);
  EXPECT_EQ(hook.calls, 1);
}

TEST(Reactor, AThreadBlockedInTheKernelIsWokenByAPost) {
  auto reactor = std::move(Reactor::create(ShardId(0), ReactorOptions{})).value();
  CountingTask task;
  std::atomic<bool> started{false};
  std::thread poster([&] {
    while (!started.load()) std::this_thread::yield();
    EXPECT_TRUE(hark::test::wait_until(
        [&] { return reactor->gate().state() == SleepGate::State::sleeping; }));
    // Not a wait for a signal: the shard must stay asleep this long, and the iterations it
    // counts meanwhile are the test (a spurious wake-up makes thousands).
    std::this_thread::sleep_for(20ms);
    reactor->post_from_outside(task);
  });
  started.store(true);
  for (int i = 0; i < 1000 && task.runs.load() == 0; i++) reactor->run_once(true);
  poster.join();
  EXPECT_EQ(task.runs.load(), 1);
  EXPECT_GE(reactor->gate().eventfd_writes(), 1u);
  // It slept through the 20 ms instead of spinning: a handful of iterations, not thousands.
  EXPECT_LE(reactor->counters().iterations, 5u);
}

// Queues one byte's send on the reactor's ring (an answer, as a woken poll's hand-back does).
struct QueueSend final : Task {
  void run() override {
    reactor->ring().send(fd, std::as_bytes(std::span("x", 1)), sent);
    order->push_back('s');
  }
  Reactor* reactor = nullptr;
  int fd = -1;
  test::Recorder sent;
  std::vector<char>* order = nullptr;
};

// Looks, without waiting, whether the byte reached the peer socket (an acknowledgement).
struct CheckArrived final : Task {
  void run() override {
    char byte = 0;
    arrived = ::recv(fd, &byte, 1, MSG_DONTWAIT) == 1;
    order->push_back('c');
  }
  int fd = -1;
  bool arrived = false;
  std::vector<char>* order = nullptr;
};

// From outside the loop: posts `check` after submit first, then `send` to this shard, as the
// wait path posts an append's acknowledgement and a woken poll's hand-back in one hook.
struct PostBoth final : Task {
  void run() override {
    reactor->post_after_submit(*check);
    reactor->post(reactor->id(), *send);
  }
  Reactor* reactor = nullptr;
  CheckArrived* check = nullptr;
  QueueSend* send = nullptr;
};

TEST(Reactor, ATaskPostedAfterSubmitRunsOnceWhatTheTasksBeforeItQueuedWasSent) {
  auto reactor = std::move(Reactor::create(ShardId(0), ReactorOptions{})).value();
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::vector<char> order;
  QueueSend send;
  send.reactor = reactor.get();
  send.fd = fds[0];
  send.order = &order;
  CheckArrived check;
  check.fd = fds[1];
  check.order = &order;
  PostBoth post;
  post.reactor = reactor.get();
  post.check = &check;
  post.send = &send;
  reactor->post_from_outside(post);
  reactor->run_once(true);  // One iteration: both run in it.
  EXPECT_EQ(order, (std::vector<char>{'s', 'c'}));
  // Sent before the check ran: the ring was entered in mid-iteration, not at its next run.
  EXPECT_TRUE(check.arrived);
  EXPECT_EQ(reactor->counters().early_submits, 1u);
  // With nothing queued, a task after submit neither enters the kernel nor yields.
  order.clear();
  reactor->post_after_submit(check);
  reactor->run_once(false);
  EXPECT_EQ(order, (std::vector<char>{'c'}));
  EXPECT_EQ(reactor->counters().early_submits, 1u);
  test::run_until(reactor->ring(), send.sent, 1);
  EXPECT_EQ(send.sent.results[0], 1);
  ::close(fds[0]);
  ::close(fds[1]);
}

// Posts `count` tasks from shard 0 to shard 1 within one iteration.
struct Fanout final : Task {
  void run() override {
    for (CountingTask& task : *targets) source->post(ShardId(1), task);
  }
  Reactor* source = nullptr;
  std::vector<CountingTask>* targets = nullptr;
};

TEST(ShardGroup, CrossShardPostsAreBatchedIntoOneWake) {
  auto group = std::move(ShardGroup::start(ShardGroupOptions{.shards_count = 2}, nullptr)).value();
  std::vector<CountingTask> targets(100);
  Fanout fanout;
  fanout.source = &group->shard(ShardId(0));
  fanout.targets = &targets;
  const auto asleep = [&](uint32_t shard) {
    return group->shard(ShardId(shard)).gate().state() == SleepGate::State::sleeping;
  };
  EXPECT_TRUE(hark::test::wait_until([&] { return asleep(0) && asleep(1); }));
  const uint64_t writes_before = group->shard(ShardId(1)).gate().eventfd_writes();
  group->post(ShardId(0), fanout);
  hark::test::wait_until([&] {
    bool all = true;
    for (CountingTask& task : targets) all = all && task.runs.load() == 1;
    return all;
  });
  for (CountingTask& task : targets) EXPECT_EQ(task.runs.load(), 1);
  // 100 tasks, one batch: at most one eventfd write to shard 1.
  EXPECT_LE(group->shard(ShardId(1)).gate().eventfd_writes() - writes_before, 1u);
  group->stop();
}

struct RecordingSetup final : ShardSetup {
  Status on_start(Reactor& reactor) override {
    started.fetch_add(1);
    return reactor.id().value() == fail_shard ? Status(Error::io_error) : ok_status();
  }
  void on_stop(Reactor&) override { stopped.fetch_add(1); }
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  uint32_t fail_shard = 99;
};

TEST(ShardGroup, StartAndStopRunTheSetupOnEveryShard) {
  RecordingSetup setup;
  auto group = std::move(ShardGroup::start(ShardGroupOptions{.shards_count = 3}, &setup)).value();
  EXPECT_EQ(setup.started.load(), 3);
  group->stop();
  group->stop();
  EXPECT_EQ(setup.stopped.load(), 3);
}

TEST(ShardGroup, AFailedShardFailsTheStartCleanly) {
  RecordingSetup setup;
  setup.fail_shard = 1;
  Result<std::unique_ptr<ShardGroup>> group =
      ShardGroup::start(ShardGroupOptions{.shards_count = 2}, &setup);
  EXPECT_EQ(group.error(), Error::io_error);
  EXPECT_EQ(setup.stopped.load(), 2);
}

}  // namespace
}  // namespace hark::io
