#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hark/core/base/ref.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/etcd_gateway.h"
#include "hark/server/cluster/etcd_journal.h"
#include "hark/server/cluster/node_agent.h"
#include "hark/server/cluster/shard_reports.h"

namespace hark::server::cluster {

struct CoordinationOptions {
  GatewayOptions etcd;
  AgentOptions agent;
  // Metadata in etcd (etcd_journal.h): the link shard 0's EtcdJournal pushes to, and where
  // entries go. Null: no metadata journal (a test of membership alone).
  JournalLink* journal = nullptr;
  EntrySink* entries = nullptr;
  // Where each step's outcome is counted (for /metrics), or null.
  EtcdHealth* health = nullptr;
  // Moves this node copied, to mark ready (shard_reports.h). Null: none (tests).
  ShardReports* moves = nullptr;
};

// harkd's coordination thread (`hark-coord`): the only thread that talks to etcd. It steps a
// NodeAgent over an EtcdGateway in a loop (each step waits at most a sixth of the lease TTL
// for changes, so keep-alives are never late) and hands every new ClusterView to `sink`
// (harkd's Server posts it to every shard's Inbox). When etcd cannot be
// reached or refuses harkd, it logs why (etcd's own message) and retries with a backoff
// doubling from 100 ms to 5 s; meanwhile shards keep their last view. stop() leaves the
// cluster (revokes the lease, so the others see this node go at once) and joins.
// With a JournalLink it also runs the MetadataSync after each step; a push to the link ends
// the step's watch early (EtcdGateway::wake) and any backoff, so a metadata command never
// waits out a watch.
class CoordinationThread final : private JournalLink::Waker {
 public:
  // `sink` must outlive the thread (stop() before it goes).
  CoordinationThread(CoordinationOptions options, ViewSink& sink);
  ~CoordinationThread();
  CoordinationThread(const CoordinationThread&) = delete;
  CoordinationThread& operator=(const CoordinationThread&) = delete;

  void start();
  void stop();

 private:
  void run();
  // Sleeps `duration` unless stop() comes first; false when stopping.
  bool pause(Duration duration);
  // Ends the watch and any pause early (new work on the link).
  void wake() override;
  // Marks the moves the shards copied ready (etcd unreachable: kept for the next step).
  void report_moves(NodeAgent& agent);
  // The in-sync set changes shard 0 asked for (ShardReports), written with change_isr.
  void change_isrs(NodeAgent& agent);

  CoordinationOptions options_;
  ViewSink& sink_;
  std::mutex mutex_;
  std::condition_variable stopped_;
  bool stopping_ = false;
  bool woken_ = false;
  Coordinator* etcd_ = nullptr;  // While run() has one.
  std::thread thread_;
};

}  // namespace hark::server::cluster
