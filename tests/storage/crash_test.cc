// Covers durability `always` across real process deaths (issue #8): a child (crash_child.cc)
// appends and reports each acknowledged commit over a pipe; the test SIGKILLs it at a random
// moment, reopens the log and checks that every acknowledged message is there, intact and in
// order; then the next child continues the same log. SIGKILL keeps the page cache, so this
// proves the order of acknowledgement and write, and recovery — power loss is the storage
// model test's job. 20 cycles; HARK_CRASH_CYCLES=N runs N (long mode). A build whose child
// acknowledges before writing is a WILL_FAIL test (label mutant).
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "io/reactor.h"
#include "storage/partition_log.h"
#include "tests/cli/child_process.h"
#include "tests/storage/crash_payload.h"
#include "tests/storage/log_harness.h"
#include "tests/support/prng.h"
#include "tests/support/wait_until.h"

namespace hark::storage::test {
namespace {

using namespace std::chrono_literals;

int cycles() {
  const char* value = std::getenv("HARK_CRASH_CYCLES");
  return value == nullptr ? 20 : std::max(1, std::atoi(value));
}

// The highest end offset the child acknowledged, from its stdout.
uint64_t acked_end(const std::string& out) {
  uint64_t end = 0;
  for (size_t at = 0; at + sizeof(uint64_t) <= out.size(); at += sizeof(uint64_t)) {
    uint64_t value = 0;
    std::memcpy(&value, out.data() + at, sizeof(value));
    EXPECT_GE(value, end) << "acknowledgements out of order";
    end = std::max(end, value);
  }
  return end;
}

// Reopens the log and checks offsets [0, acked) are present, intact and in order. Returns the
// log's end.
uint64_t check_log(const std::string& directory, uint64_t acked) {
  auto reactor = std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{})).value();
  ManualClock clock;
  LogOptions options;
  options.directory = directory;
  options.durability = Durability::always;
  auto log = PartitionLog::open(*reactor, clock, options);
  EXPECT_TRUE(log.ok()) << error_name(log.error());
  if (!log.ok()) return 0;
  const uint64_t end = (*log)->next_offset().value();
  EXPECT_GE(end, acked) << "acknowledged messages were lost";
  uint64_t offset = 0;
  while (offset < acked) {
    ReadCollector read;
    (*log)->read(Offset(offset), 1000, 1 << 20, read);
    for (int i = 0; i < 10'000 && read.calls == 0; i++) reactor->run_once(true);
    EXPECT_EQ(read.error, Error::ok);
    if (read.count == 0) {
      ADD_FAILURE() << "offset " << offset << " is missing (acknowledged up to " << acked << ")";
      break;
    }
    for (const ReadMessage& message : read.messages) {
      EXPECT_EQ(message.offset, offset);
      EXPECT_TRUE(message.checksum_ok) << "offset " << offset;
      EXPECT_EQ(message.payload, crash_payload(offset)) << "offset " << offset;
      offset++;
    }
    if (::testing::Test::HasFailure()) break;
  }
  (*log)->close();
  return end;
}

TEST(CrashAlways, EveryAcknowledgedMessageSurvivesSigkill) {
  char pattern[] = "/tmp/hark-crash-XXXXXX";
  const std::string root = ::mkdtemp(pattern);
  const std::string directory = root + "/streams/1/topics/1/partitions/0";
  hark::test::Prng prng(static_cast<uint64_t>(::getpid()));
  uint64_t acked_total = 0;
  for (int cycle = 0; cycle < cycles() && !::testing::Test::HasFailure(); cycle++) {
    const std::string ready = root + "/ready";
    std::filesystem::remove(ready);
    cli::test::ChildProcess child;
    ASSERT_TRUE(child.start({HARK_CRASH_CHILD_PATH, directory, ready}, {}));
    // A random moment once recovery is over: from then on it commits continuously.
    hark::test::wait_until([&] { return std::filesystem::exists(ready); });
    // Not a wait for a signal: the random delay is the crash moment under test.
    std::this_thread::sleep_for(std::chrono::microseconds(prng.below(60'000)));
    child.send_signal(SIGKILL);
    const cli::test::ChildResult result = child.wait(10s);
    ASSERT_FALSE(result.exited) << "child ended by itself (status " << result.status
                                << "): " << result.err;
    const uint64_t acked = acked_end(result.out);
    acked_total = std::max(acked_total, acked);
    const uint64_t end = check_log(directory, acked_total);
    std::printf("cycle %d: killed after ack of offset end %lu; log end %lu\n", cycle,
                static_cast<unsigned long>(acked), static_cast<unsigned long>(end));
  }
  EXPECT_GT(acked_total, 0u) << "no child ever acknowledged anything: the test proves nothing";
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace hark::storage::test
