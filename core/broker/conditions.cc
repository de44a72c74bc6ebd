// The condition registry and the built-in conditions, hark.messages and hark.lag
// (docs/notifications.md): both are Conditions like an embedder's, so the product exercises
// the extension point.
#include "hark/core/broker/internal/conditions.h"

#include <algorithm>

#include "hark/core/base/log.h"
#include "hark/core/base/message_layout.h"
#include "hark/core/broker/notify_operations.h"

namespace hark::core {
namespace {

// hark.messages parameters: u32 min_messages, u8 has_offset, u64 offset (little endian).
constexpr size_t messages_params_bytes = 13;
// Its answer: u64 first_readable, u64 next_offset.
constexpr size_t messages_answer_bytes = 16;
// hark.lag parameters: u8 direction (1 above, 2 below), u64 threshold.
constexpr size_t lag_params_bytes = 9;
// Its answer: u64 next_offset, u8 has_stored, u64 stored, u64 lag.
constexpr size_t lag_answer_bytes = 25;

uint64_t add_saturating(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

// Where a consumer reads next: its stored offset + 1, or the partition's first offset.
uint64_t first_readable(const PartitionFacts& facts, const ConsumerRef& consumer) {
  const std::optional<uint64_t> stored = facts.stored_offset(consumer);
  return stored ? std::max(*stored + 1, facts.first_offset) : facts.first_offset;
}

class MessagesCondition final : public Condition {
 public:
  Status check(std::span<const std::byte> params) const override {
    if (params.size() != messages_params_bytes || load_u32(params, 0) == 0 ||
        std::to_integer<uint8_t>(params[4]) > 1) {
      return Error::invalid_format;
    }
    return ok_status();
  }

  Verdict evaluate(const PartitionFacts& facts, const ConditionRequest& request,
                   std::span<std::byte, condition_answer_max> answer) const override {
    const uint32_t min_messages = load_u32(request.params, 0);
    const bool explicit_offset = std::to_integer<uint8_t>(request.params[4]) == 1;
    // An offset that retention or a segment delete has passed reads from the first one kept.
    const uint64_t first = explicit_offset
                               ? std::max(load_u64(request.params, 5), facts.first_offset)
                               : first_readable(facts, request.consumer);
    const uint64_t wake_at = add_saturating(first, min_messages);
    if (facts.next_offset < wake_at) return Verdict{.wake_at = wake_at};
    store_u64(answer, 0, first);
    store_u64(answer, 8, facts.next_offset);
    return Verdict{.satisfied = true, .answer_size = messages_answer_bytes};
  }
};

class LagCondition final : public Condition {
 public:
  Status check(std::span<const std::byte> params) const override {
    if (params.size() != lag_params_bytes) return Error::invalid_format;
    const auto direction = std::to_integer<uint8_t>(params[0]);
    if (direction != 1 && direction != 2) return Error::invalid_format;
    return ok_status();
  }

  Verdict evaluate(const PartitionFacts& facts, const ConditionRequest& request,
                   std::span<std::byte, condition_answer_max> answer) const override {
    const std::optional<uint64_t> stored = facts.stored_offset(request.consumer);
    const uint64_t lag = internal::consumer_lag(facts, request.consumer);
    store_u64(answer, 0, facts.next_offset);
    answer[8] = std::byte{stored.has_value() ? uint8_t{1} : uint8_t{0}};
    store_u64(answer, 9, stored.value_or(0));
    store_u64(answer, 17, lag);
    // Every commit and offset change moves the lag: each is measured (wake_at 0) and sent to
    // the home, which judges the total.
    return Verdict{.answer_size = lag_answer_bytes, .wake_at = 0, .measure = lag};
  }

  bool totals() const override { return true; }

  bool total_holds(uint64_t total, std::span<const std::byte> params) const override {
    const bool above = std::to_integer<uint8_t>(params[0]) == 1;
    const uint64_t threshold = load_u64(params, 1);
    return above ? total >= threshold : total <= threshold;
  }
};

const MessagesCondition messages_builtin;
const LagCondition lag_builtin;

}  // namespace

void wait_for_messages(Notify& notify, const MessagesParams& params) {
  notify.condition = messages_condition;
  notify.params.assign(messages_params_bytes, std::byte{0});
  store_u32(notify.params, 0, params.min_messages);
  notify.params[4] = std::byte{params.offset.has_value() ? uint8_t{1} : uint8_t{0}};
  store_u64(notify.params, 5, params.offset.value_or(0));
}

std::optional<MessagesReady> messages_ready(const NotifyAnswer& answer) {
  const std::span<const std::byte> bytes = answer.answer();
  if (bytes.size() != messages_answer_bytes) return std::nullopt;
  return MessagesReady{.partition_id = answer.partition_id,
                       .first_readable = load_u64(bytes, 0),
                       .next_offset = load_u64(bytes, 8)};
}

void wait_for_lag(Notify& notify, const LagParams& params) {
  notify.condition = lag_condition;
  notify.params.assign(lag_params_bytes, std::byte{0});
  notify.params[0] = std::byte{static_cast<uint8_t>(params.direction)};
  store_u64(notify.params, 1, params.threshold);
}

std::optional<PartitionLag> partition_lag(const NotifyAnswer& answer) {
  const std::span<const std::byte> bytes = answer.answer();
  if (bytes.size() != lag_answer_bytes) return std::nullopt;
  PartitionLag lag{.partition_id = answer.partition_id,
                   .next_offset = load_u64(bytes, 0),
                   .stored = std::nullopt,
                   .lag = load_u64(bytes, 17)};
  if (std::to_integer<uint8_t>(bytes[8]) == 1) lag.stored = load_u64(bytes, 9);
  return lag;
}

namespace internal {

uint64_t consumer_lag(const PartitionFacts& facts, const ConsumerRef& consumer) {
  const uint64_t first = first_readable(facts, consumer);
  return facts.next_offset - std::min(first, facts.next_offset);
}

ConditionRegistry::ConditionRegistry() {
  tables_.push_back(std::make_unique<Table>());
  tables_.back()->emplace_back(std::string(messages_condition), &messages_builtin);
  tables_.back()->emplace_back(std::string(lag_condition), &lag_builtin);
  current_.store(tables_.back().get(), std::memory_order_release);
}

Status ConditionRegistry::add(std::string_view name, const Condition& condition) {
  std::lock_guard lock(mutex_);
  if (name.empty() || name.size() > 255 || find(name) != nullptr) {
    HARK_LOG_WARN("cannot register condition '%s': empty, over 255 bytes, or taken", name);
    return Error::invalid_configuration;
  }
  auto table = std::make_unique<Table>(*current_.load(std::memory_order_relaxed));
  table->emplace_back(std::string(name), &condition);
  tables_.push_back(std::move(table));
  current_.store(tables_.back().get(), std::memory_order_release);
  return ok_status();
}

const Condition* ConditionRegistry::find(std::string_view name) const {
  const Table& table = *current_.load(std::memory_order_acquire);
  const auto it = std::find_if(table.begin(), table.end(),
                               [name](const auto& entry) { return entry.first == name; });
  return it == table.end() ? nullptr : it->second;
}

}  // namespace internal
}  // namespace hark::core
