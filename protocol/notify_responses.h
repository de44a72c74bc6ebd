#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Responses of the notification commands (docs/wire.md §11). Each is a run of per-partition
// entries to the end of the payload, so a timeout (nothing satisfied) is an empty payload with
// status 0, as a poll's timeout is a normal answer. A partial entry → invalid_command (3).

// 20 bytes: [partition_id u32][first_offset u64][next_offset u64]. Offsets first_offset up to
// next_offset - 1 are readable for the waiter (next_offset - first_offset ≥ min_messages).
struct ReadyPartition {
  uint32_t partition_id = 0;
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  bool operator==(const ReadyPartition&) const = default;
};

// wait_for_messages: one entry per partition that satisfies the wait; empty on timeout.
struct WaitForMessagesResponse {
  std::vector<ReadyPartition> partitions;
  bool operator==(const WaitForMessagesResponse&) const = default;
};

// 29 bytes: [partition_id u32][next_offset u64][has_stored u8: 0 or 1][stored_offset u64]
// [lag u64]. stored_offset is 0 on the wire when has_stored is 0. has_stored ∉ {0,1} → 3.
struct PartitionLag {
  uint32_t partition_id = 0;
  uint64_t next_offset = 0;
  std::optional<uint64_t> stored_offset;
  uint64_t lag = 0;
  bool operator==(const PartitionLag&) const = default;
};

// wait_for_lag: [total_lag u64] then one PartitionLag per partition watched; an empty payload
// on timeout (decode with decode_optional_payload<WaitForLagResponse>).
struct WaitForLagResponse {
  uint64_t total_lag = 0;
  std::vector<PartitionLag> partitions;
  bool operator==(const WaitForLagResponse&) const = default;
};

// [partition_id u32][answer_length u32 ≤ condition_bytes_max][answer]: what the condition
// wrote for a partition that satisfied it.
struct ConditionAnswer {
  uint32_t partition_id = 0;
  Bytes answer;
  bool operator==(const ConditionAnswer&) const = default;
};

// wait_for_condition: one entry per satisfied partition; empty on timeout.
struct WaitForConditionResponse {
  std::vector<ConditionAnswer> partitions;
  bool operator==(const WaitForConditionResponse&) const = default;
};

void encode(const ReadyPartition& entry, Writer& writer);
Status decode(Reader& reader, ReadyPartition& entry);
void encode(const WaitForMessagesResponse& response, Writer& writer);
Status decode(Reader& reader, WaitForMessagesResponse& response);
void encode(const PartitionLag& entry, Writer& writer);
Status decode(Reader& reader, PartitionLag& entry);
void encode(const WaitForLagResponse& response, Writer& writer);
Status decode(Reader& reader, WaitForLagResponse& response);
void encode(const ConditionAnswer& entry, Writer& writer);
Status decode(Reader& reader, ConditionAnswer& entry);
void encode(const WaitForConditionResponse& response, Writer& writer);
Status decode(Reader& reader, WaitForConditionResponse& response);

}  // namespace hark::protocol
