// A SIGTERM while clients keep requests in the broker (docs/operations.md: harkd stops cleanly):
// connections that poll partitions the other shard owns and ask GetMe in a loop always have a
// request on its way between the shards when the shards stop. Each one completes (or is
// cancelled) before its shard is torn down, so harkd exits 0: before, such a request was left
// in a shard's inbox and the poll's job pool was destroyed in use (an abort), or its connection
// was left behind (a leak under AddressSanitizer).
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/wait_until.h"

namespace hark::test {
namespace {

class Shutdown : public HarkdTest {};

TEST_F(Shutdown, ExitsCleanlyWithRequestsCrossingTheShards) {
  constexpr uint32_t partitions = 4;  // Two per shard (harkd's ownership map).
  constexpr uint32_t clients = 8;
  create_stream_and_topic(partitions);
  std::atomic<uint64_t> answered{0};
  std::vector<std::unique_ptr<client::Client>> connected;
  for (uint32_t i = 0; i < clients; i++) {
    connected.push_back(connect_client());
    ASSERT_NE(connected.back(), nullptr);
  }
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < clients; i++) {
    threads.emplace_back([&, i] {
      client::Client& client = *connected[i];
      // Until harkd closes the connection: every partition in turn (so every connection has
      // polls homed on its shard and owned by the other), and a GetMe between polls.
      for (uint32_t round = 0;; round++) {
        const auto polled =
            client.poll_messages(poll_request(i + 1, round % partitions, next_strategy(), 1, 0us));
        if (!polled.ok()) return;
        if (!client.get_me().ok()) return;
        answered.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // Every client is under way before the stop.
  EXPECT_TRUE(wait_until([&] { return answered.load() >= clients * 20; }));
  const ProcessExit exit = harkd_.stop();
  for (std::thread& thread : threads) thread.join();
  EXPECT_TRUE(exit.clean()) << "harkd " << describe(exit) << "\n" << harkd_.stderr_tail();
  // Nothing was left to the drain bound either.
  const std::string log = harkd_.stderr_tail();
  EXPECT_EQ(log.find("still busy"), std::string::npos) << log;
  EXPECT_EQ(log.find("still in flight"), std::string::npos) << log;
}

}  // namespace
}  // namespace hark::test
