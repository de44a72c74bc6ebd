// Proves a Poll costs no allocation once the broker is warm, even when every request is a new
// Poll object (as harkd's connections make them): the engine's state of a poll comes from its
// home shard's pool (core/broker/internal/poll_job.h), not from the operation. Polls from a
// thread outside the broker have shard 0 as their home; the two partitions' owners differ, so
// half of them cross shards. Runs in the plain release build only (the sanitizers replace the
// allocator).
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/core/base/message_layout.h"
#include "hark/core/broker/blocking.h"
#include "hark/tests/support/counting_allocator.h"

namespace hark::core {
namespace {

using namespace std::chrono_literals;

constexpr uint32_t partitions = 2;
constexpr uint32_t messages_per_partition = 64;

std::vector<std::byte> message(std::string_view payload) {
  std::vector<std::byte> bytes(message_layout::header_bytes + payload.size());
  store_u32(bytes, message_layout::payload_length, static_cast<uint32_t>(payload.size()));
  std::memcpy(bytes.data() + message_layout::header_bytes, payload.data(), payload.size());
  return bytes;
}

// One immediate poll of one message with a fresh Poll; returns how many bytes came back.
size_t poll_once(Broker& broker, uint32_t i) {
  Blocking<Poll> poll;
  poll.stream = NameOrId::id(0);
  poll.topic = NameOrId::id(0);
  poll.partition = i % partitions;
  poll.consumer = {.kind = ConsumerRef::Kind::consumer, .id = 1};
  poll.from = PollFrom::offset;
  poll.value = (i / partitions) % messages_per_partition;
  poll.count = 1;
  const Status status = poll.call(broker);
  if (!status.ok()) return 0;
  return poll.result.messages.bytes().size();
}

TEST(BrokerAllocation, FreshPollsAllocateNothingOnceWarm) {
  if (!test::counting_allocator_active()) GTEST_SKIP() << "sanitizer build: allocator replaced";
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() /
      ("hark_broker_allocation_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(directory);
  BrokerOptions options;
  options.data_directory = directory.string();
  options.shards_count = 2;
  options.retention_interval = 1h;  // No timer work of its own in the measured window.
  auto started = Broker::start(options);
  ASSERT_TRUE(started.ok()) << error_name(started.error());
  Broker& broker = **started;

  Blocking<CreateStream> stream;
  stream.name = "s";
  ASSERT_TRUE(stream.call(broker).ok());
  Blocking<CreateTopic> topic;
  topic.stream = NameOrId::id(0);
  topic.name = "t";
  topic.settings.partitions_count = partitions;
  ASSERT_TRUE(topic.call(broker).ok());
  ASSERT_NE(topic.topic.partitions.size(), 0u);
  const std::vector<std::byte> bytes = message("payload");
  for (uint32_t p = 0; p < partitions; p++) {
    for (uint32_t m = 0; m < messages_per_partition; m++) {
      Blocking<Append> append;
      append.stream = NameOrId::id(0);
      append.topic = NameOrId::id(0);
      append.partitioning = {.kind = Partitioning::Kind::partition, .value = p};
      append.messages = bytes;
      append.count = 1;
      ASSERT_TRUE(append.call(broker).ok());
    }
  }

  for (uint32_t i = 0; i < 500; i++) ASSERT_EQ(poll_once(broker, i), bytes.size());  // Warm-up.
  const uint64_t before = test::allocations_count();
  size_t polled = 0;
  for (uint32_t i = 0; i < 2000; i++) polled += poll_once(broker, i) == bytes.size() ? 1 : 0;
  const uint64_t allocations = test::allocations_count() - before;
  broker.stop();
  std::filesystem::remove_all(directory);
  EXPECT_EQ(polled, 2000u);
  EXPECT_EQ(allocations, 0u) << "allocations in 2000 polls, each a new Poll";
}

}  // namespace
}  // namespace hark::core
