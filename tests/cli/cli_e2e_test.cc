// Covers build/bin/hark end to end against a real harkd (tests/e2e/harkd_process.h: 2 shards,
// a temporary data directory, an ephemeral loopback port): messages produced are consumed,
// a consume parked in its wait receives a message produced after it started, --follow ends
// cleanly on SIGINT while its poll is parked, a group member stores its own offsets without
// auto-commit and reads past an empty partition without a wait, server errors print Iggy's name and
// code, and the address comes from the environment. Every hark runs as a child process with exactly
// the environment the test gives it.
#include <signal.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/cli/child_process.h"
#include "hark/tests/e2e/harkd_process.h"

namespace hark::cli {
namespace {

using namespace std::chrono_literals;
using test::ChildProcess;
using test::ChildResult;
using test::run_child;

std::string cli_path() { return HARK_CLI_PATH; }

// Long enough for a sanitizer build on a shared machine; only a hang ever reaches it.
constexpr std::chrono::milliseconds command_timeout = 60s;

class CliEndToEnd : public testing::Test {
 protected:
  void SetUp() override {
    hark::test::HarkdProcess::Options options;
    options.harkd_path = HARK_HARKD_PATH;
    options.shards_count = 2;
    ASSERT_TRUE(harkd_.start(options)) << harkd_.error_text() << "\n" << harkd_.stderr_tail();
  }

  void TearDown() override {
    if (harkd_.running()) {
      const hark::test::ProcessExit exit = harkd_.stop();
      EXPECT_TRUE(exit.clean()) << describe(exit) << "\n" << harkd_.stderr_tail();
    }
  }

  // argv for hark with `args` and the server's address.
  std::vector<std::string> hark(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--address");
    argv.push_back(harkd_.address());
    return argv;
  }

  // Runs hark and expects it to succeed; returns its stdout.
  std::string run_ok(const std::vector<std::string>& args, const std::string& input = {}) {
    const ChildResult result = run_child(hark(args), {}, input, command_timeout);
    EXPECT_TRUE(result.exited && result.status == 0)
        << "status " << result.status << ", signal " << result.signal << "\nstderr:\n"
        << result.err;
    return result.out;
  }

  void create_topic() {
    run_ok({"stream", "create", "orders"});
    run_ok({"topic", "create", "orders", "events", "--partitions", "2"});
  }

  hark::test::HarkdProcess harkd_;
};

TEST_F(CliEndToEnd, ProducedMessagesAreConsumed) {
  create_topic();
  EXPECT_EQ(run_ok({"produce", "orders", "events", "hello", "world", "--partition", "1"}),
            "sent 2 messages\n");
  EXPECT_EQ(run_ok({"produce", "orders", "events", "--partition", "1"}, "from\nstdin\n"),
            "sent 2 messages\n");
  EXPECT_EQ(
      run_ok({"consume", "orders", "events", "--partition", "1", "--wait", "5s", "--count", "4"}),
      "hello\nworld\nfrom\nstdin\n");
  // Auto-commit stored the offset: the same consumer finds nothing new.
  EXPECT_EQ(run_ok({"consume", "orders", "events", "--partition", "1"}), "");
  // Without auto-commit, from the start, by explicit offsets.
  EXPECT_EQ(run_ok({"consume", "orders", "events", "--partition", "1", "--from", "offset:1",
                    "--no-auto-commit", "--format", "hex"}),
            "776f726c64\n66726f6d\n737464696e\n");
}

TEST_F(CliEndToEnd, AWaitingConsumeReceivesAMessageProducedAfterItStarted) {
  create_topic();
  ChildProcess consumer;
  ASSERT_TRUE(consumer.start(
      hark({"consume", "orders", "events", "--partition", "0", "--wait", "30s", "--count", "1"}),
      {}));
  // Produced once harkd says the consume's poll is parked, so the message wakes it.
  EXPECT_TRUE(hark::test::wait_until_parked(harkd_, 1));
  EXPECT_EQ(run_ok({"produce", "orders", "events", "late", "--partition", "0"}),
            "sent 1 message\n");
  const ChildResult result = consumer.wait(command_timeout);
  EXPECT_TRUE(result.exited && result.status == 0) << result.err;
  EXPECT_EQ(result.out, "late\n");
}

TEST_F(CliEndToEnd, AGroupMemberReadsEachMessageOnceWithoutAutoCommit) {
  create_topic();
  run_ok({"produce", "orders", "events", "zero", "--partition", "0"});
  run_ok({"produce", "orders", "events", "one", "--partition", "1"});
  EXPECT_EQ(run_ok({"group", "create", "orders", "events", "workers"}),
            "created consumer group 'workers' (id 0) on topic events of stream orders\n");
  // The member is answered from either partition; it stores each batch's offset itself.
  std::string out = run_ok(
      {"consume", "orders", "events", "--group", "workers", "--no-auto-commit", "--wait", "500ms"});
  EXPECT_TRUE(out == "zero\none\n" || out == "one\nzero\n") << out;
  EXPECT_EQ(run_ok({"consume", "orders", "events", "--group", "workers", "--wait", "200ms"}), "");
}

TEST_F(CliEndToEnd, AGroupMemberWithoutAWaitReadsPastItsEmptyPartitions) {
  create_topic();
  run_ok({"produce", "orders", "events", "on one", "--partition", "1"});
  run_ok({"group", "create", "orders", "events", "workers"});
  // Without a wait the server reads one partition per poll, round robin, starting at 0 (as
  // Iggy 0.8.0): the first answer is empty, and consume must not stop there.
  EXPECT_EQ(run_ok({"consume", "orders", "events", "--group", "workers"}), "on one\n");
}

TEST_F(CliEndToEnd, FollowEndsCleanlyOnSigintWhileItsPollIsParked) {
  create_topic();
  ChildProcess consumer;
  ASSERT_TRUE(consumer.start(
      hark({"consume", "orders", "events", "--partition", "0", "--follow", "--wait", "1h"}), {}));
  EXPECT_TRUE(hark::test::wait_until_parked(harkd_, 1));
  consumer.send_signal(SIGINT);
  // The poll's wait is an hour (clamped by harkd to its maximum): only the cancel ends it
  // before the command timeout.
  const ChildResult result = consumer.wait(command_timeout);
  EXPECT_FALSE(result.killed_late);
  EXPECT_TRUE(result.exited && result.status == 0)
      << "status " << result.status << ", signal " << result.signal << "\n"
      << result.err;
  EXPECT_EQ(result.err, "");
}

TEST_F(CliEndToEnd, AServerErrorShowsItsNameAndCode) {
  const ChildResult missing = run_child(hark({"topic", "list", "nosuch"}), {}, {}, command_timeout);
  EXPECT_TRUE(missing.exited);
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err,
            "error: StreamNameNotFound (1010): Stream with name: nosuch was not found.\n");
  create_topic();
  const ChildResult duplicate =
      run_child(hark({"stream", "create", "orders"}), {}, {}, command_timeout);
  EXPECT_EQ(duplicate.status, 1);
  EXPECT_EQ(duplicate.err,
            "error: StreamNameAlreadyExists (1012): Stream with name: orders already exists.\n");
  const ChildResult wrong_password =
      run_child(hark({"stream", "list", "--password", "wrong"}), {}, {}, command_timeout);
  EXPECT_EQ(wrong_password.status, 1);
  EXPECT_EQ(wrong_password.err, "error: InvalidCredentials (42): Invalid credentials\n");
}

TEST_F(CliEndToEnd, TheAddressComesFromTheEnvironmentHarkBeforeIggy) {
  const std::vector<std::string> environment = {"HARK_ADDRESS=" + harkd_.address(),
                                                "IGGY_TCP_ADDRESS=127.0.0.1:1"};
  const ChildResult result =
      run_child({cli_path(), "stream", "create", "from-env"}, environment, {}, command_timeout);
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "created stream 'from-env' (id 0)\n");
}

TEST_F(CliEndToEnd, AClosedPortIsATransportError) {
  const ChildResult result =
      run_child({cli_path(), "ping", "--address", "127.0.0.1:1"}, {}, {}, command_timeout);
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err, "error: cannot connect to 127.0.0.1:1: CannotEstablishConnection (9)\n");
}

// hark wait and hark lag (docs/cli.md §wait and lag) against harkd's notification commands.
TEST_F(CliEndToEnd, WaitPrintsTheOffsetsASendFromAnotherClientMadeReady) {
  create_topic();
  ChildProcess waiter;
  ASSERT_TRUE(
      waiter.start(hark({"wait", "orders", "events", "--partition", "1", "--timeout", "30s"}), {}));
  ASSERT_TRUE(hark::test::wait_until_parked(harkd_, 1));
  // While it blocks, one parked wait and no condition evaluated between two reads of the
  // counters, around another client's round trip (harkd served it meanwhile).
  const std::optional<hark::test::HarkdStats> before = harkd_.stats();
  ASSERT_TRUE(before.has_value());
  run_ok({"ping"});
  const std::optional<hark::test::HarkdStats> after = harkd_.stats();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->parked_now, 1u);
  EXPECT_EQ(after->conditions_evaluated, before->conditions_evaluated) << *after;
  EXPECT_EQ(run_ok({"produce", "orders", "events", "x", "y", "--partition", "1"}),
            "sent 2 messages\n");
  const ChildResult result = waiter.wait(command_timeout);
  EXPECT_TRUE(result.exited && result.status == 0) << result.err;
  EXPECT_EQ(result.out, "partition 1: offsets 0..1 ready\n");
}

TEST_F(CliEndToEnd, WaitExitsOneWhenItsTimeoutPassesWithNothing) {
  create_topic();
  const ChildResult result =
      run_child(hark({"wait", "orders", "events", "--timeout", "200ms"}), {}, {}, command_timeout);
  EXPECT_TRUE(result.exited && result.status == 1) << result.status << " " << result.err;
  EXPECT_EQ(result.out, "");
}

TEST_F(CliEndToEnd, LagAboveOfAGroupItNeverJoinsFiresOnSends) {
  create_topic();
  run_ok({"group", "create", "orders", "events", "workers"});
  ChildProcess watcher;
  ASSERT_TRUE(watcher.start(
      hark({"lag", "orders", "events", "--group", "workers", "--above", "2", "--timeout", "30s"}),
      {}));
  ASSERT_TRUE(hark::test::wait_until_parked(harkd_, 1));
  run_ok({"produce", "orders", "events", "a", "--partition", "0"});
  run_ok({"produce", "orders", "events", "b", "--partition", "1"});
  const ChildResult result = watcher.wait(command_timeout);
  EXPECT_TRUE(result.exited && result.status == 0) << result.err;
  EXPECT_EQ(result.out.substr(0, result.out.find('\n')), "lag 2: above 2") << result.out;
}

}  // namespace
}  // namespace hark::cli
