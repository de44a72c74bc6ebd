// libFuzzer target over partition-log recovery: the input becomes a segment's .log and .index
// files on a MemoryDisk, the log is opened (either corruption policy, tail-only or full
// verification), and every message it then serves is checked. Recovery must never crash or
// assert, and must never serve a message whose checksum or offset is wrong.
//
// Input: [flags u8][index_length u16 LE][index bytes][log bytes]. flags bit 0: skip policy;
// bit 1: verify every checksum at open.
// Seeds: HARK_FUZZ_WRITE_SEEDS=<dir> ./hark_segment_recovery_fuzz writes valid segments there.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/base/log.h"
#include "hark/core/base/message_layout.h"
#include "hark/io/timer_wheel.h"
#include "hark/storage/message_format.h"
#include "hark/storage/partition_log.h"
#include "hark/tests/support/memory_disk.h"

namespace {

using namespace hark;
using namespace hark::storage;

const std::string directory = "/fuzz/partition";

struct Check final : ReadCompletion {
  void read_done(Result<ReadView> view) override {
    done = true;
    if (!view.ok()) {
      failed = true;
      return;
    }
    count = view->count();
    last = view->last();
    const std::span<const std::byte> bytes = view->bytes();
    size_t at = 0;
    Offset expected = view->first();
    for (uint32_t i = 0; i < view->count(); i++) {
      const CheckedMessage message = check_stored_message(bytes, at, expected);
      // A served message that fails its own check is exactly the bug this target hunts.
      if (message.check != MessageCheck::ok) std::abort();
      if (i == 0 && message.offset != view->first()) std::abort();
      at += message.bytes;
      expected = message.offset + 1;
    }
    if (at != bytes.size()) std::abort();
  }
  bool done = false;
  bool failed = false;
  uint32_t count = 0;
  Offset last;
};

void serve_everything(PartitionLog& log, test::MemoryDisk& disk) {
  Offset next = log.first_offset();
  for (int reads = 0; reads < 10'000 && next < log.next_offset(); reads++) {
    Check check;
    log.read(next, 64, 1 << 20, check);
    while (!check.done) disk.drive();
    if (check.failed) {
      next = next + 1;  // Damage found by a read: reported, not served; try the next one.
      continue;
    }
    if (check.count == 0) break;
    if (check.last < next || check.last >= log.next_offset()) std::abort();
    next = check.last + 1;
  }
}

std::vector<std::byte> batch_of(uint32_t count, size_t payload_bytes) {
  std::vector<std::byte> blob(count * (message_layout::header_bytes + payload_bytes),
                              std::byte{'p'});
  for (uint32_t i = 0; i < count; i++) {
    const std::span<std::byte> message =
        std::span(blob).subspan(i * (message_layout::header_bytes + payload_bytes));
    std::memset(message.data(), 0, message_layout::header_bytes);
    store_u32(message, message_layout::payload_length, static_cast<uint32_t>(payload_bytes));
  }
  return blob;
}

// Writes a few valid segments (as fuzz inputs) to `seeds`.
void write_seeds(const char* seeds) {
  for (uint32_t variant = 0; variant < 4; variant++) {
    ManualClock clock;
    test::MemoryDisk disk;
    io::TimerWheel timers(clock.monotonic_now());
    LogOptions options;
    options.directory = directory;
    {
      auto log = std::move(PartitionLog::open({disk, timers, clock, clock}, options)).value();
      for (uint32_t i = 0; i <= variant * 3; i++) {
        (void)log->append(batch_of(1 + i % 3, 5 + 40 * variant), 1 + i % 3);
      }
    }
    const auto& log_bytes = disk.bytes(directory + "/00000000000000000000.log");
    const auto& index_bytes = disk.bytes(directory + "/00000000000000000000.index");
    const auto index_length = static_cast<uint16_t>(index_bytes.size());
    std::ofstream out(std::string(seeds) + "/seed" + std::to_string(variant), std::ios::binary);
    out.put(static_cast<char>(variant));
    out.write(reinterpret_cast<const char*>(&index_length), 2);
    out.write(reinterpret_cast<const char*>(index_bytes.data()),
              static_cast<std::streamsize>(index_bytes.size()));
    out.write(reinterpret_cast<const char*>(log_bytes.data()),
              static_cast<std::streamsize>(log_bytes.size()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  hark::log::set_level(hark::log::Level::off);
  if (const char* seeds = std::getenv("HARK_FUZZ_WRITE_SEEDS")) {
    write_seeds(seeds);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t flags = data[0];
  const size_t index_length = std::min<size_t>(data[1] | (size_t{data[2]} << 8), size - 3);
  const auto* bytes = reinterpret_cast<const std::byte*>(data + 3);
  ManualClock clock;
  test::MemoryDisk disk;
  io::TimerWheel timers(clock.monotonic_now());
  disk.write_file(directory + "/format", std::as_bytes(std::span(format_file_content)));
  disk.write_file(directory + "/00000000000000000000.index", std::span(bytes, index_length));
  disk.write_file(directory + "/00000000000000000000.log",
                  std::span(bytes + index_length, size - 3 - index_length));
  LogOptions options;
  options.directory = directory;
  options.corruption = (flags & 1) != 0 ? CorruptionPolicy::skip : CorruptionPolicy::refuse;
  options.verify_checksums_on_open = (flags & 2) != 0;
  Result<std::unique_ptr<PartitionLog>> log =
      PartitionLog::open({disk, timers, clock, clock}, options);
  if (!log.ok()) return 0;
  serve_everything(**log, disk);
  (*log)->close();
  return 0;
}
