// Poll: evaluated at the partition's owner, parked at home (SEMANTICS.md, ARCHITECTURE §4).
//
//   home: resolve, deadline ──► owner: start offset, read ──► home: data? answer : park
//   parked ──► commit wins it at the owner, which reads the new messages and hands them back
//              with the registration ──► home: answer (no further hop)
//          ──► timeout / purge / shutdown: answer empty;  delete: the error a poll gets now
//          ──► woken but nothing to read (owner could not read from memory, strategy that
//              needs a fresh look): evaluate again and re-park with the original deadline.
#include <algorithm>

#include "core/broker/broker.h"
#include "core/broker/internal/broker_shard.h"

namespace hark::core {

using internal::BrokerShard;

void Poll::step(BrokerShard& shard) {
  switch (stage_) {
    case Stage::start: begin(shard); return;
    case Stage::at_owner: evaluate_at_owner(shard); return;
    case Stage::at_home: evaluated_at_home(shard); return;
    case Stage::cancelled:
      cell_.reset();
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
  if (!partition.has_value() && consumer.kind == ConsumerRef::Kind::group) {
    // Consumer groups (and so a group member's assigned partitions) arrive with issue 7.
    finish(shard, Error::consumer_group_member_not_found);
    return;
  }
  auto cell = shard.catalog().partition(stream, topic, partition.value_or(0));
  if (!cell.ok()) {
    finish(shard, cell.error());
    return;
  }
  cell_ = std::move(cell).value();
  result.partition_id = cell_->key.partition.value();
  const Duration clamped = std::clamp(wait, Duration(0), shard.options().max_wait);
  deadline_ = saturating_add(shard.reactor().clock().monotonic_now(), clamped);
  if (count == 0) {
    result.current_offset = cell_->current_offset();
    answer(shard);
    return;
  }
  evaluate(shard);
}

void Poll::evaluate(BrokerShard& shard) {
  if (cell_->owner() == shard.id()) {
    evaluate_at_owner(shard);
  } else {
    go_to(shard, cell_->owner(), Stage::at_owner);
  }
}

void Poll::evaluate_at_owner(BrokerShard& shard) {
  internal::Partition* const owner = shard.owned(*cell_);
  if (owner == nullptr) {
    status_ = Error::partition_not_found;
    back_home(shard);
    return;
  }
  const Result<Offset> first = owner->start_for(from, value, count, consumer);
  if (!first.ok()) {
    status_ = first.error();
    back_home(shard);
    return;
  }
  want_ = *first;
  epoch_ = cell_->snapshot().epoch;
  owner->log().read(want_, count, shard.options().poll_bytes_max, reader_);
}

void Poll::Reader::read_done(Result<storage::ReadView> view) {
  BrokerShard& shard = *BrokerShard::current();
  if (view.ok()) {
    poll_.result.messages = std::move(view).value();
  } else {
    poll_.status_ = view.error();
  }
  poll_.result.current_offset = poll_.cell_->current_offset();
  poll_.back_home(shard);
}

void Poll::back_home(BrokerShard& shard) {
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
    cell_.reset();
    finish(shard, status_);
  } else if (cancel_requested_) {
    cell_.reset();
    finish(shard, Error::disconnected);
  } else if (!result.messages.empty() || wait <= Duration(0) || shard.shutting_down() ||
             shard.reactor().clock().monotonic_now() >= deadline_) {
    answer(shard);
  } else {
    park(shard);
  }
}

void Poll::park(BrokerShard& shard) {
  // Parked polls hold the partition by its commit point, which lives as long as a catalog
  // lists it: park only on a partition this shard still sees (then it cannot be retired yet).
  if (shard.catalog().find(cell_->key) != cell_.get()) {
    answer_gone(shard);
    return;
  }
  std::atomic<uint64_t>& total = shard.parked_total();
  if (total.fetch_add(1, std::memory_order_relaxed) >= shard.options().parked_total_max) {
    total.fetch_sub(1, std::memory_order_relaxed);
    cell_.reset();
    finish(shard, Error::feature_unavailable);
    return;
  }
  if (woken_) shard.poll_counters().reparked++;
  // The owner can read for a woken poll only where `want` is where the poll reads from.
  const bool owner_reads = from == PollFrom::offset || from == PollFrom::next;
  const Watch watch{.point = cell_.get(),
                    .want = want_,
                    .min_messages = std::max<uint32_t>(1, min_messages),
                    .epoch = epoch_,
                    .read_count = owner_reads ? count : 0};
  const Result<ParkResult> parked = shard.waits().park({&watch, 1}, deadline_, *this, 0);
  if (!parked.ok()) {
    total.fetch_sub(1, std::memory_order_relaxed);
    cell_.reset();
    finish(shard, parked.error());
    return;
  }
  if (parked->state == WaitState::waiting) {
    wait_ = parked->wait;
    return;
  }
  total.fetch_sub(1, std::memory_order_relaxed);
  if (parked->state == WaitState::notified) {
    evaluate(shard);  // Committed between the evaluation and the push.
  } else {
    on_abort(shard, parked->wait->abort_reason());
  }
}

void Poll::on_wait_done(Wait& parked, WaitState state, Registration* winner) {
  BrokerShard& shard = *BrokerShard::current();
  wait_ = nullptr;
  shard.parked_total().fetch_sub(1, std::memory_order_relaxed);
  switch (state) {
    case WaitState::notified: {
      storage::ReadView view = winner != nullptr ? winner->take_view() : storage::ReadView();
      if (!view.empty()) {
        result.messages = std::move(view);
        result.current_offset = cell_->current_offset();
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

void Poll::answer(BrokerShard& shard) {
  cell_.reset();
  finish(shard, ok_status());
}

void Poll::answer_empty(BrokerShard& shard) {
  result.messages = storage::ReadView();
  result.current_offset = cell_->current_offset();
  answer(shard);
}

void Poll::answer_gone(BrokerShard& shard) {
  // The error an immediate poll gets now: 1009/1010, 2010/2011 or 3007.
  cell_.reset();
  const auto again = shard.catalog().partition(stream, topic, partition.value_or(0));
  finish(shard, again.ok() ? Status(Error::partition_not_found) : Status(again.error()));
}

}  // namespace hark::core
