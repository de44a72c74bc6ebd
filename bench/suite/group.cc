// `group`: K members of one consumer group (K = 1, 10, 100; the topic has K partitions, so each
// member owns one) each parked in a group poll (next, auto-commit, wait 10 s) on its own
// connection in one epoll loop. Per round the producer sends one message carrying its send time
// to every partition, one after another (the producer is one more connection of the same loop
// and sends the next message when the previous one is answered); latency = that member's poll
// returned - sent. harkd's CPU over the round, divided by K, is its cost per woken member (the
// K sends included).
#include <cstdio>
#include <thread>

#include "hark/bench/suite/hark_link.h"
#include "hark/bench/suite/process_stats.h"
#include "hark/bench/suite/scenarios.h"
#include "hark/protocol/codec.h"
#include "hark/protocol/group_requests.h"
#include "hark/protocol/poll_response.h"

namespace hark::bench {

std::chrono::microseconds park_settle(size_t polls);  // fanout.cc

namespace {

std::optional<uint32_t> create_group(const std::string& address, const TopicIds& topic) {
  auto admin = connect_hark(address);
  if (!admin.ok()) return std::nullopt;
  protocol::CreateConsumerGroupRequest create;
  create.stream_id = protocol::Identifier::numeric(topic.stream);
  create.topic_id = protocol::Identifier::numeric(topic.topic);
  create.name = "bench";
  const auto group = (*admin)->create_consumer_group(create);
  if (!group.ok()) {
    std::fprintf(stderr, "group: create: %s\n", std::string(error_name(group.error())).c_str());
    return std::nullopt;
  }
  return group->id;
}

// Every member link joins the group (pipelined), then the loop waits for all answers.
bool join_all(Fleet& fleet, const TopicIds& topic, uint32_t group, size_t members,
              size_t& pending) {
  const protocol::Bytes join = frame_of(
      protocol::JoinConsumerGroupRequest{.stream_id = protocol::Identifier::numeric(topic.stream),
                                         .topic_id = protocol::Identifier::numeric(topic.topic),
                                         .group_id = protocol::Identifier::numeric(group)});
  pending = members;
  for (size_t i = 0; i < members; i++) {
    if (!fleet.send(i, join)) return false;
  }
  return fleet.run([&] { return pending == 0; }, SteadyClock::now() + std::chrono::seconds(30));
}

// What the loop's replies tell a group round. The producer is the link after the members.
struct GroupState {
  TopicIds topic;
  size_t members = 0;
  std::vector<double>* latency_us = nullptr;
  Fleet* loop = nullptr;
  size_t pending = 0;           // Logins, joins, or a round's messages and send answers.
  size_t empty = 0;             // Polls answered empty (a rebalance or a timeout).
  uint32_t next_partition = 0;  // The producer's next send in a round.
  std::vector<size_t> to_repoll;

  bool on_reply(size_t link, uint32_t status, std::span<const std::byte> payload,
                SteadyClock::time_point at) {
    if (status != 0) {
      std::fprintf(stderr, "group: harkd answered %s (%u)\n",
                   std::string(error_name(static_cast<Error>(status))).c_str(), status);
      return false;
    }
    if (link == members && next_partition > 0 && next_partition < members) {
      pending--;  // A send answered: the next one.
      return loop->send(members, stamped_send_frame(topic, next_partition++));
    }
    if (payload.size() < 16) {  // Login, join or the round's last send answered.
      if (pending > 0) pending--;
      return true;
    }
    auto decoded = protocol::decode_payload<protocol::PollMessagesResponse>(payload);
    if (!decoded.ok()) return false;
    if (decoded->value.messages.count() == 0) {  // Woken by a rebalance or timed out: again.
      empty++;
      to_repoll.push_back(link);
      return true;
    }
    for (const protocol::MessageView message : decoded->value.messages) {
      latency_us->push_back(micros_between(read_stamp(message.payload()), at));
      if (pending > 0) pending--;
    }
    return true;
  }
};

struct GroupRun {
  std::vector<double> latency_us;
  double cpu_us_per_woken = -1;
  bool failed = true;
};

GroupRun measure_group(const std::string& address, pid_t pid, size_t members, int rounds) {
  GroupRun run;
  const std::optional<TopicIds> topic =
      create_topic(address, "group", static_cast<uint32_t>(members));
  if (!topic) return run;
  const std::optional<uint32_t> group = create_group(address, *topic);
  if (!group) return run;
  GroupState state{.topic = *topic, .members = members, .latency_us = &run.latency_us};
  HarkReplies replies(
      [&](size_t link, uint32_t status, std::span<const std::byte> payload,
          SteadyClock::time_point at) { return state.on_reply(link, status, payload, at); });
  Fleet fleet(replies);
  state.loop = &fleet;
  const size_t producer = members;  // The last link.
  size_t& pending = state.pending;
  if (!open_fleet(fleet, address, members + 1, pending)) return run;
  if (!join_all(fleet, *topic, *group, members, pending)) return run;
  const protocol::Bytes poll = frame_of(poll_request(
      *topic, std::nullopt, {protocol::ConsumerKind::group, protocol::Identifier::numeric(*group)},
      {protocol::PollingKind::next, 0}, 1, 10'000'000, true));
  auto auto_repoll = [&] {
    for (const size_t link : state.to_repoll) fleet.send(link, poll);
    state.to_repoll.clear();
  };
  int64_t cpu_ns_total = 0;
  bool cpu_known = pid > 0;
  for (int round = 0; round < rounds; round++) {
    for (size_t i = 0; i < members; i++) {
      if (!fleet.send(i, poll)) return run;
    }
    std::this_thread::sleep_for(park_settle(members));
    auto_repoll();
    pending = 2 * members;  // K messages and K sends answered.
    const CpuWindow cpu(pid);
    state.next_partition = 1;
    if (!fleet.send(producer, stamped_send_frame(*topic, 0))) return run;
    const bool done = fleet.run(
        [&] {
          auto_repoll();
          return pending == 0;
        },
        SteadyClock::now() + std::chrono::seconds(20));
    if (!done) {
      std::fprintf(stderr, "group: round %d with K=%zu: %zu messages not received\n", round,
                   members, pending);
      return run;
    }
    const int64_t used = cpu.used_ns();
    cpu_known = cpu_known && used >= 0;
    cpu_ns_total += used;
  }
  if (state.empty > 0) {
    std::printf("group K=%zu: %zu polls answered empty and polled again\n", members, state.empty);
  }
  if (cpu_known) {
    run.cpu_us_per_woken = static_cast<double>(cpu_ns_total) / 1e3 / static_cast<double>(rounds) /
                           static_cast<double>(members);
  }
  run.failed = false;
  return run;
}

}  // namespace

bool run_group(const Options& options, Report& report) {
  HarkServer server;
  if (!server.start(options, 1024)) return false;
  bool ok = true;
  const std::vector<size_t> sizes =
      options.smoke ? std::vector<size_t>{2} : std::vector<size_t>{1, 10, 100};
  for (const size_t k : sizes) {
    const int rounds = options.smoke ? 3 : k >= 100 ? 50 : 200;
    GroupRun run = measure_group(server.address(), server.pid(), k, rounds);
    ok = ok && !run.failed;
    report.add({.name = "group K=" + std::to_string(k) + " members",
                .samples_us = std::move(run.latency_us),
                .server_cpu_us_per_op = run.cpu_us_per_woken,
                .notes = std::to_string(rounds) +
                         " rounds of one send per partition; cpu per woken member"});
  }
  return server.stop() && ok;
}

}  // namespace hark::bench
