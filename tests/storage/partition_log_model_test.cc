// A model-based property test: random appends, reads, timer runs, disk progress, purges,
// delete-segments, clean close+reopen, write and sync faults and simulated crashes against a
// std::vector of appended payloads, under every durability policy. A crash is a power loss
// (each file cut at a random byte after its last sync, and under `always` the durable write in
// flight torn: a random prefix of it reaches the file, as a device may leave the rewritten
// O_DIRECT tail block half written) or a process death (every completed write stays, as the
// page cache keeps it); unwritten data is lost either way. Checked after
// every step: every served message is whole, has a valid checksum, equals the model's and is
// committed; next_offset and first_offset agree; after a crash the log is a prefix of what was
// appended and holds every acknowledged message — after a power loss under `always`, after a
// process death under every policy but `memory` (issue #8); a failed commit rolls back exactly
// the batches whose producers heard the error. Replay a failure with the seed rapidcheck prints.
#include <errno.h>
#include <rapidcheck.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <tuple>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hark/storage/partition_log.h"
#include "hark/tests/storage/log_harness.h"
#include "hark/tests/support/prng.h"

namespace hark::storage::test {
namespace {

using namespace std::chrono_literals;

// A batch whose producer waits for its commit.
struct PendingCommit final : CommitCompletion {
  void committed(Status status) override {
    calls++;
    error = status.ok() ? Error::ok : status.error();
  }
  uint64_t end = 0;
  int calls = 0;
  Error error = Error::ok;
};

// The log as the test believes it: appended payloads by offset, from `first`; the first
// `committed - first` of them are committed (all of them under `memory`); producers heard of
// the commit up to `acked`.
struct Model {
  uint64_t first = 0;
  uint64_t committed = 0;
  uint64_t acked = 0;
  std::deque<std::unique_ptr<PendingCommit>> pending;
  std::vector<std::string> payloads;   // payloads[i] is offset first + i.
  std::vector<UnixMicros> timestamps;  // timestamps[i] likewise.
  uint64_t end() const { return first + payloads.size(); }
  void drop_front(uint64_t new_first) {
    const auto count = static_cast<ptrdiff_t>(new_first - first);
    payloads.erase(payloads.begin(), payloads.begin() + count);
    timestamps.erase(timestamps.begin(), timestamps.begin() + count);
    first = new_first;
  }
  void truncate(uint64_t new_end) {
    payloads.resize(new_end - first);
    timestamps.resize(new_end - first);
  }
};

LogOptions random_options() {
  LogOptions options;
  options.segment_bytes_max = *rc::gen::inRange<uint64_t>(300, 3000);
  options.chunk_bytes = *rc::gen::inRange<uint64_t>(128, 2048);
  options.memory_bytes_max = *rc::gen::inRange<uint64_t>(256, 8192);
  options.flush_bytes = *rc::gen::inRange<uint64_t>(1, 2000);
  options.durability = *rc::gen::element(Durability::memory, Durability::write,
                                         Durability::interval, Durability::always);
  options.sync_interval = 300ms;
  return options;
}

void check_read_result(const ReadCollector& read, const Model& model, uint64_t start,
                       uint32_t count, uint64_t bytes_max) {
  RC_ASSERT(read.error == Error::ok);
  const uint64_t expected_first = std::max(start, model.first);
  if (expected_first >= model.committed) {
    RC_ASSERT(read.count == 0u);
    return;
  }
  RC_ASSERT(read.count >= 1u);
  RC_ASSERT(read.count <= count);
  RC_ASSERT(read.messages.size() == read.count);
  RC_ASSERT(read.first == Offset(expected_first));
  if (read.count > 1) RC_ASSERT(read.held.bytes().size() <= bytes_max);
  for (size_t i = 0; i < read.messages.size(); i++) {
    const ReadMessage& message = read.messages[i];
    RC_ASSERT(message.checksum_ok);
    RC_ASSERT(message.offset == expected_first + i);
    RC_ASSERT(message.offset < model.committed);
    RC_ASSERT(message.payload == model.payloads[message.offset - model.first]);
  }
}

void reconcile(LogHarness& harness, Model& model);

// A read from disk drives the disk, which may commit more (`always`): what it may return is
// decided when it starts, so the model is brought up to date before and after.
void check_read(LogHarness& harness, Model& model, uint64_t start, uint32_t count,
                uint64_t bytes_max) {
  reconcile(harness, model);
  const ReadCollector read = harness.read(Offset(start), count, bytes_max);
  check_read_result(read, model, start, count, bytes_max);
  reconcile(harness, model);
}

void append(LogHarness& harness, Model& model, uint32_t count, size_t padding, uint64_t& serial) {
  std::vector<MessageSpec> specs;
  for (uint32_t i = 0; i < count; i++) {
    specs.push_back({.payload = "m" + std::to_string(serial++) + std::string(padding, '.')});
  }
  const Result<AppendResult> appended = harness.log().append(make_batch(specs), count);
  if (!appended.ok()) return;  // Too much unwritten: not committed, not in the model.
  RC_ASSERT(appended->first == Offset(model.end()));
  for (const MessageSpec& spec : specs) {
    model.payloads.push_back(spec.payload);
    model.timestamps.push_back(appended->timestamp);
  }
  auto waiting = std::make_unique<PendingCommit>();
  waiting->end = model.end();
  harness.log().when_committed(Offset(waiting->end), *waiting);
  if (waiting->calls == 0) {
    RC_ASSERT(harness.options.durability != Durability::memory);
    model.pending.push_back(std::move(waiting));
  } else {
    RC_ASSERT(waiting->error == Error::ok);
    model.acked = waiting->end;
  }
}

// Takes in what the producers heard since the last step and checks the commit point: acks
// follow it, failures roll back exactly the batches they name.
void reconcile(LogHarness& harness, Model& model) {
  const uint64_t next = harness.log().next_offset().value();
  bool rolled_back = false;
  while (!model.pending.empty() && model.pending.front()->calls > 0) {
    const PendingCommit& done = *model.pending.front();
    RC_ASSERT(done.calls == 1);
    if (done.error == Error::ok) {
      RC_ASSERT(!rolled_back);
      RC_ASSERT(done.end <= next);
      model.acked = done.end;
    } else {
      RC_ASSERT(done.error == Error::cannot_save_messages_to_segment ||
                done.error == Error::cannot_sync_file);
      RC_ASSERT(done.end > next);
      rolled_back = true;
    }
    model.pending.pop_front();
  }
  if (rolled_back) {
    RC_ASSERT(model.pending.empty());  // A failure fails every batch after it too.
    model.truncate(next);
  }
  for (const auto& waiting : model.pending) RC_ASSERT(waiting->end > next);
  RC_ASSERT(next >= model.acked);  // A crash that may lose acked messages lowers `acked` first.
  RC_ASSERT(next <= model.end());
  if (harness.options.durability == Durability::memory) RC_ASSERT(next == model.end());
  model.committed = next;
}

// The timestamp strategy: the first offset stamped at or after `timestamp`.
void check_timestamp_lookup(LogHarness& harness, const Model& model, UnixMicros timestamp) {
  const auto it = std::lower_bound(model.timestamps.begin(), model.timestamps.end(), timestamp);
  const uint64_t expected = model.first + static_cast<uint64_t>(it - model.timestamps.begin());
  RC_ASSERT(*harness.log().offset_for_timestamp(timestamp) == Offset(expected));
}

// A crash: a power loss (unsynced bytes cut at random) or a process death (written bytes
// kept), the log dropped, the disk restarted, the log reopened. What survives must be a prefix
// of the model and hold every acked message: under `always` after either, outside `memory`
// after a process death.
void crash(LogHarness& harness, Model& model, uint64_t seed, bool power_loss) {
  hark::test::Prng prng(seed);
  harness.disk.crash([&](uint64_t bound) { return power_loss ? prng.below(bound + 1) : bound; });
  harness.close_log();
  model.pending.clear();  // The process died: those producers never heard anything.
  harness.disk.restart();
  harness.disk.fail_syncs(0);
  PartitionLog& log = harness.reopen();
  RC_ASSERT(log.next_offset().value() <= model.end());
  const Durability durability = harness.options.durability;
  if (durability == Durability::always || (!power_loss && durability != Durability::memory)) {
    RC_ASSERT(log.next_offset().value() >= model.acked);
  }
  if (log.next_offset().value() < model.first) {
    model = Model{.first = log.next_offset().value()};  // Everything retained was lost.
  }
  model.truncate(log.next_offset().value());
  model.acked = std::min(model.acked, log.next_offset().value());
  RC_ASSERT(log.first_offset() == Offset(model.payloads.empty() ? model.end() : model.first));
}

void step(LogHarness& harness, Model& model, const std::tuple<int, int, int>& op,
          uint64_t& serial) {
  const auto [kind, a, b] = op;
  PartitionLog& log = harness.log();
  switch (kind) {
    case 0:
    case 1:
    case 2:
      append(harness, model, static_cast<uint32_t>(1 + a % 5), static_cast<size_t>(b), serial);
      break;
    case 3:
      check_read(harness, model, static_cast<uint64_t>(a) % (model.end() + 3),
                 static_cast<uint32_t>(1 + b % 12), static_cast<uint64_t>(b) * 7);
      break;
    case 4: harness.advance(std::chrono::milliseconds(a)); break;
    case 5:
      for (int i = 0; i < a % 4 && harness.disk.pending() > 0; i++) harness.disk.drive();
      break;
    case 6:
      if (a % 5 == 0) {
        RC_ASSERT(log.purge().ok());
        for (const auto& waiting : model.pending) RC_ASSERT(waiting->error == Error::ok);
        model = Model{};
      } else {
        RC_ASSERT(log.delete_segments(static_cast<uint32_t>(a % 3)).ok());
        model.drop_front(std::min(log.first_offset().value(), model.end()));
      }
      break;
    case 7:  // A clean restart: the disk works again, failed writes are retried first.
      harness.disk.fail_syncs(0);
      harness.disk.fail_next_write(0);
      harness.advance(harness.options.flush_interval + 1ms);
      harness.disk.drive_all();
      harness.reopen();
      break;
    case 9:  // The first, last-N and timestamp strategies.
      check_read(harness, model, log.first_offset().value(), static_cast<uint32_t>(1 + b % 12),
                 1 << 20);
      check_read(harness, model, model.end() - std::min<uint64_t>(model.payloads.size(), b % 7),
                 static_cast<uint32_t>(1 + b % 7), 1 << 20);
      check_timestamp_lookup(harness, model,
                             model.timestamps.empty()
                                 ? harness.clock.realtime_now()
                                 : model.timestamps.front() + static_cast<uint64_t>(a) * 1000);
      break;
    case 8:
      crash(harness, model, static_cast<uint64_t>(a) * 7919 + static_cast<uint64_t>(b), a % 2 == 0);
      break;
    case 10:  // Disk faults: they fail commits, except under `memory` where they are retried.
      if (a % 3 == 0) harness.disk.fail_next_write(a % 2 == 0 ? ENOSPC : EIO);
      if (a % 3 == 1) harness.disk.fail_syncs(EIO);
      if (a % 3 == 2) harness.disk.fail_syncs(0);
      break;
    default: break;
  }
  reconcile(harness, model);
}

RC_GTEST_PROP(PartitionLogModel, ServesOnlyCommittedMessagesAndCrashesLeaveAPrefix, ()) {
  Model model;  // Outlives the log: closing it may complete the model's pending commits.
  LogHarness harness(random_options());
  harness.reopen();
  uint64_t serial = 0;
  const auto ops = *rc::gen::container<std::vector<std::tuple<int, int, int>>>(
      rc::gen::tuple(rc::gen::inRange(0, 11), rc::gen::inRange(0, 1000), rc::gen::inRange(0, 300)));
  for (const auto& op : ops) step(harness, model, op, serial);
  // Finally every committed message is served, in order.
  harness.disk.fail_syncs(0);
  harness.disk.drive_all();
  reconcile(harness, model);
  for (uint64_t offset = model.first; offset < model.committed; offset++) {
    check_read(harness, model, offset, 1, 1);
  }
}

}  // namespace
}  // namespace hark::storage::test
