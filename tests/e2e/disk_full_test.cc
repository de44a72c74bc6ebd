// Covers a full disk under durability "always" (issue #8), for real: harkd runs with
// RLIMIT_FSIZE (SIGXFSZ ignored), so a write past the limit fails with EFBIG exactly where a
// full disk fails with ENOSPC. A send whose commit fails gets CannotSaveMessagesToSegment
// (4006) and is not kept; every acknowledged send stays readable, also after a restart without
// the limit. A create that the metadata log cannot write gets CannotWriteToFile and changes
// nothing.
#include <signal.h>

#include <set>
#include <string>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;
using namespace std::chrono_literals;

constexpr rlim_t file_bytes_max = 256 << 10;

class DiskFull : public HarkdTest {
 protected:
  void SetUp() override {
    // Both are inherited by harkd across fork and exec; the test restores its own limit.
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    rlimit limited = saved;
    limited.rlim_cur = file_bytes_max;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
    HarkdTest::SetUp();
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  }
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--durability", "always", "--segment-size", "16MiB"};
    return options;
  }
};

TEST_F(DiskFull, AFailedCommitFailsItsSendAndKeepsEveryAcknowledgedOne) {
  create_stream_and_topic(1);
  const std::string filler(8000, 'x');
  uint32_t acked = 0;
  Status failed = ok_status();
  for (int i = 0; i < 100; i++) {
    failed = send_text(0, std::to_string(i) + ":" + filler);
    if (!failed.ok()) break;
    acked++;
  }
  ASSERT_FALSE(failed.ok()) << "the file size limit was never reached";
  EXPECT_EQ(failed.error(), Error::cannot_save_messages_to_segment);
  EXPECT_GT(acked, 0u);
  const Status again = send_text(0, "still full");
  EXPECT_FALSE(again.ok());

  auto read_all = [&] {
    std::vector<std::string> payloads;
    for (uint64_t offset = 0;;) {
      const PollOutcome outcome = poll_now(poll_request(1, 0, offset_strategy(offset), 10, 0us));
      EXPECT_EQ(outcome.status, 0u);
      if (outcome.payloads.empty()) return payloads;
      for (size_t i = 0; i < outcome.offsets.size(); i++) EXPECT_EQ(outcome.offsets[i], offset + i);
      payloads.insert(payloads.end(), outcome.payloads.begin(), outcome.payloads.end());
      offset += outcome.payloads.size();
    }
  };
  std::vector<std::string> payloads = read_all();
  ASSERT_EQ(payloads.size(), acked) << "nothing unacknowledged is served";
  for (uint32_t i = 0; i < acked; i++) EXPECT_EQ(payloads[i], std::to_string(i) + ":" + filler);

  // The metadata log is a file too: creates fail cleanly once it reaches the limit.
  std::set<std::string> created;
  Status refused = ok_status();
  for (int i = 0; i < 5000; i++) {
    const std::string name = "stream-" + std::to_string(i) + "-" + std::string(200, 'n');
    const auto result = admin_->create_stream({.name = name});
    if (!result.ok()) {
      refused = result.error();
      break;
    }
    created.insert(name);
  }
  ASSERT_FALSE(refused.ok()) << "the metadata log never reached the limit";
  EXPECT_EQ(refused.error(), Error::cannot_write_to_file);
  const auto streams = admin_->get_streams();
  ASSERT_TRUE(streams.ok());
  EXPECT_EQ(streams->streams.size(), created.size() + 1) << "the refused create left a trace";

  // Restarted without the limit: the same messages and streams, and sends work again.
  HarkdProcess::Options options = harkd_options();
  options.data_directory = harkd_.data_directory();
  admin_.reset();
  harkd_.signal(SIGKILL);
  HarkdProcess restarted;
  ASSERT_TRUE(restarted.start(options)) << restarted.error_text();
  auto client = std::make_unique<client::Client>();
  ASSERT_TRUE(client->connect(restarted.address()).ok());
  ASSERT_TRUE(client->login("iggy", "iggy").ok());
  const auto after = client->get_streams();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->streams.size(), created.size() + 1);
  const protocol::Bytes payload = bytes_of("after");
  const protocol::OutgoingMessage message{.payload = payload};
  EXPECT_TRUE(client
                  ->send_messages({.stream_id = Identifier::numeric(0),
                                   .topic_id = Identifier::numeric(0),
                                   .partitioning = protocol::Partitioning::partition(0)},
                                  {&message, 1})
                  .ok());
  // The new message follows the acknowledged ones directly: the failed ones left no offsets.
  const auto polled = client->poll_messages(poll_request(1, 0, offset_strategy(acked), 1000, 0us));
  ASSERT_TRUE(polled.ok());
  EXPECT_EQ(offsets_of(polled->messages()), std::vector<uint64_t>{acked});
  EXPECT_EQ(payloads_of(polled->messages()), std::vector<std::string>{"after"});
  client.reset();
  EXPECT_TRUE(restarted.stop().clean());
}

}  // namespace
}  // namespace hark::test
