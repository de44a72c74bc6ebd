#include "hark/protocol/hash.h"

#include <xxhash.h>

#include "hark/protocol/reader.h"

namespace hark::protocol {
namespace {

constexpr size_t checksum_size = sizeof(uint64_t);

}  // namespace

uint64_t xxh3_64(std::span<const std::byte> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

uint32_t xxh32(std::span<const std::byte> bytes) { return XXH32(bytes.data(), bytes.size(), 0); }

uint64_t message_checksum(std::span<const std::byte> message) {
  if (message.size() < checksum_size) return xxh3_64({});
  return xxh3_64(message.subspan(checksum_size));
}

uint32_t consumer_id_of_name(std::string_view name) { return xxh32(as_bytes(name)); }

Result<uint32_t> partition_of_key(std::span<const std::byte> key, uint32_t partitions_count) {
  if (partitions_count == 0) return Error::no_partitions;
  return xxh32(key) % partitions_count;
}

}  // namespace hark::protocol
