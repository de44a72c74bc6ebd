#include "hark/core/broker/internal/flow.h"

#include "hark/core/broker/internal/broker_shard.h"

namespace hark::core {

void Operation::run() {
  internal::BrokerShard* const shard = internal::BrokerShard::current();
  HARK_ASSERT(shard != nullptr);  // Operations run on the broker's shards only.
  internal::Flow::run(*this, *shard);
}

namespace internal {

void Flow::start(Operation& op, BrokerShard& shard) {
  HARK_ASSERT(BrokerShard::current() == &shard);
  op.status_ = ok_status();
  op.stage_ = Stage::start;
  op.home_ = shard.id();
  shard.operation_started();
  op.step(shard);
}

void Flow::start_outside(Operation& op) {
  op.status_ = ok_status();
  op.stage_ = Stage::start;
  op.home_ = ShardId(0);
}

void Flow::run(Operation& op, BrokerShard& shard) {
  switch (op.stage_) {
    case Stage::start:
      // Submitted from outside the broker: its home counts it from its first step.
      shard.expect_on(op.home_);
      shard.operation_started();
      op.step(shard);
      return;
    case Stage::deliver:
      shard.expect_on(op.home_);
      shard.operation_done();
      op.done();
      return;
    case Stage::settled: finish(op, shard, ok_status()); return;
    default: op.step(shard); return;
  }
}

void Flow::finish(Operation& op, BrokerShard& shard, Status status) {
  HARK_ASSERT(BrokerShard::current() == &shard);
  op.status_ = std::move(status);
  if (shard.id() == op.home_) {
    shard.operation_done();
    op.done();
    return;
  }
  go_to(op, shard, op.home_, Stage::deliver);
}

void Flow::finish_after_settle(Operation& op, BrokerShard& shard) {
  HARK_ASSERT(BrokerShard::current() == &shard);
  op.stage_ = Stage::settled;
  shard.waits().after_settle(op);
}

void Flow::go_to(Operation& op, BrokerShard& shard, ShardId target, Stage stage) {
  HARK_ASSERT(BrokerShard::current() == &shard);
  HARK_ASSERT(target.value() < shard.broker().shards_count());
  op.stage_ = stage;
  shard.reactor().post(target, op);
}

}  // namespace internal
}  // namespace hark::core
