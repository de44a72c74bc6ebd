// The embedding example of docs/embedding.md, run as a test: a program that uses hark's core
// without the server. It starts a Broker with 2 shards on a temporary directory, creates a
// stream and a topic, parks a poll from a thread outside the broker while another thread
// appends, and checks the poll returned the appended message and not before the append; then
// it stores the consumer's offset itself (the core has no auto-commit) and stops. Only the
// public API (core/broker/*.h) is used; messages are built with protocol/ (a test may; core
// may not). The last test keeps the doc's code excerpts true: they must be this file's
// `docs:` regions verbatim.
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "hark/core/broker/blocking.h"
#include "hark/core/broker/broker.h"
#include "hark/core/broker/operations.h"
#include "hark/protocol/message.h"
#include "hark/protocol/writer.h"
#include "hark/tests/support/broker_waits.h"
#include "hark/tests/support/docs_quote.h"

#ifndef HARK_SOURCE_DIR
#error "HARK_SOURCE_DIR must name the repository root (tests/e2e/CMakeLists.txt sets it)"
#endif

namespace hark::core {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDirectory {
 public:
  TempDirectory() {
    const char* tmp = ::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hark-embed-XXXXXX";
    if (::mkdtemp(path_.data()) == nullptr) path_.clear();
  }
  ~TempDirectory() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// docs:begin message
// One message in Iggy's format: a 64-byte header (zero: the broker stamps offset, timestamp,
// id and checksum) followed by the payload.
protocol::Bytes one_message(std::string_view text) {
  protocol::Bytes bytes;
  protocol::Writer writer(bytes);
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  protocol::write_message(writer, {.payload = {data, text.size()}});
  return bytes;
}
// docs:end

std::string payload_of(const storage::ReadView& view) {
  const auto batch = protocol::MessageBatchView::parse(view.bytes(), view.count());
  EXPECT_TRUE(batch.ok());
  if (!batch.ok() || batch->count() != 1) return {};
  const auto payload = (*batch->begin()).payload();
  return std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
}

TEST(EmbeddingExample, APollFromAnOutsideThreadWaitsForAnAppendFromAnother) {
  TempDirectory directory;
  ASSERT_FALSE(directory.path().empty());

  // docs:begin start
  BrokerOptions options;
  options.data_directory = directory.path();
  options.shards_count = 2;
  Result<std::unique_ptr<Broker>> started = Broker::start(options);
  ASSERT_TRUE(started.ok()) << error_name(started.error());
  Broker& broker = **started;
  // docs:end

  // docs:begin create
  Blocking<CreateStream> create_stream;
  create_stream.name = "orders";
  ASSERT_TRUE(create_stream.call(broker).ok());

  Blocking<CreateTopic> create_topic;
  create_topic.stream = NameOrId::id(create_stream.stream.id);
  create_topic.name = "created";
  create_topic.settings.partitions_count = 2;
  ASSERT_TRUE(create_topic.call(broker).ok());
  // docs:end
  ASSERT_EQ(create_topic.topic.partitions.size(), 2u);

  // docs:begin poll
  Blocking<Poll> poll;
  poll.stream = NameOrId::id(create_stream.stream.id);
  poll.topic = NameOrId::id(create_topic.topic.topic.id);
  poll.partition = 1;
  poll.consumer = {.kind = ConsumerRef::Kind::consumer, .id = 7};
  poll.from = PollFrom::next;
  poll.count = 10;
  poll.wait = 10s;  // Parks: partition 1 is empty.

  Status poll_status;
  SteadyClock::time_point returned_at;
  std::atomic<bool> poll_returned{false};
  std::thread consumer([&] {
    poll_status = poll.call(broker);  // Blocks this thread, never a shard.
    returned_at = SteadyClock::now();
    poll_returned.store(true);
  });
  // docs:end

  // Parked (the broker's counters say so), then check it is still waiting.
  EXPECT_TRUE(test::wait_until_parked(broker, 1));
  EXPECT_FALSE(poll_returned.load()) << "answered before anything was appended";
  const auto append_began = SteadyClock::now();

  // docs:begin append
  std::thread producer([&] {
    const protocol::Bytes message = one_message("hello");  // Valid until done() ran.
    Blocking<Append> append;
    append.stream = NameOrId::name("orders").value();
    append.topic = NameOrId::name("created").value();
    append.partitioning = {.kind = Partitioning::Kind::partition, .value = 1};
    append.messages = message;
    append.count = 1;
    const Status appended = append.call(broker);
    EXPECT_TRUE(appended.ok()) << error_name(appended.error());
    EXPECT_EQ(append.partition_id, 1u);
    EXPECT_EQ(append.appended.first, Offset(0));
  });
  producer.join();
  consumer.join();
  // docs:end

  ASSERT_TRUE(poll_status.ok()) << error_name(poll_status.error());
  ASSERT_TRUE(poll_returned.load());
  EXPECT_GE(returned_at, append_began);
  EXPECT_EQ(poll.result.partition_id, 1u);
  ASSERT_EQ(poll.result.messages.count(), 1u);
  EXPECT_EQ(poll.result.messages.first(), Offset(0));
  EXPECT_EQ(payload_of(poll.result.messages), "hello");

  // docs:begin commit
  // The core stores no offset for a poll: once the messages are delivered, store the last one.
  Blocking<StoreOffset> store;
  store.consumer = poll.consumer;
  store.stream = poll.stream;
  store.topic = poll.topic;
  store.partition = 1;
  store.offset = poll.result.messages.last().value();
  ASSERT_TRUE(store.call(broker).ok());
  // docs:end

  Blocking<GetOffset> get;
  get.consumer = poll.consumer;
  get.stream = poll.stream;
  get.topic = poll.topic;
  get.partition = 1;
  ASSERT_TRUE(get.call(broker).ok());
  EXPECT_EQ(get.stored, std::optional<uint64_t>(0));

  // `next` now continues after the stored offset: nothing left, and with no wait, at once.
  Blocking<Poll> again;
  again.stream = poll.stream;
  again.topic = poll.topic;
  again.partition = 1;
  again.consumer = poll.consumer;
  again.from = PollFrom::next;
  again.count = 10;
  ASSERT_TRUE(again.call(broker).ok());
  EXPECT_TRUE(again.result.messages.empty());

  // docs:begin stop
  broker.stop();  // Answers parked polls empty, writes every partition out, joins the shards.
  // docs:end
}

TEST(EmbeddingExample, DocsQuoteThisFileVerbatim) {
  test::expect_docs_quote(HARK_SOURCE_DIR "/tests/e2e/embedding_example_test.cc",
                          HARK_SOURCE_DIR "/docs/embedding.md", 7);
}

}  // namespace
}  // namespace hark::core
