// The process the crash test (crash_test.cc) kills: opens the partition log in argv[1] under
// durability `always`, creates the file argv[2] (so the test knows recovery is over), and
// appends batches of 1-4 messages with crash_payload() contents
// forever (bounded), keeping up to 16 batches waiting for their commit. Each commit's end
// offset is written to stdout as 8 bytes (host order) once the log acknowledges it: everything
// below an offset on stdout was acknowledged and must survive a SIGKILL.
// Exit status: 2 bad arguments or open failure, 3 a commit failed, 0 the bound was reached.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/base/clock.h"
#include "io/reactor.h"
#include "storage/partition_log.h"
#include "tests/storage/crash_payload.h"
#include "tests/storage/log_harness.h"

namespace hark::storage::test {
namespace {

class AckWriter final : public CommitCompletion {
 public:
  void committed(Status status) override {
    busy_ = false;
    if (!status.ok()) {
      std::fprintf(stderr, "crash child: commit failed: %u\n",
                   static_cast<uint32_t>(status.error()));
      ::_exit(3);
    }
    const uint64_t end = end_offset_;
    if (::write(STDOUT_FILENO, &end, sizeof(end)) != static_cast<ssize_t>(sizeof(end))) ::_exit(4);
  }
  bool busy_ = false;
  uint64_t end_offset_ = 0;
};

int run(const char* directory, const char* ready) {
  auto reactor = io::Reactor::create(ShardId(0), io::ReactorOptions{});
  if (!reactor.ok()) return 2;
  SystemClock clock;
  LogOptions options;
  options.directory = directory;
  options.durability = Durability::always;
  options.segment_bytes_max = 256 << 10;  // Rolls often: commits cross segment boundaries.
  auto opened = PartitionLog::open(**reactor, clock, options);
  if (!opened.ok()) return 2;
  PartitionLog& log = **opened;
  const int ready_fd = ::open(ready, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (ready_fd < 0) return 2;
  ::close(ready_fd);
  std::array<AckWriter, 16> acks;
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
  if (argc != 3) return 2;
  return hark::storage::test::run(argv[1], argv[2]);
}
