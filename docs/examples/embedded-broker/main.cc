// A custom broker in a few lines: starts hark's core in a temporary directory, creates a
// stream and a topic, parks a poll with a wait from one thread, appends from another, prints
// what woke the poll and exits 0 (1 on any failure). Built against an installed hark
// (CMakeLists.txt beside this file); docs/embedding.md walks through the same calls.
#include <stdio.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>

#include <hark/core/base/version.h>
#include <hark/core/broker/blocking.h>
#include <hark/core/broker/broker.h>
#include <hark/core/broker/operations.h>
#include <hark/protocol/message.h>
#include <hark/protocol/writer.h>

using namespace std::chrono_literals;
using namespace hark;
using namespace hark::core;

namespace {

int fail(const char* what, Status status) {
  fprintf(stderr, "embedded-broker: %s failed: %s\n", what,
          std::string(error_name(status.error())).c_str());
  return 1;
}

// One message in Iggy's format: a zeroed 64-byte header (the broker stamps offset, timestamp,
// id and checksum) followed by the payload.
protocol::Bytes one_message(std::string_view text) {
  protocol::Bytes bytes;
  protocol::Writer writer(bytes);
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  protocol::write_message(writer, {.payload = {data, text.size()}});
  return bytes;
}

// The parked poll counts on every shard: a signal that the poll is waiting, not a guess.
uint64_t parked_now(Broker& broker) {
  Blocking<GetStats> stats;
  if (!stats.call(broker).ok()) return 0;
  return stats.stats.waits.parked_now;
}

int run(const std::string& directory) {
  BrokerOptions options;
  options.data_directory = directory;
  options.shards_count = 2;
  Result<std::unique_ptr<Broker>> started = Broker::start(options);
  if (!started.ok()) return fail("start", started.error());
  Broker& broker = **started;

  Blocking<CreateStream> create_stream;
  create_stream.name = "orders";
  if (Status s = create_stream.call(broker); !s.ok()) return fail("create stream", s);
  Blocking<CreateTopic> create_topic;
  create_topic.stream = NameOrId::id(create_stream.stream.id);
  create_topic.name = "created";
  create_topic.settings.partitions_count = 1;
  if (Status s = create_topic.call(broker); !s.ok()) return fail("create topic", s);

  Blocking<Poll> poll;
  poll.stream = create_topic.stream;
  poll.topic = NameOrId::id(create_topic.topic.topic.id);
  poll.partition = 0;
  poll.consumer = {.kind = ConsumerRef::Kind::consumer, .id = 1};
  poll.count = 10;
  poll.wait = 10s;  // The partition is empty: the poll parks until an append commits.
  Status polled;
  std::thread consumer([&] { polled = poll.call(broker); });
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  while (parked_now(broker) == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }

  std::thread producer([&] {
    const protocol::Bytes message = one_message("hello from an embedded broker");
    Blocking<Append> append;
    append.stream = poll.stream;
    append.topic = poll.topic;
    append.partitioning = {.kind = Partitioning::Kind::partition, .value = 0};
    append.messages = message;
    append.count = 1;
    if (Status s = append.call(broker); !s.ok()) fail("append", s);
  });
  producer.join();
  consumer.join();
  if (!polled.ok()) return fail("poll", polled);
  if (poll.result.messages.empty()) return fail("poll (nothing came back)", Error::error);

  const auto batch = protocol::MessageBatchView::parse(poll.result.messages.bytes(),
                                                       poll.result.messages.count());
  if (!batch.ok()) return fail("parse", batch.error());
  const auto payload = (*batch->begin()).payload();
  printf("hark %s: the parked poll woke with offset %llu: \"%.*s\"\n", HARK_VERSION_STRING,
         static_cast<unsigned long long>(poll.result.messages.first().value()),
         static_cast<int>(payload.size()), reinterpret_cast<const char*>(payload.data()));
  broker.stop();
  return 0;
}

}  // namespace

int main() {
  std::string directory = (std::filesystem::temp_directory_path() / "hark-example-XXXXXX").string();
  if (::mkdtemp(directory.data()) == nullptr) {
    perror("embedded-broker: mkdtemp");
    return 1;
  }
  const int status = run(directory);
  std::filesystem::remove_all(directory);
  return status;
}
