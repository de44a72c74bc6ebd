// Covers harkd's message-id deduplication window (--dedup-window; docs/cluster.md §The data
// path, Deduplication) through the client: a send repeating a message id already stored is
// answered OK and stores nothing new, a send partly of duplicates stores the rest, id 0 is
// never a duplicate; a single node's default (off, as Iggy's) stores every copy.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

using protocol::Identifier;
using protocol::Partitioning;

class HarkdDedup : public HarkdTest {
 protected:
  HarkdProcess::Options harkd_options() const override {
    HarkdProcess::Options options = HarkdTest::harkd_options();
    options.extra_args = {"--dedup-window", "1024"};  // Cluster mode's default.
    return options;
  }

  // Sends one message per (id, payload) to partition 0 of stream 0, topic 0, in one send.
  Status send_ids(const std::vector<std::pair<uint64_t, std::string>>& messages) {
    std::vector<protocol::Bytes> payloads;
    for (const auto& [id, text] : messages) payloads.push_back(bytes_of(text));
    std::vector<protocol::OutgoingMessage> outgoing;
    for (size_t i = 0; i < messages.size(); i++) {
      // Both halves of the u128 count; id 0 (both 0) asks the server for a UUID.
      const uint64_t high = messages[i].first == 0 ? 0 : 7;
      outgoing.push_back({.id = {.low = messages[i].first, .high = high}, .payload = payloads[i]});
    }
    return admin_->send_messages({.stream_id = Identifier::numeric(0),
                                  .topic_id = Identifier::numeric(0),
                                  .partitioning = Partitioning::partition(0)},
                                 outgoing);
  }
  std::vector<std::string> stored() {
    const auto polled = admin_->poll_messages(poll_request(1, 0, offset_strategy(0), 100, 0us));
    EXPECT_TRUE(polled.ok()) << error_name(polled.error());
    return polled.ok() ? payloads_of(polled->messages()) : std::vector<std::string>{};
  }
};

using Strings = std::vector<std::string>;

TEST_F(HarkdDedup, ARepeatedIdIsAnsweredOkAndStoredOnce) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_ids({{1, "a"}, {2, "b"}}).ok());
  // A producer's retry of the same send: answered OK, nothing new stored.
  ASSERT_TRUE(send_ids({{1, "a"}, {2, "b"}}).ok());
  // Partly duplicates (and one twice in the same send): the new one is stored.
  ASSERT_TRUE(send_ids({{2, "b"}, {3, "c"}, {3, "c"}}).ok());
  ASSERT_TRUE(send_ids({{0, "x"}, {0, "y"}}).ok());  // Id 0: the server's UUIDs, both kept.
  EXPECT_EQ(stored(), (Strings{"a", "b", "c", "x", "y"}));
}

// No --dedup-window: a single node's default.
class HarkdDedupOff : public HarkdDedup {
 protected:
  HarkdProcess::Options harkd_options() const override { return HarkdTest::harkd_options(); }
};

TEST_F(HarkdDedupOff, IsTheDefaultOnOneNodeAndStoresEveryCopy) {
  create_stream_and_topic(1);
  ASSERT_TRUE(send_ids({{1, "a"}}).ok());
  ASSERT_TRUE(send_ids({{1, "a"}}).ok());
  EXPECT_EQ(stored(), (Strings{"a", "a"}));
}

}  // namespace
}  // namespace hark::test
