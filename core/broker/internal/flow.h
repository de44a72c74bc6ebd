#pragma once

#include "hark/core/base/result.h"
#include "hark/core/broker/internal/stage.h"
#include "hark/core/broker/operation.h"

namespace hark::core::internal {

class BrokerShard;

// How an operation moves between shards: the engine's half of Operation (its status, home
// shard and Stage), which the public header keeps private. An operation is one io Task: each
// hop posts the object itself to the next shard with the stage to run there, so nothing is
// allocated per operation.
class Flow {
 public:
  // Broker::submit on a shard of the broker: `shard` is the home, the first step runs now.
  static void start(Operation& op, BrokerShard& shard);
  // Broker::submit from outside the broker: home is shard 0; the caller posts `op` there.
  static void start_outside(Operation& op);
  // The task body (Operation::run): the step of the operation's stage, on `shard`.
  static void run(Operation& op, BrokerShard& shard);
  // Ends the operation with `status`: done() now if `shard` is its home, else once posted
  // there (Stage::deliver). `op` may be reused or destroyed from the moment this is called.
  static void finish(Operation& op, BrokerShard& shard, Status status);
  // finish() with ok, once this iteration's wake-ups have left (WaitShard::after_settle).
  static void finish_after_settle(Operation& op, BrokerShard& shard);
  // Posts `op` to `target`, which runs `stage` (a stage that runs there: see stage.h).
  static void go_to(Operation& op, BrokerShard& shard, ShardId target, Stage stage);

  static Stage stage(const Operation& op) { return op.stage_; }
  static ShardId home(const Operation& op) { return op.home_; }
};

}  // namespace hark::core::internal
