// PartitionLog throughput on the real disk (RingDisk on io_uring, a temp directory):
//   BM_partition_log_append/<message bytes>   batches of ~64 KiB; MB/s and messages/s
//   BM_partition_log_append_ids/<bytes>/<window>  the same with a fresh client id on every
//                                             message, deduplication window 0 (off) or N
//   BM_partition_log_read_memory/<bytes>      100-message reads by offset from memory chunks
//   BM_partition_log_read_disk/<bytes>        the same after a reopen: ring reads + checksums
// The background writer runs as in a shard: the loop turns the reactor without blocking.
#include <stdlib.h>

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

constexpr size_t batch_bytes_target = 64 << 10;

std::vector<std::byte> batch_of(size_t message_bytes, uint32_t& count) {
  count = static_cast<uint32_t>(std::max<size_t>(1, batch_bytes_target / message_bytes));
  std::vector<std::byte> blob(count * message_bytes, std::byte{'x'});
  for (uint32_t i = 0; i < count; i++) {
    const std::span<std::byte> message = std::span(blob).subspan(i * message_bytes);
    std::memset(message.data(), 0, message_layout::header_bytes);
    store_u32(message, message_layout::payload_length,
              static_cast<uint32_t>(message_bytes - message_layout::header_bytes));
  }
  return blob;
}

// A reactor, a temp partition directory and an open log; removes the directory at the end.
class Bench {
 public:
  explicit Bench(uint32_t dedup_window = 0) {
    options_.dedup_window = dedup_window;
    char pattern[] = "/tmp/hark-bench-XXXXXX";
    root_ = ::mkdtemp(pattern);
    reactor_ = std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{})).value();
    options_.directory = root_ + "/partitions/0";
    options_.segment_bytes_max = 64ull << 20;
    options_.retention_bytes = 512ull << 20;  // Bounds the disk a long run uses.
    reopen();
  }
  ~Bench() {
    log_.reset();
    reactor_.reset();
    std::filesystem::remove_all(root_);
  }
  void reopen() {
    log_.reset();
    log_ = std::move(PartitionLog::open(*reactor_, clock_, options_)).value();
  }
  PartitionLog& log() { return *log_; }
  io::Reactor& reactor() { return *reactor_; }

 private:
  std::string root_;
  SystemClock& clock_ = SystemClock::instance();
  std::unique_ptr<io::Reactor> reactor_;
  LogOptions options_;
  std::unique_ptr<PartitionLog> log_;
};

struct CountingRead final : ReadCompletion {
  void read_done(Result<ReadView> view) override {
    done = true;
    count = view.ok() ? view->count() : 0;
    bytes = view.ok() ? view->bytes().size() : 0;
  }
  bool done = false;
  uint32_t count = 0;
  size_t bytes = 0;
};

// NOLINTNEXTLINE(readability-identifier-naming): Google Benchmark's BM_ names (docs/style.md §9).
void BM_partition_log_append(benchmark::State& state) {
  Bench bench;
  uint32_t count = 0;
  const std::vector<std::byte> batch = batch_of(static_cast<size_t>(state.range(0)), count);
  for (auto _ : state) {
    Result<AppendResult> appended = bench.log().append(batch, count);
    while (!appended.ok()) {  // The disk fell behind: let the writer catch up, as a shard would.
      bench.reactor().run_once(true);
      appended = bench.log().append(batch, count);
    }
    bench.reactor().run_once(false);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * batch.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * count));
}

// NOLINTNEXTLINE(readability-identifier-naming): Google Benchmark's BM_ names (docs/style.md §9).
void BM_partition_log_append_ids(benchmark::State& state) {
  Bench bench(static_cast<uint32_t>(state.range(1)));
  const size_t message_bytes = static_cast<size_t>(state.range(0));
  uint32_t count = 0;
  std::vector<std::byte> batch = batch_of(message_bytes, count);
  uint64_t next_id = 1;
  for (auto _ : state) {
    // Every message a new id, as a producer that sends ids (never a duplicate: the window's
    // full cost, a lookup, a claim and an add per message).
    for (uint32_t i = 0; i < count; i++) {
      store_u64(std::span(batch).subspan(i * message_bytes), message_layout::id, next_id++);
    }
    Result<AppendResult> appended = bench.log().append(batch, count);
    while (!appended.ok()) {
      bench.reactor().run_once(true);
      appended = bench.log().append(batch, count);
    }
    bench.reactor().run_once(false);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * batch.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * count));
}

void fill(Bench& bench, size_t message_bytes, uint64_t total_bytes) {
  uint32_t count = 0;
  const std::vector<std::byte> batch = batch_of(message_bytes, count);
  for (uint64_t bytes = 0; bytes < total_bytes; bytes += batch.size()) {
    (void)bench.log().append(batch, count);
    bench.reactor().run_once(false);
  }
  (void)bench.log().flush(false);
}

void read_loop(benchmark::State& state, Bench& bench) {
  uint64_t offset = bench.log().first_offset().value();
  uint64_t messages = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    CountingRead read;
    bench.log().read(Offset(offset), 100, 1 << 20, read);
    while (!read.done) bench.reactor().run_once(true);
    messages += read.count;
    bytes += read.bytes;
    offset += read.count;
    if (read.count == 0 || offset >= bench.log().next_offset().value()) {
      offset = bench.log().first_offset().value();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(messages));
}

// NOLINTNEXTLINE(readability-identifier-naming): Google Benchmark's BM_ names (docs/style.md §9).
void BM_partition_log_read_memory(benchmark::State& state) {
  Bench bench;
  fill(bench, static_cast<size_t>(state.range(0)), 32ull << 20);  // Fits memory_bytes_max.
  read_loop(state, bench);
}

// NOLINTNEXTLINE(readability-identifier-naming): Google Benchmark's BM_ names (docs/style.md §9).
void BM_partition_log_read_disk(benchmark::State& state) {
  Bench bench;
  fill(bench, static_cast<size_t>(state.range(0)), 32ull << 20);
  bench.reopen();  // Everything is now only on disk (page cache): ring reads.
  read_loop(state, bench);
}

BENCHMARK(BM_partition_log_append)->Arg(100)->Arg(1000)->Arg(10000);
BENCHMARK(BM_partition_log_append_ids)->ArgsProduct({{100, 1000}, {0, 1024}});
BENCHMARK(BM_partition_log_read_memory)->Arg(100)->Arg(1000)->Arg(10000);
BENCHMARK(BM_partition_log_read_disk)->Arg(100)->Arg(1000)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
