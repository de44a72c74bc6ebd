// Replication under faults, Jepsen style (issue 19; docs/cluster.md §Replication: the controller
// side, §The decision): three harkd with a 2 s lease and one topic of three partitions, each
// replicated to three nodes (the cluster default), while two producers send a payload unique to
// each attempt to every partition (a failed attempt is retried a few times, each retry a new
// payload) and two consumers long-poll every partition from their last offset, all through the
// nodes in turn (a client whose connection fails goes on through the next node). Faults come
// in cycles, each once every partition's in-sync set holds all three replicas, and each
// followed by a wait until a send to every partition is acknowledged again:
// - the leader of a partition SIGKILLed, restarted once the controller made another replica
//   leader;
// - a leader SIGSTOPped past its lease and continued once another replica leads: whatever the
//   deposed leader then acknowledges must be held by the new one (a send from a client of
//   the stopped leader itself waits in its socket to make sure it has one to answer);
// - a leader's node links cut at random (a LinkProxy in front of every node's link listener,
//   tests/cluster/link_proxy.h) while sends go on, then calmed; then, once it is in sync
//   again, the leader isolated: its links held, so nothing it appends can commit, while a
//   consumer of its own waits at the partition's end and a client sends to it, then SIGKILLed
//   and restarted once another replica leads. The send is never acknowledged and the new
//   leader never had it: a poll that returned it saw what no quorum held.
// Every operation goes into a History (tests/cluster/history.h); after the faults every
// partition is read whole from its leader and the history is checked: each acknowledged send
// stored exactly once, offsets dense, each payload at one offset, everything a poll returned
// still there at its offset, every poll answered by its deadline. The run prints
// `faults: cycles=N acknowledged=A lost=L duplicates=D polls=P`.
// HARK_FAULT_CYCLES sets the cycles (3 by default, about 15 s; `make test-long` runs 30).
// Label cluster (release stage only).
#include <signal.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "hark/tests/e2e/e2e_support.h"
#include "hark/tests/support/prng.h"
#include "hark/tests/support/wait_until.h"
#include "history.h"
#include "link_proxy.h"
#include "local_cluster.h"

namespace hark::test {
namespace {

using namespace std::chrono_literals;
using Outcome = History::Outcome;

constexpr uint32_t nodes = 3;
constexpr uint32_t partitions = 3;
constexpr auto poll_wait = 500ms;
// How late past its wait (and the pauses it overlapped) a poll may be answered: far above the
// noise of a shared machine, far below a poll left hanging.
constexpr auto poll_slack = 3s;
// How long a failover, a recovery or a catch-up may take: a few leases.
constexpr auto settle_timeout = 30s;
constexpr int attempts_per_message = 4;

// The cycles to run: HARK_FAULT_CYCLES, 3 by default (the CI budget).
int fault_cycles() {
  const char* value = std::getenv("HARK_FAULT_CYCLES");
  return value != nullptr && *value != '\0' ? std::atoi(value) : 3;
}

// Each node's client address, which changes when the node restarts; shared by the test's
// thread (which restarts nodes) and the client threads.
class Addresses {
 public:
  void set(uint32_t node, std::string address) {
    std::lock_guard lock(mutex_);
    addresses_[node] = std::move(address);
  }
  std::string get(uint32_t node) const {
    std::lock_guard lock(mutex_);
    const auto found = addresses_.find(node);
    return found == addresses_.end() ? "" : found->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<uint32_t, std::string> addresses_;
};

// One client thread's connections, one per node, each operation through the next node in
// turn; a connection that failed is opened again (to the node's current address) when its
// turn comes.
class NodeClients {
 public:
  NodeClients(const Addresses& addresses, uint32_t first) : addresses_(addresses), turn_(first) {}

  // The next node that accepts a connection and a login, and its client; nullptr if none did.
  std::pair<uint32_t, client::Client*> next() {
    for (uint32_t tried = 0; tried < nodes; tried++) {
      const uint32_t node = turn_ % nodes + 1;
      turn_++;
      Connected& connected = clients_[node];
      const std::string address = addresses_.get(node);
      if (connected.client != nullptr && connected.client->connected() &&
          connected.address == address) {
        return {node, connected.client.get()};
      }
      // A short command timeout: a send to a stopped node is given up (timed out, its outcome
      // unknown) rather than held for the client's default 30 s.
      connected.client = std::make_unique<client::Client>(
          client::ClientOptions{.connect_timeout = 2s, .command_timeout = 5s});
      connected.address = address;
      if (connected.client->connect(address).ok() && connected.client->login("iggy", "iggy").ok()) {
        return {node, connected.client.get()};
      }
      connected.client.reset();
    }
    return {0, nullptr};
  }

 private:
  struct Connected {
    std::string address;
    std::unique_ptr<client::Client> client;
  };
  const Addresses& addresses_;
  uint32_t turn_;
  std::map<uint32_t, Connected> clients_;
};

// What became of an operation that failed: the server's answer keeps the connection open; a
// transport failure or the client's timeout closes it (tools/client/connection.h).
Outcome failure_outcome(Error error, const client::Client& client) {
  if (client.connected()) return Outcome::error;
  return error == Error::task_timeout ? Outcome::timed_out : Outcome::lost;
}

class ReplicationFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    for (LinkProxy& proxy : proxies_) ASSERT_TRUE(proxy.start());
    LocalCluster::Options options;
    options.lease_ttl = "2s";
    options.shards_count = 1;  // Three nodes, four client threads and three proxies on 2 cores.
#ifdef HARK_FAULTS_HARKD_PATH
    // The mutant run (tests/e2e/CMakeLists.txt): a harkd with a planted bug the checker must
    // catch.
    options.harkd_path = HARK_FAULTS_HARKD_PATH;
#endif
    for (uint32_t id = 1; id <= nodes; id++) {
      options.node_args[id] = {"--advertised-link-address", proxies_[id - 1].address()};
    }
    ASSERT_EQ(cluster_.start(options), "");
    for (uint32_t id = 1; id <= nodes; id++) node_started(id);
    ASSERT_TRUE(cluster_.wait_for_all_members());
    auto admin = cluster_.connect(1);
    ASSERT_NE(admin, nullptr);
    ASSERT_EQ(cluster_.create_topic_everywhere(*admin, partitions), "");
    for (uint32_t p = 0; p < partitions; p++) {
      const auto assignment = cluster_.assignment_of(0, 0, p);
      ASSERT_TRUE(assignment.has_value()) << p;
      ASSERT_EQ(assignment->replicas.size(), nodes) << "partition " << p << " is not factor 3";
    }
  }

  void TearDown() override {
    stop_clients();
    if (stopped_node_ != 0) ::kill(cluster_.node(stopped_node_).pid(), SIGCONT);
  }

  // A node (re)started: its proxy relays to its new link listener, clients find its new port.
  void node_started(uint32_t id) {
    const std::string upstream = cluster_.bound_link_address(id);
    ASSERT_FALSE(upstream.empty()) << cluster_.node(id).stderr_tail();
    proxies_[id - 1].set_upstream(upstream);
    addresses_.set(id, cluster_.node(id).address());
  }

  void start_clients() {
    for (uint32_t producer = 1; producer <= 2; producer++) {
      clients_.emplace_back([this, producer] { produce(producer); });
    }
    for (uint32_t consumer = 11; consumer <= 12; consumer++) {
      clients_.emplace_back([this, consumer] { consume(consumer); });
    }
  }

  void stop_clients() {
    stopping_.store(true);
    for (std::thread& client : clients_) client.join();
    clients_.clear();
  }

  // One send attempt through the next node, recorded; true if acknowledged.
  bool send_once(NodeClients& clients, uint32_t process, uint32_t partition,
                 const std::string& payload) {
    const auto [node, client] = clients.next();
    if (client == nullptr) return false;  // No node reachable: nothing was sent.
    const size_t id = history_.invoke_send(process, node, partition, payload);
    const Status sent = send_to_partition(*client, partition, payload);
    if (sent.ok()) {
      history_.complete_send(id, Outcome::ok);
      return true;
    }
    history_.complete_send(id, failure_outcome(sent.error(), *client), error_code(sent.error()));
    return false;
  }

  void produce(uint32_t process) {
    NodeClients clients(addresses_, process);
    for (uint64_t message = 0; !stopping_.load(); message++) {
      const uint32_t partition = message % partitions;
      for (int attempt = 0; attempt < attempts_per_message && !stopping_.load(); attempt++) {
        const std::string payload = "p" + std::to_string(process) + "-" + std::to_string(message) +
                                    "-" + std::to_string(attempt);
        if (send_once(clients, process, partition, payload)) {
          acknowledged_.fetch_add(1);
          break;
        }
        // Pacing, not a wait for a signal: a partition without a leader refuses at once, and
        // the retries must not spin on a machine the nodes share.
        std::this_thread::sleep_for(20ms * (attempt + 1));
      }
      // Pacing: the faults are under test, not the throughput; the machine is shared.
      std::this_thread::sleep_for(2ms);
    }
  }

  void consume(uint32_t process) {
    NodeClients clients(addresses_, process);
    std::array<uint64_t, partitions> next{};
    for (uint64_t turn = 0; !stopping_.load(); turn++) {
      const uint32_t partition = turn % partitions;
      const auto [node, client] = clients.next();
      if (client == nullptr) {
        std::this_thread::sleep_for(20ms);  // Pacing while no node is reachable.
        continue;
      }
      const size_t id = history_.invoke_poll(process, node, partition, next[partition], poll_wait);
      auto polled = client->poll_messages(
          poll_request(process, partition, offset_strategy(next[partition]), 100, poll_wait));
      if (!polled.ok()) {
        history_.complete_poll(id, failure_outcome(polled.error(), *client),
                               error_code(polled.error()));
        continue;
      }
      std::vector<History::Message> messages;
      const std::vector<uint64_t> offsets = offsets_of(polled->messages());
      const std::vector<std::string> payloads = payloads_of(polled->messages());
      for (size_t i = 0; i < offsets.size(); i++) messages.push_back({offsets[i], payloads[i]});
      history_.complete_poll(id, Outcome::ok, 0, std::move(messages));
      if (!offsets.empty()) next[partition] = offsets.back() + 1;
    }
  }

  // Waits until a send to every partition is acknowledged (probes, recorded like any send).
  bool wait_serving(const std::string& label) {
    NodeClients clients(addresses_, 0);
    for (uint32_t p = 0; p < partitions; p++) {
      int attempt = 0;
      const bool served = wait_until(
          [&] {
            return send_once(
                clients, 99, p,
                "probe-" + label + "-" + std::to_string(p) + "-" + std::to_string(attempt++));
          },
          settle_timeout, 20ms);
      if (!served) {
        ADD_FAILURE() << "partition " << p << " serves no send after " << label << ": "
                      << describe_assignments();
        return false;
      }
    }
    return true;
  }

  // Waits until every partition's in-sync set holds all its replicas: one node may fail.
  bool wait_in_sync() {
    const bool synced = wait_until(
        [&] {
          for (uint32_t p = 0; p < partitions; p++) {
            const auto assignment = cluster_.assignment_of(0, 0, p);
            if (!assignment || assignment->isr.size() != nodes) return false;
          }
          return true;
        },
        settle_timeout, 50ms);
    if (!synced) ADD_FAILURE() << "the in-sync sets never filled: " << describe_assignments();
    return synced;
  }

  // Waits until etcd names another leader of `partition` than `leader`; that leader, or 0.
  uint32_t wait_new_leader(uint32_t partition, uint32_t leader) {
    uint32_t now = leader;
    wait_until([&] { return (now = cluster_.owner_of(0, 0, partition)) != leader && now != 0; },
               settle_timeout, 20ms);
    return now == leader ? 0 : now;
  }

  // Each partition's assignment in etcd, or only `only`'s.
  std::string describe_assignments(std::optional<uint32_t> only = std::nullopt) {
    std::string text;
    for (uint32_t p = 0; p < partitions; p++) {
      if (only && *only != p) continue;
      const auto assignment = cluster_.assignment_of(0, 0, p);
      text += "\n  partition " + std::to_string(p) + ": ";
      if (!assignment) {
        text += "none";
        continue;
      }
      text += "leader " + std::to_string(assignment->node) + " at epoch " +
              std::to_string(assignment->epoch) + ", in sync:";
      for (const uint32_t id : assignment->isr) text += " " + std::to_string(id);
    }
    return text;
  }

  // SIGKILL the leader, wait for another to lead, start it again. The new leader, or 0.
  uint32_t kill_leader(uint32_t leader, uint32_t partition) {
    cluster_.kill(leader);
    // Links held to isolate it (isolate_leader()) relay again for its next life; only once it
    // is dead, so that nothing it held can reach a follower.
    proxies_[leader - 1].drop_all();
    const uint32_t successor = wait_new_leader(partition, leader);
    const std::string restarted = cluster_.restart(leader);
    if (!restarted.empty()) {
      ADD_FAILURE() << "node " << leader << " did not restart: " << restarted;
      return 0;
    }
    node_started(leader);
    return successor;
  }

  // SIGSTOP the leader past its lease, with a send of its own client waiting in its socket
  // that runs when it continues, while it may still believe it leads: the Jepsen case of a
  // deposed leader. Acknowledged, the send must be in the new leader's log. It waits longer
  // than the pause, so its answer is seen. The new leader, or 0.
  uint32_t pause_leader(int cycle, uint32_t leader, uint32_t partition) {
    const pid_t pid = cluster_.node(leader).pid();
    client::Client stale(client::ClientOptions{.command_timeout = 20s});
    const bool connected =
        stale.connect(cluster_.node(leader).address()).ok() && stale.login("iggy", "iggy").ok();
    stopped_node_ = leader;
    ::kill(pid, SIGSTOP);
    const auto paused = SteadyClock::now();
    std::atomic<bool> sending{false};
    std::thread stale_send;
    if (connected) {
      stale_send = std::thread([&] {
        const std::string payload = "stale-" + std::to_string(cycle);
        const size_t id = history_.invoke_send(98, leader, partition, payload);
        sending.store(true);
        const Status sent = send_to_partition(stale, partition, payload);
        history_.complete_send(id, sent.ok() ? Outcome::ok : failure_outcome(sent.error(), stale),
                               sent.ok() ? 0 : error_code(sent.error()));
        std::cerr << "cycle " << cycle << ": the send queued at stopped node " << leader
                  << " was answered " << (sent.ok() ? "ok" : error_name(sent.error())) << "\n";
      });
    }
    const uint32_t successor = wait_new_leader(partition, leader);
    wait_until([&] { return !connected || sending.load(); });
    ::kill(pid, SIGCONT);
    stopped_node_ = 0;
    history_.pause(leader, paused, SteadyClock::now());
    if (stale_send.joinable()) stale_send.join();
    return successor;
  }

  // Cut at random every link through the leader's proxy (forwarded sends and the followers'
  // fetches) until enough were cut under load, then relay again. Nobody died: the leader may
  // stay. The leader, or 0 if the cuts did not happen.
  uint32_t cut_links(int cycle, uint32_t leader) {
    LinkProxy& proxy = proxies_[leader - 1];
    const uint64_t cuts = proxy.cuts();
    proxy.chaos(seed_ + static_cast<uint64_t>(cycle), 4000);
    proxy.drop_all();
    const bool cut = wait_until([&] { return proxy.cuts() >= cuts + 20; }, settle_timeout);
    proxy.calm();
    proxy.drop_all();
    if (!cut) {
      ADD_FAILURE() << "the links to node " << leader << " were cut only " << proxy.cuts() - cuts
                    << " times";
      return 0;
    }
    return leader;
  }

  // Hold every link of the leader of `partition` (followers get nothing more from it), have
  // a consumer of its own poll from its end while a client of its own sends to it, then SIGKILL
  // it before it can ask the followers out of its in-sync set (Replication::lag_max, 2 s): a
  // follower leads without the send, which the old leader cuts when it returns. A poll must
  // not have returned it (the checker's unstable read). The new leader, or 0.
  uint32_t isolate_leader(int cycle, uint32_t partition) {
    // Every in-sync follower holds what was acknowledged last: none is about to be asked out.
    if (!wait_in_sync() || !wait_serving("isolation" + std::to_string(cycle))) return 0;
    const uint32_t leader = cluster_.owner_of(0, 0, partition);
    const std::string address = leader == 0 ? "" : cluster_.node(leader).address();
    client::Client consumer(client::ClientOptions{.command_timeout = 5s});
    client::Client producer(client::ClientOptions{.command_timeout = 5s});
    if (address.empty() || !consumer.connect(address).ok() ||
        !consumer.login("iggy", "iggy").ok() || !producer.connect(address).ok() ||
        !producer.login("iggy", "iggy").ok()) {
      ADD_FAILURE() << "no client of the leader " << leader << " of partition " << partition;
      return 0;
    }
    LinkProxy& proxy = proxies_[leader - 1];
    proxy.hold(LinkProxy::Direction::to_owner);
    proxy.hold(LinkProxy::Direction::to_entry);
    // The partition's end as the leader serves it now: nothing can commit past it any more.
    const auto last = consumer.poll_messages(
        poll_request(97, partition, {protocol::PollingKind::last, 0}, 1, 0us));
    const std::vector<uint64_t> ends =
        last.ok() ? offsets_of(last->messages()) : std::vector<uint64_t>{};
    const uint64_t from = ends.empty() ? 0 : ends.back() + 1;
    const std::string isolated = "isolated-" + std::to_string(cycle);
    std::thread send([&] {
      const size_t id = history_.invoke_send(96, leader, partition, isolated);
      const Status sent = send_to_partition(producer, partition, isolated);
      history_.complete_send(id, sent.ok() ? Outcome::ok : failure_outcome(sent.error(), producer),
                             sent.ok() ? 0 : error_code(sent.error()));
    });
    // Read on from the end until the isolated send, or an answer at the deadline (nothing
    // commits). The first answers may hold messages the followers fetched before the hold, still
    // on their way to the leader's disk when `last` was read: stable, so a leader that serves
    // its own write is only caught past them (the send, or a send of the workload's clients
    // that reach this node directly). Polls answered at once take milliseconds, well within
    // lag_max.
    uint64_t next = from;
    size_t returned = 0;
    bool reached = false;
    for (int poll = 0; poll < 20 && !reached; poll++) {
      const size_t id = history_.invoke_poll(97, leader, partition, next, poll_wait);
      auto polled = consumer.poll_messages(
          poll_request(97, partition, offset_strategy(next), 100, poll_wait));
      if (!polled.ok()) {
        history_.complete_poll(id, failure_outcome(polled.error(), consumer),
                               error_code(polled.error()));
        break;
      }
      std::vector<History::Message> messages;
      const std::vector<uint64_t> offsets = offsets_of(polled->messages());
      const std::vector<std::string> payloads = payloads_of(polled->messages());
      for (size_t i = 0; i < offsets.size(); i++) {
        messages.push_back({offsets[i], payloads[i]});
        reached = reached || payloads[i] == isolated;
      }
      history_.complete_poll(id, Outcome::ok, 0, std::move(messages));
      if (offsets.empty()) break;
      returned += offsets.size();
      next = offsets.back() + 1;
    }
    std::cerr << "cycle " << cycle << ": the polls at isolated node " << leader << " from offset "
              << from << " returned " << returned << " messages"
              << (reached ? ", the isolated send among them" : "") << "\n";
    const uint32_t successor = kill_leader(leader, partition);
    send.join();  // Its connection died with the leader.
    return successor;
  }

  // The cycle's fault on the leader of `partition`; false (and a test failure) if the cluster
  // did not fail over as it must.
  bool inject(int cycle, uint32_t partition) {
    const uint32_t leader = cluster_.owner_of(0, 0, partition);
    if (leader == 0) {
      ADD_FAILURE() << "partition " << partition << " has no leader";
      return false;
    }
    const auto started = SteadyClock::now();
    static constexpr const char* faults[] = {"SIGKILL", "SIGSTOP", "link cuts, then isolation"};
    const char* fault = faults[cycle % 3];
    // The link faults share a cycle, so that the CI's 3 cycles run every kind.
    const uint32_t successor = cycle % 3 == 0   ? kill_leader(leader, partition)
                               : cycle % 3 == 1 ? pause_leader(cycle, leader, partition)
                               : cut_links(cycle, leader) != 0 ? isolate_leader(cycle, partition)
                                                               : 0;
    const auto took = std::chrono::duration<double>(SteadyClock::now() - started).count();
    std::cerr << "cycle " << cycle << ": " << fault << " on node " << leader << ", leader of "
              << partition << "; " << (successor == 0 ? "no" : std::to_string(successor))
              << " leader after " << took << " s\n";
    if (successor == 0) {
      ADD_FAILURE() << "cycle " << cycle << ": no other replica led partition " << partition
                    << " after " << fault << " of node " << leader << describe_assignments();
      return false;
    }
    return true;
  }

  // True once the node's process ended on its own: a zombie, not reaped yet (HarkdProcess
  // reaps it in stop()).
  bool died(uint32_t id) {
    std::ifstream stat("/proc/" + std::to_string(cluster_.node(id).pid()) + "/stat");
    std::string pid, name, state;
    stat >> pid >> name >> state;
    return state == "Z";
  }

  // Restarts every node that died on its own, each death a failure reported with its stderr,
  // so that the faults go on and the final read comes from a whole cluster: a partition
  // without a quorum serves no more than the commit point it knew, which would read as loss.
  void heal() {
    for (uint32_t id = 1; id <= nodes; id++) {
      if (!died(id)) continue;
      const std::string tail = cluster_.node(id).stderr_tail(15);
      const ProcessExit exit = cluster_.node(id).stop();
      ADD_FAILURE() << "node " << id << " died: " << describe(exit) << "\n" << tail;
      std::cerr << "node " << id << " died (" << describe(exit) << "); restarting it\n";
      const std::string restarted = cluster_.restart(id);
      if (!restarted.empty()) {
        ADD_FAILURE() << "node " << id << " did not restart: " << restarted;
        continue;
      }
      node_started(id);
    }
  }

  // Every message of `partition` read from its leader with immediate polls, offsets 0..end.
  std::vector<History::Message> read_all(uint32_t partition) {
    std::vector<History::Message> out;
    const uint32_t leader = cluster_.owner_of(0, 0, partition);
    auto client = cluster_.connect(leader);
    EXPECT_NE(client, nullptr) << "leader " << leader << " of partition " << partition;
    if (client == nullptr) return out;
    while (true) {
      auto polled =
          client->poll_messages(poll_request(1, partition, offset_strategy(out.size()), 1000, 0us));
      EXPECT_TRUE(polled.ok()) << "partition " << partition << " via its leader " << leader;
      if (!polled.ok() || polled->messages().count() == 0) return out;
      const std::vector<uint64_t> offsets = offsets_of(polled->messages());
      const std::vector<std::string> payloads = payloads_of(polled->messages());
      for (size_t i = 0; i < offsets.size(); i++) out.push_back({offsets[i], payloads[i]});
      if (offsets.back() + 1 != out.size()) return out;  // A gap: the checker reports it.
    }
  }

  std::array<LinkProxy, nodes> proxies_;
  LocalCluster cluster_;
  Addresses addresses_;
  History history_;
  const uint64_t seed_ = test_seed();
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> acknowledged_{0};
  std::vector<std::thread> clients_;
  uint32_t stopped_node_ = 0;  // SIGSTOPped now (TearDown continues it).
};

TEST_F(ReplicationFaults, EveryAcknowledgedSendSurvivesKillsPausesAndLinkCutsOnce) {
  const int cycles = fault_cycles();
  ASSERT_TRUE(wait_serving("start"));
  start_clients();
  // Some sends go through before the first fault.
  ASSERT_TRUE(wait_until([&] { return acknowledged_.load() >= 30; }, settle_timeout));
  int done = 0;
  for (int cycle = 0; cycle < cycles; cycle++) {
    heal();
    if (!wait_in_sync()) break;
    const uint64_t before = acknowledged_.load();
    if (!inject(cycle, static_cast<uint32_t>(cycle) % partitions)) break;
    if (!wait_serving("cycle" + std::to_string(cycle))) break;
    // The clients go on through the recovered cluster before the next fault.
    if (!wait_until([&] { return acknowledged_.load() >= before + 30; }, settle_timeout)) {
      ADD_FAILURE() << "the producers acknowledged nothing new after cycle " << cycle;
      break;
    }
    done++;
  }
  stop_clients();
  heal();
  EXPECT_TRUE(wait_in_sync());  // Each leader's commit point is then its whole log.
  for (uint32_t p = 0; p < partitions; p++) {
    std::vector<History::Message> messages = read_all(p);
    std::cout << "[ faults   ] final read of partition " << p << ": " << messages.size()
              << " messages;" << describe_assignments(p) << "\n";
    history_.final_read(p, std::move(messages));
  }

  const std::vector<std::string> violations = history_.check(poll_slack);
  const History::Summary summary = history_.summary();
  std::cout << "faults: cycles=" << done << " acknowledged=" << summary.acknowledged
            << " lost=" << summary.lost << " duplicates=" << summary.duplicates
            << " polls=" << summary.polls << "\n";
  std::cout << "[ faults   ] " << summary.sends << " send attempts, " << summary.polled_messages
            << " messages polled, " << violations.size() << " violations (seed " << seed_ << ")\n";
  constexpr size_t shown = 20;
  for (size_t i = 0; i < violations.size() && i < shown; i++) {
    ADD_FAILURE() << violations[i];
  }
  EXPECT_EQ(violations.size(), 0u) << "(the first " << shown << " are listed above)";
  EXPECT_EQ(done, cycles);
  for (uint32_t id = 1; id <= nodes; id++) {
    const ProcessExit exit = cluster_.node(id).stop();
    EXPECT_TRUE(exit.clean()) << "node " << id << ": " << describe(exit) << "\n"
                              << cluster_.node(id).stderr_tail();
  }
}

}  // namespace
}  // namespace hark::test
