#pragma once

#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "etcd_process.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/tests/e2e/harkd_process.h"
#include "hark/tests/e2e/tls_certs.h"
#include "hark/tools/client/client.h"

namespace hark::test {

// A real etcd with auth (etcd_process.h) and N harkd in cluster mode on loopback, node ids
// 1..N, for the tests labelled `cluster` (release stage only). start() returns once every node
// printed its ready line; it does not wait for the nodes to see each other (tests wait for
// what they need, e.g. members() below). kill()/restart() model a crash and a return: the
// node comes back on its data directory with the same arguments (on a new port: tests read
// address() again). The destructor kills what still runs and removes every directory. Nodes
// listen for node links on 127.0.0.1, any port, with the cluster secret of Options, and with
// mutual TLS when Options asks (certificates issued at start by a TestCa, tls_certs.h).
//
// Owned by one thread (the test's). Control plane: allocates freely.
// extra_args for a cluster whose topics keep one copy (factor 1, docs/cluster.md §Replication
// factor): for tests of forwarding, moves and links, where replicas' fetches (parked at each
// leader, and counted in its parked and woken figures) or a node without links (which holds
// commits back) would be beside the point.
inline const std::vector<std::string> single_replica_args = {"--min-replication-factor", "1"};

class LocalCluster {
 public:
  struct Options {
    uint32_t nodes = 3;
    uint32_t shards_count = 2;
    // The harkd binary every node runs; empty: the one this build made (HARK_HARKD_PATH). A
    // mutant run names a harkd built with a planted bug (tests/e2e/CMakeLists.txt).
    std::string harkd_path;
    std::string name = "e2e";
    std::string lease_ttl = "2s";
    // The cluster secret every node's links authenticate with (written 0600 to a file in
    // etcd's directory and passed as --cluster-secret-file).
    std::string secret = std::string(40, 's');
    // Appended to every node's command line.
    std::vector<std::string> extra_args;
    // Appended to one node's command line, by node id (e.g. --advertised-link-address to put
    // a LinkProxy in front of its links).
    std::map<uint32_t, std::vector<std::string>> node_args;
    // Mutual TLS on the node links (cluster.tls_*): every node gets a certificate for
    // 127.0.0.1 from one test CA, and that CA to verify its peers; the nodes listed in
    // `link_tls_other_ca` get both from another CA (so no link with them ever comes up).
    bool link_tls = false;
    std::vector<uint32_t> link_tls_other_ca;
    // Start the nodes at once, one thread each, rather than one after another. Each thread
    // lives as long as the cluster: a node gets SIGKILL when the thread that forked it ends
    // (HarkdProcess sets PR_SET_PDEATHSIG, which follows the forking thread).
    bool start_together = false;
  };

  LocalCluster() = default;
  // Kills what still runs, then lets the starting threads (start_together) end.
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Empty on success, else what failed (with the failing node's stderr tail).
  std::string start(const Options& options);
  EtcdProcess& etcd() { return etcd_; }
  uint32_t size() const { return options_.nodes; }
  // The node's current process, id 1..N.
  HarkdProcess& node(uint32_t id);
  // SIGKILL, reaped before it returns.
  void kill(uint32_t id);
  // Stops every node process still running (SIGCONT first, for one a test left SIGSTOPped) and
  // says how each that did not exit cleanly ended, with its stderr tail; empty if all did. A
  // node the test killed, or one that never started, is skipped: a test's TearDown.
  std::string stop_all();
  // Starts a killed or stopped node again on its data directory; empty on success.
  std::string restart(uint32_t id);
  // The address the node's current process listens on for links (from its "node links on"
  // log line), which is not the registered one behind --advertised-link-address; "" if none.
  std::string bound_link_address(uint32_t id);
  // Waits (bounded) until every node's view holds all N nodes: a topic created before may be
  // spread over fewer (the controller assigns to the live nodes it knows). False if it never
  // did.
  bool wait_for_all_members();
  // Through `client`: stream "s" (id 0) and its topic "t" (id 0) of `partitions` partitions, then
  // waits until every node's view assigns all of them among all N nodes. Empty on success, else
  // what failed.
  std::string create_topic_everywhere(client::Client& client, uint32_t partitions);
  // The node the controller assigned (stream, topic, partition) to (numeric ids, read from
  // etcd); 0 if none.
  uint32_t owner_of(uint32_t stream, uint32_t topic, uint32_t partition);
  // Its whole assignment (leader, epoch, replicas, isr) as etcd holds it; nullopt if none.
  std::optional<server::cluster::Assignment> assignment_of(uint32_t stream, uint32_t topic,
                                                           uint32_t partition);
  // A client connected to the node and logged in as iggy/iggy; nullptr on failure.
  std::unique_ptr<client::Client> connect(uint32_t id);
  // A client per node (keys 1..size()), each as connect() makes it, into `clients`. Empty on
  // success, else the first node that could not be reached.
  std::string connect_all(std::map<uint32_t, std::unique_ptr<client::Client>>& clients);
  // The link address the node registered in etcd; empty when it has none (yet).
  std::string link_address(uint32_t id);
  // The segment files (.log and .index) of partition `partition` of stream 0, topic 0 in node
  // `id`'s data directory: name -> bytes (names sort by start offset, .index before .log).
  std::map<std::string, std::string> segment_files(uint32_t id, uint32_t partition = 0);

 private:
  std::vector<std::string> arguments(uint32_t id) const;
  std::string start_together();
  std::string start_node(uint32_t id, const std::string& data_directory);
  void issue_link_certificates();

  Options options_;
  EtcdProcess etcd_;
  std::string secret_file_;
  // With link_tls: the two CAs (in etcd's directory) and each node's flags.
  std::unique_ptr<TestCa> link_ca_;
  std::unique_ptr<TestCa> other_ca_;
  std::vector<std::vector<std::string>> link_tls_args_;
  // Every process a node ran, the current one last: a restarted node's data directory
  // belongs to its first process, so that one lives until the cluster does.
  std::vector<std::vector<std::unique_ptr<HarkdProcess>>> runs_;
  // start_together: the threads that forked the nodes, parked until `release_` is set.
  std::promise<void> release_;
  std::vector<std::thread> starters_;
  std::vector<std::string> start_failures_;
  std::mutex started_mutex_;
  std::condition_variable started_;
  uint32_t started_count_ = 0;
};

// Every thread of `pid` is stopped (state T in /proc/<pid>/task/*/stat): a SIGSTOP is queued
// at once but takes effect as each thread is next scheduled.
bool all_threads_stopped(pid_t pid);

// How many live members code 12 reports through `client`, 0 on an error.
size_t members(client::Client& client);

}  // namespace hark::test
