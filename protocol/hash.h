#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "hark/core/base/result.h"

namespace hark::protocol {

// The hashes the wire fixes (docs/wire.md §Hashes), all from libxxhash with seed 0, so hark
// stores, partitions and names consumers exactly as Iggy 0.8.0 does.

uint64_t xxh3_64(std::span<const std::byte> bytes);
uint32_t xxh32(std::span<const std::byte> bytes);

// A message's checksum: XXH3-64 over its bytes [8, end) — everything after the checksum field
// (header bytes 8..63, payload, user headers). The server computes it after it has set the
// offset, timestamp and id. A span shorter than 8 bytes hashes as empty.
uint64_t message_checksum(std::span<const std::byte> message);

// The numeric consumer id 0.8.0 derives from a named consumer (Consumer kind 1 with a string
// Identifier): XXH32 of the name's bytes.
uint32_t consumer_id_of_name(std::string_view name);

// The partition a messages_key selects: XXH32(key) % partitions_count. Error::no_partitions
// (3008) when the topic has none (0.8.0 divides by zero there).
Result<uint32_t> partition_of_key(std::span<const std::byte> key, uint32_t partitions_count);

}  // namespace hark::protocol
