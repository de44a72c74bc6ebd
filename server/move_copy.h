#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "hark/core/broker/operations.h"
#include "hark/core/partition_key.h"
#include "hark/io/timer_wheel.h"
#include "hark/protocol/writer.h"
#include "hark/server/cluster/cluster_view.h"
#include "hark/server/cluster/link_protocol.h"
#include "hark/server/node_link.h"

namespace hark::server {

// The target's side of a partition move (docs/cluster.md §Moves): B copies the partition from
// its owner A over the node link, then fences A, copies the tail and the stored offsets, and
// reports the move ready. One MoveCopy per planned move to this node, run by shard 0's
// MoveCopies; its writes go through the broker to the partition's owner shard (AppendStored,
// StoreOffset), like any client's.
//
//   copying: fetch from B's end (link_fetch_code) → AppendStored the stored bytes → again;
//            an empty answer: caught up →
//   fencing: a fenced fetch; A stops admitting sends and answers its end and offsets →
//   tail:    fetch and append up to that end →
//   offsets: StoreOffset each consumer's and group's offset →
//   ready:   pushed to the coordination thread (ShardReports), which marks the move ready.
// A failed fetch (link down, A not knowing the move yet) or a refused append is retried after a
// backoff (100 ms doubling to 2 s), from B's end as the append left it; nothing is lost or
// written twice (an append must start at B's end).
class MoveCopy final : private Forward, private io::Timer {
 public:
  MoveCopy(ShardServer& shard, const core::PartitionKey& key, const cluster::Move& move);
  ~MoveCopy();
  MoveCopy(const MoveCopy&) = delete;
  MoveCopy& operator=(const MoveCopy&) = delete;

  void start();
  // The move went away (committed, abandoned) or changed: nothing more is sent; idle() once
  // nothing is in flight.
  void stop();
  bool idle() const { return !in_flight_ && !armed(); }
  const cluster::Move& move() const { return move_; }

 private:
  enum class Phase : uint8_t { copying, fencing, tail, offsets, ready };

  template <typename Op>
  class CopyOp final : public Op {
   public:
    explicit CopyOp(MoveCopy& copy) : copy_(copy) {}
    void done() override { copy_.op_done(this->status()); }

   private:
    MoveCopy& copy_;
  };

  void forward_done(Result<std::span<const std::byte>> response) override;
  void expire() override;
  void fetch(bool fence);
  // Handles a fetch's Iggy response; an error retries.
  Status take_answer(std::span<const std::byte> response);
  Status take_messages(std::span<const std::byte> payload);
  Status take_fence(std::span<const std::byte> payload);
  void op_done(const Status& status);
  void next();
  void store_next_offset();
  void retry(const char* what, Error error);
  void report_ready();

  ShardServer& shard_;
  const core::PartitionKey key_;
  const cluster::Move move_;
  Phase phase_ = Phase::copying;
  bool in_flight_ = false;
  bool stopped_ = false;
  uint64_t end_ = 0;         // B's end: where the next fetch starts.
  uint64_t fenced_end_ = 0;  // A's end once fenced.
  Duration delay_;
  protocol::Bytes messages_;  // The stored bytes being appended.
  cluster::LinkStoredOffsets offsets_;
  size_t next_offset_ = 0;
  std::unique_ptr<CopyOp<core::AppendStored>> append_;
  std::unique_ptr<CopyOp<core::StoreOffset>> store_;
};

// Shard 0's MoveCopy per move this node is the target of: started when a view shows a planned
// move to this node, stopped when the move goes away or changes.
class MoveCopies {
 public:
  explicit MoveCopies(ShardServer& shard) : shard_(shard) {}
  void on_view(const cluster::ClusterView& view);
  void stop();
  bool busy() const;
  // Frees the stopped copies nothing is in flight for.
  void collect();

 private:
  ShardServer& shard_;
  std::map<core::PartitionKey, std::unique_ptr<MoveCopy>> copies_;
  std::vector<std::unique_ptr<MoveCopy>> stopping_;
};

}  // namespace hark::server
