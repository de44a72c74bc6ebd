// The process the crash test (crash_test.cc) kills: opens the partition log in argv[1] under
// durability argv[3] (`always` or `write`) and its consumer offsets file, as the broker does,
// creates the file argv[2] (so the test knows recovery is over), and appends batches of 1-4
// messages with crash_payload() contents forever (bounded), keeping up to 16 batches waiting
// for their commit; each commit stores end - 1 as consumer 1's offset. Each acknowledgement is
// written to stdout as two u64 (host order): [0, commit end offset] when the log acknowledges a
// commit, [1, offset] when the offset store acknowledges a store. Everything acknowledged must
// survive a SIGKILL. Exit status: 2 bad arguments or open failure, 3 a commit or store failed,
// 0 the bound was reached.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/broker/internal/offset_store.h"
#include "hark/io/reactor.h"
#include "hark/storage/partition_log.h"
#include "hark/tests/storage/crash_payload.h"
#include "hark/tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

void report(uint64_t kind, uint64_t value, Status status) {
  if (!status.ok()) {
    std::fprintf(stderr, "crash child: %s failed: %u\n", kind == 0 ? "commit" : "store",
                 static_cast<uint32_t>(status.error()));
    ::_exit(3);
  }
  const std::array<uint64_t, 2> record{kind, value};
  if (::write(STDOUT_FILENO, record.data(), sizeof(record)) != static_cast<ssize_t>(sizeof(record)))
    ::_exit(4);
}

// Acknowledges a commit, then stores its last offset and acknowledges that.
class AckWriter final : public CommitCompletion, public core::OffsetWritten {
 public:
  void committed(Status status) override {
    report(0, end_offset_, status);
    stored_ = end_offset_ - 1;
    offsets_->set(core::ConsumerRef{.kind = core::ConsumerRef::Kind::consumer, .id = 1}, stored_,
                  *this);
  }
  void offset_written(Status status) override {
    report(1, stored_, status);
    busy_ = false;
  }
  bool busy_ = false;
  uint64_t end_offset_ = 0;
  uint64_t stored_ = 0;
  core::internal::OffsetStore* offsets_ = nullptr;
};

int run(const char* directory, const char* ready, Durability durability) {
  auto reactor = io::Reactor::create(ShardId(0), io::ReactorOptions{});
  if (!reactor.ok()) return 2;
  SystemClock clock;
  LogOptions options;
  options.directory = directory;
  options.durability = durability;
  options.segment_bytes_max = 256 << 10;  // Rolls often: commits cross segment boundaries.
  auto opened = PartitionLog::open(**reactor, clock, options);
  if (!opened.ok()) return 2;
  PartitionLog& log = **opened;
  auto offsets = core::internal::OffsetStore::open((*reactor)->ring(),
                                                   std::string(directory) + "/consumer_offsets",
                                                   durability == Durability::always);
  if (!offsets.ok()) return 2;
  const int ready_fd = ::open(ready, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (ready_fd < 0) return 2;
  ::close(ready_fd);
  std::array<AckWriter, 16> acks;
  for (AckWriter& ack : acks) ack.offsets_ = offsets->get();
  uint64_t next = log.next_offset().value();
  for (uint64_t round = 0; round < 50'000'000; round++) {
    for (AckWriter& ack : acks) {
      if (ack.busy_) continue;
      const auto count = static_cast<uint32_t>(1 + (next + round) % 4);
      std::vector<MessageSpec> specs;
      for (uint32_t i = 0; i < count; i++) specs.push_back({.payload = crash_payload(next + i)});
      const Result<AppendResult> appended = log.append(make_batch(specs), count);
      if (!appended.ok()) break;  // Too much unwritten: let the disk catch up.
      if (appended->first.value() != next) return 5;
      next += count;
      ack.busy_ = true;
      ack.end_offset_ = next;
      log.when_committed(Offset(next), ack);
    }
    (*reactor)->run_once(true);
  }
  return 0;
}

}  // namespace
}  // namespace hark::storage::test

int main(int argc, char** argv) {
  using hark::storage::Durability;
  if (argc != 4) return 2;
  const std::string_view durability = argv[3];
  if (durability != "always" && durability != "write") return 2;
  return hark::storage::test::run(argv[1], argv[2],
                                  durability == "always" ? Durability::always : Durability::write);
}
