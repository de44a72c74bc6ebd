// Covers durability `always` and the default, `write`, across real process deaths (issue #8): a
// child (crash_child.cc) appends, stores consumer offsets, and reports each acknowledged commit
// and store over a pipe; the test SIGKILLs it at a random moment, reopens the log and the
// offsets and checks that every acknowledged message is there, intact and in order, and that
// the stored offset is at least the last acknowledged one; then the next child continues the
// same log. SIGKILL keeps the page cache, so this proves the order of acknowledgement and
// write, and recovery — power loss is the storage model test's job. 20 cycles per policy;
// HARK_CRASH_CYCLES=N runs N (long mode). A build whose child acknowledges before writing is a
// WILL_FAIL test per policy (label mutant).
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "hark/core/broker/internal/offset_store.h"
#include "hark/io/reactor.h"
#include "hark/storage/partition_log.h"
#include "hark/tests/cli/child_process.h"
#include "hark/tests/storage/crash_payload.h"
#include "hark/tests/storage/log_harness.h"
#include "hark/tests/support/prng.h"
#include "hark/tests/support/wait_until.h"

namespace hark::storage::test {
namespace {

using namespace std::chrono_literals;

int cycles() {
  const char* value = std::getenv("HARK_CRASH_CYCLES");
  return value == nullptr ? 20 : std::max(1, std::atoi(value));
}

// What the child acknowledged, from its stdout: the highest commit end, and the highest stored
// offset plus one (0: none).
struct Acked {
  uint64_t end = 0;
  uint64_t stored_end = 0;
};

Acked acked_from(const std::string& out) {
  Acked acked;
  constexpr size_t record = 2 * sizeof(uint64_t);
  for (size_t at = 0; at + record <= out.size(); at += record) {
    uint64_t kind = 0;
    uint64_t value = 0;
    std::memcpy(&kind, out.data() + at, sizeof(kind));
    std::memcpy(&value, out.data() + at + sizeof(kind), sizeof(value));
    uint64_t& high = kind == 0 ? acked.end : acked.stored_end;
    const uint64_t end = kind == 0 ? value : value + 1;
    EXPECT_GE(end, high) << "acknowledgements out of order";
    high = std::max(high, end);
  }
  return acked;
}

// Reopens the offsets and checks consumer 1's offset is at least the last acknowledged store.
void check_offsets(io::Reactor& reactor, const std::string& directory, Durability durability,
                   uint64_t stored_end) {
  auto offsets = core::internal::OffsetStore::open(reactor.ring(), directory + "/consumer_offsets",
                                                   durability == Durability::always);
  ASSERT_TRUE(offsets.ok()) << error_name(offsets.error());
  const std::optional<uint64_t> stored =
      (*offsets)->get(core::ConsumerRef{.kind = core::ConsumerRef::Kind::consumer, .id = 1});
  if (stored_end == 0) return;
  ASSERT_TRUE(stored.has_value()) << "an acknowledged consumer offset was lost";
  EXPECT_GE(*stored + 1, stored_end) << "an acknowledged consumer offset was lost";
}

// Reopens the log and checks offsets [0, acked) are present, intact and in order. Returns the
// log's end.
uint64_t check_log(const std::string& directory, Durability durability, const Acked& acked_total) {
  const uint64_t acked = acked_total.end;
  auto reactor = std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{})).value();
  ManualClock clock;
  LogOptions options;
  options.directory = directory;
  options.durability = durability;
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
  check_offsets(*reactor, directory, durability, acked_total.stored_end);
  return end;
}

void crash_cycles(Durability durability) {
  const char* policy = durability == Durability::always ? "always" : "write";
  char pattern[] = "/tmp/hark-crash-XXXXXX";
  const std::string root = ::mkdtemp(pattern);
  const std::string directory = root + "/streams/1/topics/1/partitions/0";
  hark::test::Prng prng(static_cast<uint64_t>(::getpid()));
  Acked acked_total;
  for (int cycle = 0; cycle < cycles() && !::testing::Test::HasFailure(); cycle++) {
    const std::string ready = root + "/ready";
    std::filesystem::remove(ready);
    cli::test::ChildProcess child;
    ASSERT_TRUE(child.start({HARK_CRASH_CHILD_PATH, directory, ready, policy}, {}));
    // A random moment once recovery is over: from then on it commits continuously.
    hark::test::wait_until([&] { return std::filesystem::exists(ready); });
    // Not a wait for a signal: the random delay is the crash moment under test.
    std::this_thread::sleep_for(std::chrono::microseconds(prng.below(60'000)));
    child.send_signal(SIGKILL);
    const cli::test::ChildResult result = child.wait(10s);
    ASSERT_FALSE(result.exited) << "child ended by itself (status " << result.status
                                << "): " << result.err;
    const Acked acked = acked_from(result.out);
    acked_total.end = std::max(acked_total.end, acked.end);
    acked_total.stored_end = std::max(acked_total.stored_end, acked.stored_end);
    const uint64_t end = check_log(directory, durability, acked_total);
    std::printf("cycle %d (%s): killed after ack of offset end %lu, stored %lu; log end %lu\n",
                cycle, policy, static_cast<unsigned long>(acked.end),
                static_cast<unsigned long>(acked.stored_end), static_cast<unsigned long>(end));
  }
  EXPECT_GT(acked_total.end, 0u) << "no child ever acknowledged anything: the test proves nothing";
  EXPECT_GT(acked_total.stored_end, 0u) << "no store was acknowledged: the test proves nothing";
  std::filesystem::remove_all(root);
}

TEST(CrashAlways, EveryAcknowledgedMessageAndOffsetSurvivesSigkill) {
  crash_cycles(Durability::always);
}

// The default policy: acknowledged once written, never fdatasynced.
TEST(CrashDefault, EveryAcknowledgedMessageAndOffsetSurvivesSigkill) {
  crash_cycles(Durability::write);
}

}  // namespace
}  // namespace hark::storage::test
