// The commit path of a replicated PartitionLog (docs/cluster.md §Replication, Built: the core
// side), CPU only: durability `memory`, so a log's own write counts at append and what is timed
// is append → durable end → quorum_end() → commit point → completion, on one thread.
//   BM_replication_commit/1   factor 1: append one 100-byte message, its completion fires
//                             (the code path every partition takes; nothing replicated)
//   BM_replication_commit/3   factor 3 with two in-process followers: the same append, then
//                             each follower reads the leader to its appended end, stores the
//                             bytes (append_stored) and reports its durable end; the completion
//                             fires at the first report (a majority)
// Factor 1 uses only the API that predates replication, so the same file builds against the
// code before it for an A/B (docs/bench.md §Replication commit).
#include <stdlib.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "hark/core/base/clock.h"
#include "hark/core/base/message_layout.h"
#include "hark/io/reactor.h"
#include "hark/storage/partition_log.h"

namespace {

using namespace hark;
using namespace hark::storage;

std::vector<std::byte> one_message() {
  std::vector<std::byte> blob(100, std::byte{'x'});
  std::memset(blob.data(), 0, message_layout::header_bytes);
  store_u32(blob, message_layout::payload_length,
            static_cast<uint32_t>(blob.size() - message_layout::header_bytes));
  return blob;
}

struct Committed final : CommitCompletion {
  void committed(Status status) override { ok = status.ok(); }
  bool ok = false;
};

struct Fetched final : ReadCompletion {
  void read_done(Result<ReadView> read) override { view = std::move(read).value(); }
  ReadView view;
};

// A reactor and `logs` logs in a temp directory (log 0 leads); removes it at the end.
class Bench {
 public:
  explicit Bench(size_t logs) {
    char pattern[] = "/tmp/hark-bench-XXXXXX";
    root_ = ::mkdtemp(pattern);
    reactor_ = std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{})).value();
    for (size_t i = 0; i < logs; i++) {
      LogOptions options;
      options.durability = Durability::memory;
      options.directory = root_ + "/partitions/" + std::to_string(i);
      options.segment_bytes_max = 64ull << 20;
      options.retention_bytes = 256ull << 20;  // Bounds the disk a long run uses.
      logs_.push_back(std::move(PartitionLog::open(*reactor_, clock_, options)).value());
    }
  }
  ~Bench() {
    logs_.clear();
    reactor_.reset();
    std::filesystem::remove_all(root_);
  }
  PartitionLog& log(size_t i) { return *logs_[i]; }
  io::Reactor& reactor() { return *reactor_; }

 private:
  std::string root_;
  SystemClock& clock_ = SystemClock::instance();
  std::unique_ptr<io::Reactor> reactor_;
  std::vector<std::unique_ptr<PartitionLog>> logs_;
};

// Appends one message, waiting for the writer when it fell behind (as a shard would).
Offset append(Bench& bench, const std::vector<std::byte>& message) {
  Result<AppendResult> appended = bench.log(0).append(message, 1);
  while (!appended.ok()) {
    bench.reactor().run_once(true);
    appended = bench.log(0).append(message, 1);
  }
  return appended->first + 1;
}

#ifdef HARK_BENCH_BEFORE_REPLICATION
void replicate(Bench& /*bench*/, size_t /*followers*/) {}
#else
// Each follower fetches to the leader's appended end, stores, and reports its durable end.
void replicate(Bench& bench, size_t followers) {
  PartitionLog& leader = bench.log(0);
  for (size_t i = 1; i <= followers; i++) {
    PartitionLog& follower = bench.log(i);
    Fetched fetched;
    leader.read(follower.appended_end(), 100, 1 << 20, fetched, ReadBound::appended);
    if (!fetched.view.empty()) {
      while (!follower.append_stored(fetched.view.bytes(), fetched.view.count()).ok()) {
        bench.reactor().run_once(true);
      }
    }
    (void)leader.report_durable(static_cast<uint32_t>(i), follower.durable_end());
  }
}
#endif

// NOLINTNEXTLINE(readability-identifier-naming): Google Benchmark's BM_ names (docs/style.md §9).
void BM_replication_commit(benchmark::State& state) {
  const auto factor = static_cast<size_t>(state.range(0));
  Bench bench(factor);
#ifndef HARK_BENCH_BEFORE_REPLICATION
  if (!bench.log(0).lead(static_cast<uint32_t>(factor)).ok()) state.SkipWithError("lead");
  for (size_t i = 1; i < factor; i++) bench.log(i).follow();
#endif
  const std::vector<std::byte> message = one_message();
  for (auto _ : state) {
    Committed done;
    bench.log(0).when_committed(append(bench, message), done);
    replicate(bench, factor - 1);
    if (!done.ok) state.SkipWithError("not committed");
    bench.reactor().run_once(false);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
#ifdef HARK_BENCH_BEFORE_REPLICATION
BENCHMARK(BM_replication_commit)->Arg(1);
#else
BENCHMARK(BM_replication_commit)->Arg(1)->Arg(3);
#endif

}  // namespace

BENCHMARK_MAIN();
