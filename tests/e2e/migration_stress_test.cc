// Connection migration under load (label concurrency: the tsan stage runs it against a tsan
// harkd, the asan stage against an asan one). For a bounded time, producers on fresh
// connections send to partitions (each connection migrates on its first send; some close
// without waiting for the answer, so they go away mid-migration), while consumers long-poll
// every partition, moving too, and some drop their connection while parked and come back.
// Checks: every acknowledged message is in its partition exactly once, in order; consumers
// never see a gap or a duplicate; harkd stops cleanly (a sanitizer report fails the stop).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/protocol/send_messages.h"
#include "hark/tests/e2e/e2e_support.h"

namespace hark::test {
namespace {

class HarkdMigrationStress : public HarkdTest {};

constexpr uint32_t partitions = 4;
constexpr auto run_time = 2s;
constexpr int connection_sends_max = 20;  // Then a producer reconnects (and migrates again).

TEST_F(HarkdMigrationStress, MigrationsRaceWithParkedPollsCommitsAndDisconnects) {
  create_stream_and_topic(partitions);
  const auto end = SteadyClock::now() + run_time;
  std::atomic<bool> failed{false};

  // Acknowledged payloads, per producer and partition, in order.
  constexpr int producers_count = 2;
  std::vector<std::vector<std::vector<std::string>>> acked(
      producers_count, std::vector<std::vector<std::string>>(partitions));

  std::vector<std::thread> producers;
  for (int producer = 0; producer < producers_count; producer++) {
    producers.emplace_back([&, producer] {
      int sent = 0;
      // Each connection takes the next partition: all four get traffic however few rounds a
      // loaded machine allows in the run time (a partition from the send count left two of
      // them without any below ~90 sends per producer).
      for (uint32_t round = 0; SteadyClock::now() < end && !failed.load(); round++) {
        const uint32_t partition = (round + static_cast<uint32_t>(producer)) % partitions;
        if (round % 5 == 3) {
          // Leave during the migration: send and close without reading the answer.
          RawConnection leaving;
          if (!leaving.connect_and_login(address())) {
            failed = true;
            return;
          }
          const protocol::Bytes payload = bytes_of("dropped");
          const protocol::OutgoingMessage message{.payload = payload};
          protocol::Bytes frame;
          const protocol::SendTarget target{
              .stream_id = protocol::Identifier::numeric(0),
              .topic_id = protocol::Identifier::numeric(0),
              .partitioning = protocol::Partitioning::partition(partition)};
          if (!protocol::encode_send_messages(target, {&message, 1}, frame).ok() ||
              !leaving.send(frame)) {
            failed = true;
            return;
          }
          sent++;
          continue;
        }
        std::unique_ptr<client::Client> client = connect_client();
        if (client == nullptr) {
          failed = true;
          return;
        }
        for (int i = 0; i < connection_sends_max && SteadyClock::now() < end; i++, sent++) {
          const std::string payload = "p" + std::to_string(producer) + "-" + std::to_string(sent);
          if (!send_text(*client, protocol::Partitioning::partition(partition), payload).ok()) {
            failed = true;
            return;
          }
          acked[producer][partition].push_back(payload);
        }
      }
    });
  }

  // Consumers: one per partition, long-polling by offset; every third poll on a connection
  // of its own that is dropped while parked.
  std::vector<std::thread> consumers;
  std::vector<std::vector<std::string>> consumed(partitions);
  for (uint32_t partition = 0; partition < partitions; partition++) {
    consumers.emplace_back([&, partition] {
      uint64_t next = 0;
      int polls = 0;
      RawConnection connection;
      while (SteadyClock::now() < end && !failed.load()) {
        if (!connection.is_open() && !connection.connect_and_login(address())) {
          failed = true;
          return;
        }
        if (polls++ % 3 == 2) {
          // Move (an immediate poll of the partition), park, then leave: the parked poll is
          // cancelled on the shard the connection moved to.
          RawConnection dropped;
          if (!dropped.connect_and_login(address()) ||
              !dropped
                   .exchange(
                       request_frame(poll_request(50 + partition, partition, offset_strategy(0), 1,
                                                  std::chrono::microseconds(0))))
                   .has_value() ||
              !dropped.send(request_frame(
                  poll_request(50 + partition, partition, offset_strategy(1u << 30), 1, 1s)))) {
            failed = true;
            return;
          }
          // Not a wait for a signal: stress pacing. Most of these polls park before the close
          // and are cancelled on the shard they moved to; a close that beats its park is a
          // race this test wants too (other threads' polls make parked_now no signal here).
          std::this_thread::sleep_for(5ms);
          continue;
        }
        const auto response = connection.exchange(
            request_frame(poll_request(10 + partition, partition, offset_strategy(next), 100,
                                       std::chrono::microseconds(200'000))),
            4 * at_once_bound);
        const PollOutcome outcome = poll_outcome(response);
        if (!outcome.answered || outcome.status != 0) {
          ADD_FAILURE() << "partition " << partition << ": poll failed, status " << outcome.status;
          failed = true;
          return;
        }
        for (size_t i = 0; i < outcome.offsets.size(); i++) {
          if (outcome.offsets[i] != next) {
            ADD_FAILURE() << "partition " << partition << ": offset " << outcome.offsets[i]
                          << " where " << next << " was due";
            failed = true;
            return;
          }
          consumed[partition].push_back(outcome.payloads[i]);
          next++;
        }
      }
    });
  }
  // One consumer of partition 0 with `next` and auto-commit, reconnecting (and moving) every
  // few polls: its stored offset must be in place before its next poll runs on the new shard,
  // or it would see messages twice.
  std::vector<uint64_t> committed_seen;
  std::thread committing([&] {
    int polls = 0;
    while (SteadyClock::now() < end && !failed.load()) {
      RawConnection connection;
      if (!connection.connect_and_login(address())) {
        failed = true;
        return;
      }
      for (int i = 0; i < 5 && SteadyClock::now() < end; i++, polls++) {
        const PollOutcome outcome = poll_outcome(connection.exchange(
            request_frame(
                poll_request(77, 0, next_strategy(), 50, std::chrono::microseconds(100'000), true)),
            4 * at_once_bound));
        if (!outcome.answered || outcome.status != 0) {
          failed = true;
          return;
        }
        committed_seen.insert(committed_seen.end(), outcome.offsets.begin(), outcome.offsets.end());
      }
    }
  });
  for (std::thread& thread : producers) thread.join();
  for (std::thread& thread : consumers) thread.join();
  committing.join();
  for (size_t i = 0; i < committed_seen.size(); i++) {
    ASSERT_EQ(committed_seen[i], i) << "the auto-committing consumer saw a gap or a repeat";
  }
  EXPECT_FALSE(committed_seen.empty());
  const HarkdStats connections = harkd_stats();
  EXPECT_GT(connections.migrations, 0u);
  std::printf("%llu migrations, %llu refused\n",
              static_cast<unsigned long long>(connections.migrations),
              static_cast<unsigned long long>(connections.refused));
  ASSERT_FALSE(failed.load());
  size_t acked_count = 0;
  size_t consumed_count = 0;
  for (uint32_t partition = 0; partition < partitions; partition++) {
    for (const auto& producer : acked) acked_count += producer[partition].size();
    consumed_count += consumed[partition].size();
  }
  std::printf("%zu sends acknowledged, %zu messages consumed by long polls\n", acked_count,
              consumed_count);

  // Every partition holds its acknowledged messages once each, in the order each producer
  // sent them (the dropped sends may or may not have landed; they are told apart by text).
  for (uint32_t partition = 0; partition < partitions; partition++) {
    std::vector<std::string> stored;
    for (uint64_t offset = 0;;) {
      const PollOutcome page = poll_now(
          poll_request(99, partition, offset_strategy(offset), 1000, std::chrono::microseconds(0)));
      ASSERT_TRUE(page.answered);
      if (page.offsets.empty()) break;
      stored.insert(stored.end(), page.payloads.begin(), page.payloads.end());
      offset = page.offsets.back() + 1;
    }
    for (int producer = 0; producer < producers_count; producer++) {
      const std::string prefix = "p" + std::to_string(producer) + "-";
      std::vector<std::string> kept;
      for (const std::string& payload : stored) {
        if (payload.starts_with(prefix)) kept.push_back(payload);
      }
      EXPECT_EQ(kept, acked[producer][partition])
          << "partition " << partition << ", producer " << producer;
    }
    // What the consumer saw is a prefix of the partition.
    ASSERT_LE(consumed[partition].size(), stored.size());
    EXPECT_TRUE(std::equal(consumed[partition].begin(), consumed[partition].end(), stored.begin()))
        << "partition " << partition;
    EXPECT_FALSE(stored.empty()) << "partition " << partition << " got no traffic";
  }
}

}  // namespace
}  // namespace hark::test
