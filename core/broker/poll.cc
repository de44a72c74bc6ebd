// Poll: evaluated at the partitions' owners, parked at home (docs/long-polling.md,
// docs/architecture.md §4).
//
//   home: resolve, deadline ──► owner of each partition in turn (one, or a group member's
//         assignment): start offset, read; the first with messages ends the tour
//   ──► home: messages? answer : park on every partition visited
//   parked ──► a commit wins it at an owner, which reads the new messages and hands them back
//              with the registration ──► home: answer (no further hop)
//          ──► timeout / purge / shutdown: answer empty;  delete: the error a poll gets now
//          ──► woken but nothing to read (owner could not read from memory, a strategy that
//              needs a fresh look), or the group rebalanced: evaluate again, re-park with the
//              original deadline.
#include <algorithm>

#include "core/broker/broker.h"
#include "core/broker/internal/broker_shard.h"

namespace hark::core {

using internal::BrokerShard;
using internal::PartitionCell;

void Poll::step(BrokerShard& shard) {
  switch (stage_) {
    case Stage::start: begin(shard); return;
    case Stage::at_owner: evaluate_at_owner(shard); return;
    case Stage::at_home: evaluated_at_home(shard); return;
    case Stage::cancelled:
      cells_.clear();
      finish(shard, Error::disconnected);
      return;
    default: HARK_UNREACHABLE();
  }
}

void Poll::begin(BrokerShard& shard) {
  result = PollResult{};
  wait_ = nullptr;
  cancel_requested_ = false;
  woken_ = false;
  group_wide_ = false;
  cells_.clear();
  if (consumer.kind == ConsumerRef::Kind::group) {
    const Status resolved = resolve_group(shard);
    if (!resolved.ok()) {
      finish(shard, resolved);
      return;
    }
  }
  if (!group_wide_) {
    auto cell = shard.catalog().partition(stream, topic, partition.value_or(0));
    if (!cell.ok()) {
      finish(shard, cell.error());
      return;
    }
    cells_.push_back(std::move(cell).value());
  }
  const Duration clamped = std::clamp(wait, Duration(0), shard.options().max_wait);
  deadline_ = saturating_add(shard.reactor().clock().monotonic_now(), clamped);
  if (cells_.empty()) {
    // A member with no partitions (more members than partitions): nothing to read or wait
    // on until a rebalance; answered empty at once.
    finish(shard, ok_status());
    return;
  }
  result.partition_id = cells_.front()->key.partition.value();
  if (!group_wide_) result.owner_shard = cells_.front()->owner();
  if (count == 0) {
    result.current_offset = cells_.front()->current_offset();
    answer(shard);
    return;
  }
  evaluate(shard);
}

Status Poll::resolve_group(BrokerShard& shard) {
  HARK_TRY_ASSIGN(const internal::TopicEntry* const entry, shard.catalog().topic(stream, topic));
  HARK_TRY_ASSIGN(const internal::GroupEntry* const found, entry->group(group));
  consumer.id = found->id;
  const GroupMemberInfo* const joined = found->member(member);
  if (joined == nullptr) return Error::consumer_group_member_not_found;
  if (partition.has_value()) return ok_status();
  group_wide_ = true;
  assigned_ = joined->partitions;
  // Round robin over the assignment, as Iggy 0.8.0: each poll starts one further. An
  // immediate poll reads that one partition only, as Iggy does (empty if it is; clients such
  // as Iggy's Node SDK count on it); a poll that may wait reads on from there and waits on
  // the whole assignment, so a send to any assigned partition answers it.
  const size_t first =
      assigned_.empty() ? 0 : shard.next_group_start(*found, member) % assigned_.size();
  const size_t read = wait > Duration(0) ? assigned_.size() : std::min<size_t>(1, assigned_.size());
  for (size_t i = 0; i < read; i++) {
    cells_.push_back(entry->partitions[assigned_[(first + i) % assigned_.size()]]);
  }
  return ok_status();
}

void Poll::evaluate(BrokerShard& shard) {
  status_ = ok_status();
  watches_.clear();
  visiting_ = 0;
  result.messages = storage::ReadView();
  visit_next(shard);
}

void Poll::visit_next(BrokerShard& shard) {
  const ShardId owner = cells_[visiting_]->owner();
  if (owner == shard.id()) {
    evaluate_at_owner(shard);
  } else {
    go_to(shard, owner, Stage::at_owner);
  }
}

void Poll::evaluate_at_owner(BrokerShard& shard) {
  PartitionCell& cell = *cells_[visiting_];
  internal::Partition* const owner = shard.owned(cell);
  if (owner == nullptr) {
    // Deleted, or (for a group member right after a rebalance) not opened by its owner yet:
    // a member skips it and waits on the rest; a single-partition poll gets the error.
    if (!group_wide_) status_ = Error::partition_not_found;
    evaluated_here(shard);
    return;
  }
  const Result<Offset> first = owner->start_for(from, value, count, consumer);
  if (!first.ok()) {
    status_ = first.error();
    evaluated_here(shard);
    return;
  }
  // The owner can read for a woken poll only where `want` is where the poll reads from.
  const bool owner_reads = from == PollFrom::offset || from == PollFrom::next;
  watches_.push_back(Watch{.point = &cell,
                           .want = *first,
                           .min_messages = std::max<uint32_t>(1, min_messages),
                           .epoch = cell.snapshot().epoch,
                           .read_count = owner_reads ? count : 0});
  owner->log().read(*first, count, shard.options().poll_bytes_max, reader_);
}

void Poll::Reader::read_done(Result<storage::ReadView> view) {
  BrokerShard& shard = *BrokerShard::current();
  if (view.ok()) {
    poll_.result.messages = std::move(view).value();
  } else {
    poll_.status_ = view.error();
  }
  poll_.evaluated_here(shard);
}

// At an owner, after one partition: on to the next owner, or home.
void Poll::evaluated_here(BrokerShard& shard) {
  const PartitionCell& cell = *cells_[visiting_];
  if (status_.ok() && result.messages.empty() && visiting_ + 1 < cells_.size()) {
    visiting_++;
    visit_next(shard);
    return;
  }
  if (status_.ok() && !result.messages.empty()) {
    result.partition_id = cell.key.partition.value();
    result.current_offset = cell.current_offset();
  } else {
    report_waited_on();
  }
  if (shard.id() == home_) {
    evaluated_at_home(shard);
  } else {
    go_to(shard, home_, Stage::at_home);
  }
}

void Poll::evaluated_at_home(BrokerShard& shard) {
  if (status_.error() == Error::partition_not_found) {
    answer_gone(shard);
  } else if (!status_.ok()) {
    cells_.clear();
    finish(shard, status_);
  } else if (cancel_requested_) {
    cells_.clear();
    finish(shard, Error::disconnected);
  } else if (!result.messages.empty() || wait <= Duration(0) || shard.shutting_down() ||
             shard.reactor().clock().monotonic_now() >= deadline_) {
    answer(shard);
  } else {
    park(shard);
  }
}

void Poll::park(BrokerShard& shard) {
  // Parked polls hold partitions by their commit points, which live as long as a catalog
  // lists them: park only on partitions this shard still sees (then none is retired yet).
  for (const auto& cell : cells_) {
    if (shard.catalog().find(cell->key) != cell.get()) {
      answer_gone(shard);
      return;
    }
  }
  if (group_wide_ && !shard.group_unchanged(*this)) {
    reassigned(shard);  // The group rebalanced while the poll was away.
    return;
  }
  if (watches_.empty()) {
    answer_empty(shard);  // Nothing to wait on (see evaluate_at_owner).
    return;
  }
  std::atomic<uint64_t>& total = shard.parked_total();
  if (total.fetch_add(1, std::memory_order_relaxed) >= shard.options().parked_total_max) {
    total.fetch_sub(1, std::memory_order_relaxed);
    cells_.clear();
    finish(shard, Error::feature_unavailable);
    return;
  }
  if (woken_) shard.poll_counters().reparked++;
  const Result<ParkResult> parked = shard.waits().park(watches_, deadline_, *this, 0);
  if (!parked.ok()) {
    total.fetch_sub(1, std::memory_order_relaxed);
    cells_.clear();
    finish(shard, parked.error());
    return;
  }
  if (parked->state == WaitState::waiting) {
    wait_ = parked->wait;
    if (group_wide_) shard.park_group_poll(*this);
    return;
  }
  total.fetch_sub(1, std::memory_order_relaxed);
  // Committed, purged, deleted or moved between the evaluation and the push: evaluate again
  // (which answers a deleted partition's error, or parks in the new epoch). The abort reason
  // is not read here: an owner publishes it with the hand-back, which has not come yet.
  evaluate(shard);
}

void Poll::unpark(BrokerShard& shard) {
  wait_ = nullptr;
  shard.parked_total().fetch_sub(1, std::memory_order_relaxed);
  if (group_wide_) shard.unpark_group_poll(*this);
}

void Poll::on_wait_done(Wait& parked, WaitState state, Registration* winner) {
  BrokerShard& shard = *BrokerShard::current();
  unpark(shard);
  switch (state) {
    case WaitState::notified: {
      storage::ReadView view = winner != nullptr ? winner->take_view() : storage::ReadView();
      if (!view.empty()) {
        const auto& cell = static_cast<const PartitionCell&>(winner->point());
        result.messages = std::move(view);
        result.partition_id = cell.key.partition.value();
        result.current_offset = cell.current_offset();
        answer(shard);
      } else {
        woken_ = true;
        shard.poll_counters().reevaluated++;
        evaluate(shard);
      }
      return;
    }
    case WaitState::aborted: on_abort(shard, parked.abort_reason()); return;
    default: answer_empty(shard); return;
  }
}

void Poll::rebalanced(BrokerShard& shard) {
  shard.waits().cancel(*wait_);
  unpark(shard);
  woken_ = true;
  reassigned(shard);
}

void Poll::reassigned(BrokerShard& shard) {
  // The group or the member may be gone: resolve again, keeping the deadline.
  cells_.clear();
  const Status resolved = resolve_group(shard);
  if (!resolved.ok()) {
    finish(shard, resolved);
    return;
  }
  if (cells_.empty()) {
    answer(shard);
    return;
  }
  evaluate(shard);
}

void Poll::on_abort(BrokerShard& shard, AbortReason reason) {
  switch (reason) {
    case AbortReason::deleted: answer_gone(shard); return;
    case AbortReason::moved:
      evaluate(shard);  // Asks the new owner, keeping the deadline.
      return;
    default:
      answer_empty(shard);  // Purge, shutdown.
      return;
  }
}

void Poll::report_waited_on() {
  // The partition waited on; for a group member, the first one assigned to it (docs/long-polling.md
  // §When a poll parks).
  const PartitionCell* reported = cells_.front().get();
  for (const auto& cell : cells_) {
    if (group_wide_ && cell->key.partition.value() == assigned_.front()) reported = cell.get();
  }
  result.partition_id = reported->key.partition.value();
  result.current_offset = reported->current_offset();
}

void Poll::answer(BrokerShard& shard) {
  cells_.clear();
  finish(shard, ok_status());
}

void Poll::answer_empty(BrokerShard& shard) {
  result.messages = storage::ReadView();
  report_waited_on();
  answer(shard);
}

void Poll::answer_gone(BrokerShard& shard) {
  // The error an immediate poll gets now: 1009/1010, 2010/2011, 3007, or the group's; a
  // group member polling its assignment is evaluated again on what it has now.
  cells_.clear();
  if (consumer.kind == ConsumerRef::Kind::group) {
    const Status resolved = resolve_group(shard);
    if (!resolved.ok()) {
      cells_.clear();
      finish(shard, resolved);
      return;
    }
    if (group_wide_) {
      if (cells_.empty()) {
        answer(shard);
      } else {
        evaluate(shard);
      }
      return;
    }
  }
  const auto again = shard.catalog().partition(stream, topic, partition.value_or(0));
  finish(shard, again.ok() ? Status(Error::partition_not_found) : Status(again.error()));
}

}  // namespace hark::core
