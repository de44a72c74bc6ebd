#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/primitives.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Requests of hark's notification commands (docs/wire.md §11, issue "notifications"): wait
// for something to happen on a topic without taking any data. Iggy clients never send them.
// Every field is required; truncation and unknown discriminants → invalid_command (3),
// validation failures (min_messages 0, empty condition name, parameters over the bound) →
// invalid_format (4), as the classic decoders do.

// Condition parameters and condition answers are opaque bytes of at most this many: enough
// for any parameter block, small enough that a parked waiter never pins much memory.
inline constexpr uint32_t condition_bytes_max = 4096;

// [Consumer][stream Id][topic Id][OptPartition][PollingStrategy][wait_timeout_us u64]
// [min_messages u32 ≥ 1]. Addressed like poll_messages; answers once min_messages are
// readable on one partition for that consumer (WaitForMessagesResponse).
struct WaitForMessagesRequest {
  static constexpr Command code = Command::wait_for_messages;
  Consumer consumer;
  Identifier stream_id;
  Identifier topic_id;
  std::optional<uint32_t> partition_id;
  PollingStrategy strategy;
  uint64_t wait_timeout_us = 0;
  uint32_t min_messages = 1;
  bool operator==(const WaitForMessagesRequest&) const = default;
};

// Which side of the threshold answers a lag watch: above = total lag ≥ threshold (falling
// behind), below = total lag ≤ threshold (caught up).
enum class LagWatch : uint8_t { above = 1, below = 2 };

// [Consumer][stream Id][topic Id][OptPartition][wait_timeout_us u64][watch u8: 1 above,
// 2 below][threshold u64].
struct WaitForLagRequest {
  static constexpr Command code = Command::wait_for_lag;
  Consumer consumer;
  Identifier stream_id;
  Identifier topic_id;
  std::optional<uint32_t> partition_id;
  uint64_t wait_timeout_us = 0;
  LagWatch watch = LagWatch::above;
  uint64_t threshold = 0;
  bool operator==(const WaitForLagRequest&) const = default;
};

// [Consumer][stream Id][topic Id][OptPartition][wait_timeout_us u64][name Name]
// [params_length u32 ≤ condition_bytes_max][params]. The name picks a condition the server
// registered; the parameters are that condition's, opaque to the wire.
struct WaitForConditionRequest {
  static constexpr Command code = Command::wait_for_condition;
  Consumer consumer;
  Identifier stream_id;
  Identifier topic_id;
  std::optional<uint32_t> partition_id;
  uint64_t wait_timeout_us = 0;
  std::string name;
  Bytes params;
  bool operator==(const WaitForConditionRequest&) const = default;
};

void encode(const WaitForMessagesRequest& request, Writer& writer);
Status decode(Reader& reader, WaitForMessagesRequest& request);
void encode(const WaitForLagRequest& request, Writer& writer);
Status decode(Reader& reader, WaitForLagRequest& request);
void encode(const WaitForConditionRequest& request, Writer& writer);
Status decode(Reader& reader, WaitForConditionRequest& request);

// [len u32 ≤ condition_bytes_max][bytes]: condition parameters and answers. A length over the
// bound → invalid_format (4), checked before the bytes; short → invalid_command (3).
Status read_condition_bytes(Reader& reader, Bytes& bytes);
// Fails the writer with invalid_format if `bytes` is over the bound.
void write_condition_bytes(Writer& writer, const Bytes& bytes);

}  // namespace hark::protocol
