#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hark/core/base/clock.h"
#include "hark/core/broker/operations.h"
#include "hark/core/broker/replication_operations.h"
#include "hark/core/partition_key.h"
#include "hark/io/timer_wheel.h"
#include "hark/protocol/writer.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/link_protocol.h"
#include "hark/server/node_link.h"

namespace hark::server {

class ShardServer;

// The data path of replication in harkd (docs/cluster.md §Replication, The data path), run by
// shard 0 of every cluster node; the core does the rest (core/broker/replication_operations.h).
// The view gives every replica of a partition its place (ShardServer::host_assigned): the
// leader commits only what every in-sync member and a majority hold; a follower takes no send.

// A follower's copy of one partition from its leader, at one epoch and member set:
//
//   ends:     Replicate (follower): this log's ends and the last epoch its replica state
//             records. That epoch already: fetch from the durable end. Else, a new epoch:
//   probe:    one fetch from the commit point it knows (true of every replica: never refused)
//             that brings the leader's epoch start →
//   truncate: cut to where this log and the leader's can differ (below), recording the epoch →
//   fetch:    from the durable end, parked at the leader until the next append or change of
//             its stored offsets (its `from` acknowledges everything below) → AppendStored
//             what came → AdoptOffsets if the leader's offsets came (the fetch names the
//             version it holds) → Replicate (learn the leader's commit point; while copying, at
//             most every 100 ms) → fetch again.
// Where to cut: a log whose state records epoch e - 1 holds a prefix of e - 1's log, as does
// the new leader's, so they agree up to the shorter, and the leader's is at least its epoch
// start: cut to min(appended end, epoch start). A log that missed an epoch may hold what no
// leader kept: cut to its commit point, which every later leader holds.
// Any failure (link down, the leader not there yet, a refused fetch) starts over at `ends`
// after a backoff (100 ms doubling to 1 s); nothing is stored twice (an append starts at the
// log's end) and nothing unconfirmed is acknowledged (a fetch's `from` is always durable here).
class ReplicaFetcher final : private Forward, private io::Timer {
 public:
  ReplicaFetcher(ShardServer& shard, const core::PartitionKey& key,
                 const cluster::Assignment& assignment, const core::ReplicaPlace& place);
  ~ReplicaFetcher();
  ReplicaFetcher(const ReplicaFetcher&) = delete;
  ReplicaFetcher& operator=(const ReplicaFetcher&) = delete;

  void start();
  // Nothing more is sent; idle() once nothing is in flight.
  void stop();
  bool idle() const { return !in_flight_ && !armed(); }
  // Fetching from this leader in this epoch and member set already (a change of the leader's
  // in-sync set is not the follower's business).
  bool follows(uint32_t leader, const core::ReplicaPlace& place) const {
    return leader == leader_ && place.epoch == place_.epoch && place.set == place_.set &&
           place.replicas == place_.replicas;
  }

 private:
  enum class Step : uint8_t { ends, probe, truncate, fetch, append, offsets, learn };

  template <typename Op>
  class FetcherOp final : public Op {
   public:
    explicit FetcherOp(ReplicaFetcher& fetcher) : fetcher_(fetcher) {}
    void done() override { fetcher_.op_done(this->status()); }

   private:
    ReplicaFetcher& fetcher_;
  };

  template <typename Op>
  Op& address(std::unique_ptr<FetcherOp<Op>>& slot);
  // A Replicate in this fetcher's place, addressed, in flight once submitted.
  core::Replicate& follower_op();
  void query_ends();
  void fetch(uint64_t from, uint32_t count, Duration wait);
  void forward_done(Result<std::span<const std::byte>> response) override;
  Status take_answer(std::span<const std::byte> response);
  void truncate(uint64_t end);
  // After a fetch's messages are stored: the leader's offsets if they came, then learn.
  void copied();
  void learn(uint64_t commit);
  void op_done(const Status& status);
  void retry(const char* what, Error error);
  void expire() override;

  ShardServer& shard_;
  const core::PartitionKey key_;
  const uint32_t leader_;
  const core::ReplicaPlace place_;
  Step step_ = Step::ends;
  bool in_flight_ = false;
  bool stopped_ = false;
  bool cut_to_commit_ = false;  // The leader refused our end: cut to the commit point.
  uint64_t from_ = 0;           // This log's durable end: where the next fetch starts.
  uint64_t commit_ = 0;         // The commit point this log knows.
  uint64_t learned_ = 0;        // The leader's commit point last handed to the core.
  Instant learned_at_{};
  uint64_t recorded_epoch_ = 0;
  uint64_t appended_ = 0;
  cluster::ReplicaFetchAnswer leader_ends_;  // The last answer's, without `poll`.
  uint64_t offsets_version_ = 0;             // Of the leader's offsets this log holds.
  Duration delay_;
  protocol::Bytes messages_;
  std::unique_ptr<FetcherOp<core::Replicate>> replicate_;
  std::unique_ptr<FetcherOp<core::TruncatePartition>> truncate_;
  std::unique_ptr<FetcherOp<core::AppendStored>> append_;
  std::unique_ptr<FetcherOp<core::AdoptOffsets>> adopt_;
};

// Shard 0's replication duties:
// - as a follower, a ReplicaFetcher per partition this node follows (its leader live), started
//   and stopped as views change the leader, epoch or member set;
// - as a leader, the in-sync set: a follower whose fetches reached the log's appended end within
//   `lag_max` is caught up. One that is caught up and out of the set is counted in sync by the
//   core first (Replicate expand), then asked for in etcd (ShardReports → NodeAgent::change_isr);
//   one that is in the set and has not caught up for lag_max (after this node has led the epoch
//   that long) is asked out in etcd, and leaves the core's set when the view says so. So the
//   set the controller elects a new leader from is always within the set the commit waited for.
class Replication final : private io::Timer {
 public:
  // A follower behind for this long leaves the in-sync set (Kafka's replica.lag.time.max.ms,
  // shorter: a dead follower holds commits back until it leaves).
  static constexpr Duration lag_max = std::chrono::seconds(2);

  explicit Replication(ShardServer& shard);
  ~Replication();
  void on_view(const cluster::ClusterView& view);
  // A follower's fetch answered here (LinkHub): caught up if it read up to the appended end.
  void fetched(const core::PartitionKey& key, uint32_t follower, uint64_t epoch, bool caught_up);
  void stop();
  bool busy() const;
  void collect();

 private:
  struct Led {
    uint64_t epoch = 0;
    Instant since{};
    std::map<uint32_t, Instant> caught_up;  // Follower -> when a fetch last reached the end.
    std::optional<Instant> asked;           // An ISR change asked for, not in a view yet.
    std::vector<uint32_t> asked_isr;
  };

  void expire() override;
  void review(const core::PartitionKey& key, const cluster::Assignment& assignment, Led& led,
              Instant now);
  void ask(const core::PartitionKey& key, const cluster::Assignment& assignment, Led& led,
           std::vector<uint32_t> isr, Instant now);

  ShardServer& shard_;
  std::map<core::PartitionKey, std::unique_ptr<ReplicaFetcher>> fetchers_;
  std::vector<std::unique_ptr<ReplicaFetcher>> stopping_;
  std::map<core::PartitionKey, Led> led_;
  bool stopped_ = false;
};

}  // namespace hark::server
