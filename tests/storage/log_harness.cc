#include "hark/tests/storage/log_harness.h"

#include <cstring>

#include "hark/core/base/message_layout.h"
#include "hark/storage/message_format.h"

namespace hark::storage::test {

namespace layout = message_layout;

std::vector<std::byte> make_batch(const std::vector<MessageSpec>& messages) {
  std::vector<std::byte> blob;
  for (const MessageSpec& spec : messages) {
    const size_t at = blob.size();
    blob.resize(at + layout::header_bytes + spec.payload.size() + spec.user_headers.size());
    const std::span<std::byte> message(blob.data() + at, blob.size() - at);
    store_u64(message, layout::id, spec.id_low);
    store_u64(message, layout::origin_timestamp, spec.origin_timestamp);
    store_u32(message, layout::user_headers_length,
              static_cast<uint32_t>(spec.user_headers.size()));
    store_u32(message, layout::payload_length, static_cast<uint32_t>(spec.payload.size()));
    std::memcpy(message.data() + layout::header_bytes, spec.payload.data(), spec.payload.size());
    std::memcpy(message.data() + layout::header_bytes + spec.payload.size(),
                spec.user_headers.data(), spec.user_headers.size());
  }
  return blob;
}

std::vector<std::byte> make_batch(uint32_t count, const std::string& prefix, size_t padding) {
  std::vector<MessageSpec> specs;
  for (uint32_t i = 0; i < count; i++) {
    specs.push_back(MessageSpec{.payload = prefix + std::to_string(i) + std::string(padding, '.')});
  }
  return make_batch(specs);
}

std::vector<ReadMessage> parse_messages(std::span<const std::byte> bytes) {
  std::vector<ReadMessage> messages;
  size_t at = 0;
  while (at + layout::header_bytes <= bytes.size()) {
    const size_t size = static_cast<size_t>(message_bytes(bytes, at));
    if (at + size > bytes.size()) break;
    const std::span<const std::byte> message = bytes.subspan(at, size);
    const uint32_t payload_length = load_u32(message, layout::payload_length);
    const auto* text = reinterpret_cast<const char*>(message.data() + layout::header_bytes);
    messages.push_back(ReadMessage{
        .offset = load_u64(message, layout::offset),
        .timestamp = load_u64(message, layout::timestamp),
        .payload = std::string(text, payload_length),
        .user_headers =
            std::string(text + payload_length, size - layout::header_bytes - payload_length),
        .checksum = load_u64(message, layout::checksum),
        .checksum_ok = load_u64(message, layout::checksum) == message_checksum(message)});
    at += size;
  }
  EXPECT_EQ(at, bytes.size()) << "a view must hold whole messages only";
  return messages;
}

LogHarness::LogHarness(LogOptions log_options) : options(std::move(log_options)) {
  if (options.directory.empty()) options.directory = "/data/streams/1/topics/1/partitions/0";
}

Result<std::unique_ptr<PartitionLog>> LogHarness::open() {
  const LogEnvironment environment{
      .disk = disk, .timers = timers, .timer_clock = clock, .clock = clock};
  return PartitionLog::open(environment, options);
}

PartitionLog& LogHarness::reopen() {
  log_.reset();
  Result<std::unique_ptr<PartitionLog>> opened = open();
  EXPECT_TRUE(opened.ok()) << error_name(opened.error());
  if (opened.ok()) log_ = std::move(opened).value();
  return *log_;
}

ReadCollector LogHarness::read(Offset start, uint32_t count, uint64_t bytes_max) {
  ReadCollector collector;
  log_->read(start, count, bytes_max, collector);
  while (collector.calls == 0 && disk.pending() > 0) disk.drive();
  EXPECT_EQ(collector.calls, 1);
  return collector;
}

void LogHarness::advance(Duration duration) {
  clock.advance(duration);
  timers.advance(clock.monotonic_now());
}

}  // namespace hark::storage::test
