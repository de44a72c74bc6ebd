// Covers durability `always` on the in-memory disk (issue #8, issue 20): a batch commits —
// becomes readable, advances next_offset() and answers its producer — only when the durable
// write covering it completed, and that write goes into a region pre-written (zeros, synced)
// before it; appends arriving while one is in flight share the next (group commit, counted at
// the disk seam); a failed write fails the producers it covers and rolls their batches back
// (memory and files), acknowledged data stays; a power loss keeps every ack, also when it tears
// the durable write that rewrites the tail block; a restart in another durability mode reads
// the same segments.
#include <errno.h>

#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"
#include "hark/tests/support/prng.h"

namespace hark::storage::test {
namespace {

using namespace std::chrono_literals;

LogOptions always() {
  LogOptions options;
  options.durability = Durability::always;
  return options;
}

struct ListenerCollector final : CommitListener {
  void commit_advanced(Offset next_offset) override { advances.push_back(next_offset); }
  std::vector<Offset> advances;
};

// Appends `count` messages and waits for their commit through `done`.
void append_waiting(PartitionLog& log, uint32_t count, const std::string& prefix,
                    CommitCollector& done, size_t padding = 0) {
  const Result<AppendResult> appended = log.append(make_batch(count, prefix, padding), count);
  ASSERT_TRUE(appended.ok());
  log.when_committed(appended->first + count, done);
}

// Drives the disk until a durable write is queued (the pre-write before it completed).
void drive_until_durable_write(LogHarness& harness, uint64_t durable_writes) {
  while (harness.disk.durable_writes_count() < durable_writes && harness.disk.pending() > 0) {
    harness.disk.drive();
  }
  ASSERT_EQ(harness.disk.durable_writes_count(), durable_writes);
}

TEST(DurabilityAlways, BatchCommitsOnlyAfterItsDurableWriteIntoAPreWrittenRegion) {
  LogHarness harness(always());
  PartitionLog& log = harness.reopen();
  ListenerCollector listener;
  log.set_commit_listener(&listener);
  CommitCollector done;
  append_waiting(log, 3, "a", done);
  EXPECT_EQ(log.next_offset(), Offset(0));
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(harness.read(Offset(0)).count, 0u);  // Never served before the commit.
  EXPECT_EQ(done.calls, 0);

  // First the .log is pre-written: zeros, then their fdatasync, 1 MiB past the first block.
  drive_until_durable_write(harness, 1);
  EXPECT_EQ(done.calls, 0);
  EXPECT_EQ(harness.read(Offset(0)).count, 0u);
  EXPECT_EQ(harness.disk.datasyncs_count(), 1u);
  const std::string log_path =
      harness.options.directory + "/" + segment_file_name(Offset(0), ".log");
  EXPECT_EQ(harness.disk.bytes(log_path).size(), (1u << 20) + direct_block_bytes);
  harness.disk.drive();  // The durable write (one operation): the commit.
  EXPECT_EQ(harness.disk.datasyncs_count(), 1u);
  EXPECT_EQ(done.calls, 1);
  EXPECT_EQ(done.error, Error::ok);
  EXPECT_EQ(log.next_offset(), Offset(3));
  EXPECT_EQ(listener.advances, std::vector<Offset>{Offset(3)});
  EXPECT_EQ(harness.read(Offset(0)).count, 3u);
  log.set_commit_listener(nullptr);
}

TEST(DurabilityAlways, AppendsDuringADurableWriteShareTheNextOne) {
  LogHarness harness(always());
  PartitionLog& log = harness.reopen();
  constexpr int producers = 16;
  std::vector<CommitCollector> done(producers);
  append_waiting(log, 1, "first", done[0]);
  drive_until_durable_write(harness, 1);  // Its durable write is now in flight.
  for (int i = 1; i < producers; i++) append_waiting(log, 1, "p" + std::to_string(i), done[i]);
  harness.disk.drive_all();
  for (const CommitCollector& collector : done) {
    EXPECT_EQ(collector.calls, 1);
    EXPECT_EQ(collector.error, Error::ok);
  }
  EXPECT_EQ(log.next_offset(), Offset(producers));
  // One durable write for the first, one for the 15 that arrived during it; one separate
  // fdatasync, of the pre-written zeros (none for the index, which is synced when the segment
  // seals or on an explicit flush).
  EXPECT_EQ(harness.disk.durable_writes_count(), 2u);
  EXPECT_EQ(harness.disk.datasyncs_count(), 1u);
}

TEST(DurabilityAlways, FailedWriteFailsItsProducersAndRollsBack) {
  LogHarness harness(always());
  PartitionLog& log = harness.reopen();
  CommitCollector acked;
  append_waiting(log, 2, "acked", acked);
  harness.disk.drive_all();
  ASSERT_EQ(acked.error, Error::ok);

  harness.disk.fail_writes(ENOSPC);
  CommitCollector first;
  CommitCollector second;
  append_waiting(log, 2, "lost", first);
  append_waiting(log, 1, "lost", second);
  harness.disk.drive_all();
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(first.error, Error::cannot_save_messages_to_segment);
  EXPECT_EQ(second.error, Error::cannot_save_messages_to_segment);
  EXPECT_EQ(log.next_offset(), Offset(2));
  EXPECT_EQ(log.unwritten_bytes(), 0u);
  EXPECT_EQ(harness.read(Offset(0)).count, 2u);
  EXPECT_EQ(harness.read(Offset(2)).count, 0u);
  // Rejected while the failure stands, accepted again after the retry interval.
  EXPECT_EQ(log.append(make_batch(1, "no"), 1).error(), Error::cannot_save_messages_to_segment);
  harness.disk.fail_writes(0);
  harness.advance(harness.options.flush_interval + 1ms);
  harness.disk.drive_all();
  CommitCollector again;
  append_waiting(log, 1, "again", again);
  harness.disk.drive_all();
  EXPECT_EQ(again.error, Error::ok);
  const ReadCollector read = harness.read(Offset(0));
  ASSERT_EQ(read.count, 3u);
  EXPECT_EQ(read.messages[2].payload, "again0");  // Offset 2 went to the retried batch.
  harness.close_log();
  EXPECT_EQ(harness.reopen().next_offset(), Offset(3));
}

// A durable write carries its sync: a device that fails syncs fails it.
TEST(DurabilityAlways, FailedSyncFailsItsProducersAndNothingUnackedSurvivesAReopen) {
  LogHarness harness(always());
  PartitionLog& log = harness.reopen();
  CommitCollector acked;
  append_waiting(log, 1, "acked", acked);
  harness.disk.drive_all();
  harness.disk.fail_syncs(EIO);
  CommitCollector failed;
  append_waiting(log, 4, "unsynced", failed);
  harness.disk.drive_all();
  EXPECT_EQ(failed.error, Error::cannot_save_messages_to_segment);
  EXPECT_EQ(log.next_offset(), Offset(1));
  harness.disk.fail_syncs(0);
  harness.close_log();
  PartitionLog& reopened = harness.reopen();
  EXPECT_EQ(reopened.next_offset(), Offset(1));  // The written-but-failed batch was cut.
  EXPECT_EQ(harness.read(Offset(0)).messages.at(0).payload, "acked0");
}

TEST(DurabilityAlways, FailureAfterARollDropsTheUncommittedSegment) {
  LogOptions options = always();
  options.segment_bytes_max = 300;
  LogHarness harness(options);
  PartitionLog& log = harness.reopen();
  CommitCollector acked;
  append_waiting(log, 2, "acked", acked, 100);
  harness.disk.drive_all();
  ASSERT_EQ(acked.error, Error::ok);
  ASSERT_EQ(log.segments_count(), 1u);
  harness.disk.fail_writes(ENOSPC);
  CommitCollector failed;
  append_waiting(log, 2, "rolls", failed, 100);
  ASSERT_EQ(log.segments_count(), 2u);
  harness.disk.drive_all();
  EXPECT_EQ(failed.error, Error::cannot_save_messages_to_segment);
  EXPECT_EQ(log.segments_count(), 1u);
  EXPECT_EQ(log.next_offset(), Offset(2));
  harness.disk.fail_writes(0);
  harness.advance(harness.options.flush_interval + 1ms);
  harness.disk.drive_all();
  CommitCollector again;
  append_waiting(log, 2, "again", again, 100);
  harness.disk.drive_all();
  EXPECT_EQ(again.error, Error::ok);
  EXPECT_EQ(log.segments_count(), 2u);
  harness.close_log();
  EXPECT_EQ(harness.reopen().next_offset(), Offset(4));
}

TEST(DurabilityAlways, PowerLossKeepsEveryAcknowledgedMessage) {
  LogHarness harness(always());
  hark::test::Prng prng(7);
  for (int round = 0; round < 50; round++) {
    PartitionLog& log = harness.reopen();
    const Offset acked_before = log.next_offset();
    std::vector<CommitCollector> done(8);
    for (size_t i = 0; i < done.size(); i++) {
      append_waiting(log, 1 + static_cast<uint32_t>(prng.below(3)), "r", done[i]);
      for (uint64_t k = prng.below(3); k > 0 && harness.disk.pending() > 0; k--) {
        harness.disk.drive();
      }
    }
    Offset acked = acked_before;
    if (log.next_offset() > acked) acked = log.next_offset();
    harness.disk.crash([&](uint64_t bound) { return prng.below(bound + 1); });
    harness.close_log();
    harness.disk.restart();
    EXPECT_GE(harness.reopen().next_offset(), acked) << "round " << round;
    harness.close_log();
  }
}

// Zeros past what a commit needs are a reserve: a disk that refuses them (full, a file size
// limit) fails no commit, and durable writes go on pre-writing just their own blocks.
TEST(DurabilityAlways, ARefusedReserveOfZerosFailsNoCommit) {
  LogHarness harness(always());
  PartitionLog& log = harness.reopen();
  CommitCollector done;
  append_waiting(log, 1, "a", done);
  harness.disk.drive();  // The zeros the write needs: its first block.
  harness.disk.fail_next_write(ENOSPC);
  harness.disk.drive();  // The reserve after it: refused.
  harness.disk.drive_all();
  EXPECT_EQ(done.error, Error::ok);
  EXPECT_EQ(log.next_offset(), Offset(1));
  const std::string log_path =
      harness.options.directory + "/" + segment_file_name(Offset(0), ".log");
  EXPECT_EQ(harness.disk.bytes(log_path).size(), direct_block_bytes);
  CommitCollector next;
  append_waiting(log, 1, "b", next, 5000);  // Past the first block: its own zeros first.
  harness.disk.drive_all();
  EXPECT_EQ(next.error, Error::ok);
  EXPECT_EQ(harness.read(Offset(0)).count, 2u);
}

// The durable write that rewrites the partial tail block carries the acknowledged bytes of that
// block again. A SIGKILL cannot tear a write, a power loss can: here the device writes only a
// prefix of it (cut at every kind of place) and the acknowledged batch must survive whole.
TEST(DurabilityAlways, TornRewriteOfTheTailBlockKeepsEveryAcknowledgedBatch) {
  for (const uint64_t cut_per_mille : {0, 1, 250, 500, 999}) {
    LogHarness harness(always());
    PartitionLog& log = harness.reopen();
    CommitCollector acked;
    append_waiting(log, 2, "acked", acked, 100);
    harness.disk.drive_all();
    ASSERT_EQ(acked.error, Error::ok);
    CommitCollector torn;
    append_waiting(log, 3, "torn", torn, 100);
    ASSERT_EQ(harness.disk.pending(), 1u);  // Its durable write, from the acked batch's block.
    harness.disk.crash([&](uint64_t bound) { return bound * cut_per_mille / 1000; });
    EXPECT_EQ(harness.disk.torn_writes_count(), 1u);
    harness.close_log();
    EXPECT_EQ(torn.error, Error::cannot_save_messages_to_segment);
    harness.disk.restart();
    PartitionLog& reopened = harness.reopen();
    // The torn batch was never acknowledged: it is gone, or whole if the prefix covered it.
    const Offset end = reopened.next_offset();
    EXPECT_TRUE(end == Offset(2) || end == Offset(5)) << "cut at " << cut_per_mille << "/1000";
    const ReadCollector read = harness.read(Offset(0));
    ASSERT_EQ(read.count, end.value());
    EXPECT_EQ(read.messages[0].payload, "acked0" + std::string(100, '.'));
    EXPECT_EQ(read.messages[1].payload, "acked1" + std::string(100, '.'));
    // Appends go on after it, and commit.
    CommitCollector again;
    append_waiting(reopened, 1, "again", again);
    harness.disk.drive_all();
    EXPECT_EQ(again.error, Error::ok);
    EXPECT_EQ(reopened.next_offset(), end + 1);
  }
}

std::vector<std::string> payloads_from(LogHarness& harness, Offset from) {
  std::vector<std::string> out;
  while (from < harness.log().next_offset()) {
    const ReadCollector read = harness.read(from, 100);
    if (read.count == 0) break;
    for (const ReadMessage& message : read.messages) out.push_back(message.payload);
    from = read.last + 1;
  }
  return out;
}

// One on-disk format for every mode: segments written under one durability are read the same
// under another after a restart, and appends continue there.
TEST(DurabilityAlways, ARestartInAnotherModeReadsTheSameSegments) {
  const Durability modes[] = {Durability::always, Durability::write,    Durability::memory,
                              Durability::always, Durability::interval, Durability::always};
  LogOptions options = always();
  options.segment_bytes_max = 5000;  // Several segments, sealed ones with pre-written zeros.
  LogHarness harness(options);
  std::vector<std::string> expected;
  for (size_t round = 0; round < std::size(modes); round++) {
    harness.options.durability = modes[round];
    PartitionLog& log = harness.reopen();
    ASSERT_EQ(log.next_offset(), Offset(expected.size())) << "round " << round;
    ASSERT_EQ(payloads_from(harness, Offset(0)), expected) << "round " << round;
    for (int i = 0; i < 7; i++) {
      const std::string prefix = "r" + std::to_string(round) + "-" + std::to_string(i) + "-";
      CommitCollector done;
      append_waiting(log, 5, prefix, done, 150);
      harness.disk.drive_all();
      for (int k = 0; k < 5; k++)
        expected.push_back(prefix + std::to_string(k) + std::string(150, '.'));
    }
    harness.close_log();
  }
  size_t segments = 0;
  const Result<std::vector<std::string>> names = harness.disk.list(harness.options.directory);
  ASSERT_TRUE(names.ok());
  for (const std::string& name : *names) {
    segments += name.ends_with(".log") ? 1 : 0;
  }
  EXPECT_GT(segments, 2u);
}

}  // namespace
}  // namespace hark::storage::test
