// Commit latency and throughput of a partition log on the real disk (RingDisk on io_uring, a
// directory on the disk under test), closed loop: each producer appends one batch, waits for
// its commit (CommitCompletion), appends the next.
//   always/1    durability always, 1 producer: every commit pays one write + one fdatasync
//   always/16   16 producers on the same partition: batches arriving during an fdatasync
//               share the next one (group commit); "batches per fdatasync" shows it
//   always/16 large  16 producers, 64 KiB batches: throughput with syncs
//   write/1     durability write (the default), 1 producer: every commit pays one write
//   write/16 large   16 producers, 64 KiB batches: commits after the write, no syncs
//   memory/16 large  the same acknowledged at append: the ceiling without waiting for I/O
// Latency = commit completion - append; printed as p50/p90/p99. fdatasyncs are counted at
// the Disk seam (a counting wrapper around RingDisk).
// Usage: hark_commit_bench [--smoke] [--seconds S] [--dir PATH]
//   (dir: where the temporary partition goes, default the working directory: /tmp may be a
//   tmpfs, where fdatasync costs nothing; smoke: 0.2 s per scenario for the bench-smoke label)
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hark/bench/support/latency.h"
#include "hark/core/base/clock.h"
#include "hark/core/base/message_layout.h"
#include "hark/io/reactor.h"
#include "hark/storage/partition_log.h"
#include "hark/storage/ring_disk.h"

namespace hark::bench {
namespace {

using namespace hark::storage;
using SteadyClock = std::chrono::steady_clock;

// Counts the fdatasyncs and written bytes that reach the real disk.
struct Counters {
  uint64_t datasyncs = 0;
  uint64_t written_bytes = 0;
};

class CountingFile final : public DiskFile {
 public:
  CountingFile(std::unique_ptr<DiskFile> inner, Counters& counters)
      : inner_(std::move(inner)), counters_(counters) {}
  void write(std::span<const std::byte> bytes, uint64_t position, io::Completion& done) override {
    counters_.written_bytes += bytes.size();
    inner_->write(bytes, position, done);
  }
  void read(std::span<std::byte> bytes, uint64_t position, io::Completion& done) override {
    inner_->read(bytes, position, done);
  }
  void datasync(io::Completion& done) override {
    counters_.datasyncs++;
    inner_->datasync(done);
  }
  // A durable write is the commit's write and its sync in one operation: counted as both.
  void write_durable(std::span<const std::byte> bytes, uint64_t position,
                     io::Completion& done) override {
    counters_.written_bytes += bytes.size();
    counters_.datasyncs++;
    inner_->write_durable(bytes, position, done);
  }
  Status open_direct() override { return inner_->open_direct(); }
  Result<uint64_t> size() override { return inner_->size(); }
  Status read_now(std::span<std::byte> bytes, uint64_t position) override {
    return inner_->read_now(bytes, position);
  }
  Status write_now(std::span<const std::byte> bytes, uint64_t position) override {
    return inner_->write_now(bytes, position);
  }
  Status truncate_now(uint64_t size) override { return inner_->truncate_now(size); }
  Status sync_now() override { return inner_->sync_now(); }

 private:
  std::unique_ptr<DiskFile> inner_;
  Counters& counters_;
};

class CountingDisk final : public Disk {
 public:
  CountingDisk(Disk& inner, Counters& counters) : inner_(inner), counters_(counters) {}
  Status create_directories(const std::string& path) override {
    return inner_.create_directories(path);
  }
  Result<std::vector<std::string>> list(const std::string& directory) override {
    return inner_.list(directory);
  }
  Result<std::unique_ptr<DiskFile>> open(const std::string& path, bool create) override {
    HARK_TRY_ASSIGN(std::unique_ptr<DiskFile> file, inner_.open(path, create));
    return std::unique_ptr<DiskFile>(new CountingFile(std::move(file), counters_));
  }
  Status remove(const std::string& path) override { return inner_.remove(path); }
  Result<std::unique_ptr<DirectoryLock>> lock(const std::string& directory) override {
    return inner_.lock(directory);
  }
  void drive() override { inner_.drive(); }

 private:
  Disk& inner_;
  Counters& counters_;
};

std::vector<std::byte> batch_of(size_t message_bytes, uint32_t count) {
  std::vector<std::byte> blob(count * message_bytes, std::byte{'x'});
  for (uint32_t i = 0; i < count; i++) {
    const std::span<std::byte> message = std::span(blob).subspan(i * message_bytes);
    std::memset(message.data(), 0, message_layout::header_bytes);
    store_u32(message, message_layout::payload_length,
              static_cast<uint32_t>(message_bytes - message_layout::header_bytes));
  }
  return blob;
}

struct Producer final : CommitCompletion {
  void committed(Status status) override {
    busy = false;
    if (!status.ok()) {
      failed = true;
      return;
    }
    const double us =
        std::chrono::duration<double, std::micro>(SteadyClock::now() - started).count();
    if (record) latencies->push_back(us);
  }
  bool busy = false;
  bool failed = false;
  bool record = false;
  SteadyClock::time_point started;
  std::vector<double>* latencies = nullptr;
};

struct Scenario {
  const char* name;
  Durability durability;
  uint32_t producers;
  uint32_t messages_per_batch;
  size_t message_bytes;
};

bool run(const Scenario& scenario, const std::string& root, double seconds) {
  auto reactor = std::move(io::Reactor::create(ShardId(0), io::ReactorOptions{})).value();
  RingDisk ring_disk(reactor->ring());
  Counters counters;
  CountingDisk disk(ring_disk, counters);
  SystemClock clock;
  const LogEnvironment environment{
      .disk = disk, .timers = reactor->timers(), .timer_clock = reactor->clock(), .clock = clock};
  LogOptions options;
  options.directory = root + "/" + scenario.name;
  std::filesystem::remove_all(options.directory);
  options.durability = scenario.durability;
  options.segment_bytes_max = 256ull << 20;
  options.retention_bytes = 1ull << 30;  // Bounds the disk a long run uses.
  auto log = PartitionLog::open(environment, options);
  if (!log.ok()) {
    std::fprintf(stderr, "cannot open a log in %s\n", options.directory.c_str());
    return false;
  }
  const std::vector<std::byte> blob = batch_of(scenario.message_bytes, scenario.messages_per_batch);
  std::vector<double> latencies;
  std::vector<Producer> producers(scenario.producers);
  for (Producer& producer : producers) producer.latencies = &latencies;
  const auto start = SteadyClock::now();
  const auto warm = start + std::chrono::duration<double>(seconds * 0.05);
  const auto end = start + std::chrono::duration<double>(seconds);
  uint64_t acked_bytes = 0;
  uint64_t datasyncs_at_warm = 0;
  bool warmed = false;
  for (auto now = start; now < end; now = SteadyClock::now()) {
    if (!warmed && now >= warm) {
      warmed = true;
      datasyncs_at_warm = counters.datasyncs;
      latencies.clear();
      acked_bytes = 0;
    }
    for (Producer& producer : producers) {
      if (producer.busy) continue;
      if (producer.failed) return false;
      const Result<AppendResult> appended = (*log)->append(blob, scenario.messages_per_batch);
      if (!appended.ok()) break;  // Too much unwritten (memory): let the disk catch up.
      if (warmed) acked_bytes += appended->bytes;
      producer.busy = true;
      producer.record = warmed;
      producer.started = SteadyClock::now();
      (*log)->when_committed(appended->first + appended->count, producer);
    }
    reactor->run_once(!warmed || scenario.durability != Durability::memory);
  }
  const double elapsed = seconds * 0.95;
  (*log)->close();
  const uint64_t datasyncs = counters.datasyncs - datasyncs_at_warm;
  const size_t commits = latencies.size();
  Percentiles percentiles = summarize(latencies);
  char notes[256];
  std::snprintf(
      notes, sizeof(notes), "%.1f MB/s, %.0f commits/s, %lu fdatasyncs, %.2f batches per fdatasync",
      static_cast<double>(acked_bytes) / elapsed / 1e6, static_cast<double>(commits) / elapsed,
      static_cast<unsigned long>(datasyncs),
      datasyncs == 0 ? 0.0 : static_cast<double>(commits) / static_cast<double>(datasyncs));
  print_row(scenario.name, percentiles, notes);
  std::filesystem::remove_all(options.directory);
  return true;
}

}  // namespace
}  // namespace hark::bench

int main(int argc, char** argv) {
  using namespace hark;
  double seconds = 3;
  std::string directory = ".";
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "--smoke") {
      seconds = 0.2;
    } else if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::max(0.1, std::atof(argv[++i]));
    } else if (arg == "--dir" && i + 1 < argc) {
      directory = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--smoke] [--seconds S] [--dir PATH]\n", argv[0]);
      return 2;
    }
  }
  const std::string root = directory + "/hark-commit-bench";
  const bench::Scenario scenarios[] = {
      {"always/1 (1 x 1 KiB)", storage::Durability::always, 1, 1, 1024},
      {"always/16 (1 x 1 KiB each)", storage::Durability::always, 16, 1, 1024},
      {"always/1 large (64 x 1 KiB)", storage::Durability::always, 1, 64, 1024},
      {"always/16 large (64 x 1 KiB each)", storage::Durability::always, 16, 64, 1024},
      {"write/1 (1 x 1 KiB)", storage::Durability::write, 1, 1, 1024},
      {"write/16 large (64 x 1 KiB each)", storage::Durability::write, 16, 64, 1024},
      {"memory/16 large (64 x 1 KiB each)", storage::Durability::memory, 16, 64, 1024},
  };
  bench::print_header();
  bool ok = true;
  for (const bench::Scenario& scenario : scenarios) ok = bench::run(scenario, root, seconds) && ok;
  std::filesystem::remove_all(root);
  return ok ? 0 : 1;
}
