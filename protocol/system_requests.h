#pragma once

#include <cstdint>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/protocol/command.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// Requests of the system commands (docs/wire.md §Requests). The empty ones carry nothing:
// 0.8.0 never decodes their payload, so any bytes sent with them are ignored.

struct PingRequest {
  static constexpr Command code = Command::ping;
  bool operator==(const PingRequest&) const = default;
};

struct GetStatsRequest {
  static constexpr Command code = Command::get_stats;
  bool operator==(const GetStatsRequest&) const = default;
};

// [compression u8][types_count u8][type u8 × types_count]. Compression 1 stored … 6 xz;
// types 1..6, 100 = all. Values are not validated by the decoder (0.8.0 checks them later).
struct GetSnapshotRequest {
  static constexpr Command code = Command::get_snapshot_file;
  uint8_t compression = 1;
  std::vector<uint8_t> snapshot_types;
  bool operator==(const GetSnapshotRequest&) const = default;
};

struct GetClusterMetadataRequest {
  static constexpr Command code = Command::get_cluster_metadata;
  bool operator==(const GetClusterMetadataRequest&) const = default;
};

struct GetMeRequest {
  static constexpr Command code = Command::get_me;
  bool operator==(const GetMeRequest&) const = default;
};

// [client_id u32].
struct GetClientRequest {
  static constexpr Command code = Command::get_client;
  uint32_t client_id = 0;
  bool operator==(const GetClientRequest&) const = default;
};

struct GetClientsRequest {
  static constexpr Command code = Command::get_clients;
  bool operator==(const GetClientsRequest&) const = default;
};

void encode(const PingRequest& request, Writer& writer);
Status decode(Reader& reader, PingRequest& request);
void encode(const GetStatsRequest& request, Writer& writer);
Status decode(Reader& reader, GetStatsRequest& request);
void encode(const GetSnapshotRequest& request, Writer& writer);
Status decode(Reader& reader, GetSnapshotRequest& request);
void encode(const GetClusterMetadataRequest& request, Writer& writer);
Status decode(Reader& reader, GetClusterMetadataRequest& request);
void encode(const GetMeRequest& request, Writer& writer);
Status decode(Reader& reader, GetMeRequest& request);
void encode(const GetClientRequest& request, Writer& writer);
Status decode(Reader& reader, GetClientRequest& request);
void encode(const GetClientsRequest& request, Writer& writer);
Status decode(Reader& reader, GetClientsRequest& request);

}  // namespace hark::protocol
