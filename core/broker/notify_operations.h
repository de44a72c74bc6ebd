#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hark/core/broker/condition.h"
#include "hark/core/broker/operation.h"

namespace hark::core {

// Notifications: wait until a condition holds on a partition, without taking any data
// (docs/notifications.md is the contract). A notification is a hint, not a reservation:
// between it and the consumer's poll another member or a rebalance may take the data.

// The built-in conditions, registered by every Broker (harkd ships only these).
inline constexpr std::string_view messages_condition = "hark.messages";
inline constexpr std::string_view lag_condition = "hark.lag";

// One partition on which the condition held, and what the condition answered there.
struct NotifyAnswer {
  uint32_t partition_id = 0;
  uint32_t size = 0;
  std::array<std::byte, condition_answer_max> bytes{};

  std::span<const std::byte> answer() const { return std::span(bytes).first(size); }
};

// Waits up to `wait` (clamped to BrokerOptions::max_wait) until `condition` holds on one of
// the partitions it addresses, then answers every partition on which it held when it was
// evaluated (at once), or the one whose event satisfied it (when woken). A timeout answers
// ok with no answers, as a poll answers empty.
//
// Addressed like a Poll: a consumer on one partition (`partition`), or on every partition of
// the topic (no `partition`); a group member on one partition or on its assigned partitions
// (re-evaluated on its new assignment, with its deadline, when the group rebalances). A group
// request from a client that has not joined the group (a watcher, not a consumer) addresses
// the partition given or every partition of the topic, with the group's stored offsets.
// Errors: the poll's for what is missing (1009/1010, 2010/2011, 3007, 5000/5003);
// resource_not_found (20) for an unregistered condition; invalid_format (4) for parameters over
// condition_params_max or that the condition refuses; feature_unavailable (5) when the parked-wait
// limits are reached (docs/long-polling.md). Ended by a purge or shutdown: ok, empty; by a delete:
// the error a request gets now.
class Notify : public Operation {
 public:
  Notify();
  // Not while it runs: from submit() until done() the broker uses it.
  ~Notify() override;

  NameOrId stream;
  NameOrId topic;
  std::optional<uint32_t> partition;
  ConsumerRef consumer;
  NameOrId group;       // When consumer.kind is group.
  uint32_t member = 0;  // The waiting client, for a group: a member, or a watcher if not.
  std::string condition{messages_condition};
  std::vector<std::byte> params;  // The condition's parameters (see the built-ins below).
  Duration wait = Duration(0);
  std::vector<NotifyAnswer> answers;  // Out, by partition as evaluated.
  // Out, for a condition over a total (hark.lag): the sum of the partitions' measures when
  // it held (or when the request was last evaluated).
  std::optional<uint64_t> total;

 private:
  friend class internal::NotifyJob;

  void step(internal::BrokerShard& shard) override;

  std::unique_ptr<internal::NotifyJob> job_;  // The engine's state; made at the first submit.
  bool running_ = false;
};

// hark.messages: satisfied on a partition when next_offset >= first_readable + min_messages;
// first_readable = `offset` if given, else the stored offset + 1 of the request's consumer
// (or group), or the partition's first offset when nothing is stored.
struct MessagesParams {
  uint32_t min_messages = 1;  // >= 1
  std::optional<uint64_t> offset;
};
struct MessagesReady {
  uint32_t partition_id = 0;
  uint64_t first_readable = 0;
  uint64_t next_offset = 0;
};
// Sets `notify`'s condition and parameters.
void wait_for_messages(Notify& notify, const MessagesParams& params);
// The typed answer; nullopt if `answer` is not hark.messages' (wrong size).
std::optional<MessagesReady> messages_ready(const NotifyAnswer& answer);

// hark.lag: a partition's lag for the request's consumer (or group) is next_offset -
// (stored + 1), or next_offset - first_offset when nothing is stored; the total lag is their
// sum over the partitions the request addresses (one, the topic's, or a member's). `above`:
// satisfied when total >= threshold (falling behind); `below`: when total <= threshold
// (caught up). Owners send each partition's lag change (appends raise it, offset stores and
// deletes lower it) to the request's home, which sums them (docs/notifications.md
// §WaitForLag). Answers: every partition's lag, and `total`.
struct LagParams {
  enum class Direction : uint8_t { above = 1, below = 2 };
  Direction direction = Direction::above;
  uint64_t threshold = 0;
};
struct PartitionLag {
  uint32_t partition_id = 0;
  uint64_t next_offset = 0;
  std::optional<uint64_t> stored;
  uint64_t lag = 0;
};
void wait_for_lag(Notify& notify, const LagParams& params);
std::optional<PartitionLag> partition_lag(const NotifyAnswer& answer);

}  // namespace hark::core
