#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/clock.h"
#include "hark/io/timer_wheel.h"
#include "hark/storage/partition_log.h"
#include "hark/tests/support/memory_disk.h"

namespace hark::storage::test {

// One message to put in a batch: payload, user headers, and the id a producer sends.
struct MessageSpec {
  std::string payload;
  std::string user_headers;
  uint64_t id_low = 0;
  uint64_t origin_timestamp = 0;
};

// A send's messages blob: each message's 64-byte header (client fields only), payload, headers.
std::vector<std::byte> make_batch(const std::vector<MessageSpec>& messages);
// `count` messages with payloads "<prefix>0", "<prefix>1", ...
std::vector<std::byte> make_batch(uint32_t count, const std::string& prefix, size_t padding = 0);

// A message as read back.
struct ReadMessage {
  uint64_t offset = 0;
  uint64_t timestamp = 0;
  std::string payload;
  std::string user_headers;
  uint64_t checksum = 0;
  bool checksum_ok = false;
};
std::vector<ReadMessage> parse_messages(std::span<const std::byte> bytes);

// Collects one read_done() call.
struct ReadCollector final : ReadCompletion {
  void read_done(Result<ReadView> view) override {
    calls++;
    if (view.ok()) {
      messages = parse_messages(view->bytes());
      count = view->count();
      if (!view->empty()) {
        first = view->first();
        last = view->last();
      }
      held = std::move(view).value();
    } else {
      error = view.error();
    }
  }
  int calls = 0;
  Error error = Error::ok;
  uint32_t count = 0;
  Offset first;
  Offset last;
  std::vector<ReadMessage> messages;
  ReadView held;
};

// Counts when_committed()'s answers and keeps the last one's error.
struct CommitCollector final : CommitCompletion {
  void committed(Status status) override {
    calls++;
    error = status.ok() ? Error::ok : status.error();
  }
  int calls = 0;
  Error error = Error::ok;
};

// A PartitionLog on a MemoryDisk, a ManualClock and a bare TimerWheel: nothing sleeps.
class LogHarness {
 public:
  explicit LogHarness(LogOptions options = {});

  Result<std::unique_ptr<PartitionLog>> open();
  // Opens and asserts success.
  PartitionLog& reopen();
  void close_log() { log_.reset(); }
  PartitionLog& log() { return *log_; }

  // Reads synchronously, driving the disk for reads that go to it.
  ReadCollector read(Offset start, uint32_t count = 1000, uint64_t bytes_max = 1ull << 30);
  // Advances time and runs due timers.
  void advance(Duration duration);

  ManualClock clock;
  hark::test::MemoryDisk disk;
  io::TimerWheel timers{clock.monotonic_now()};
  LogOptions options;

 private:
  std::unique_ptr<PartitionLog> log_;
};

}  // namespace hark::storage::test
