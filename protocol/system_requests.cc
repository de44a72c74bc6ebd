#include "hark/protocol/system_requests.h"

namespace hark::protocol {

void encode(const PingRequest&, Writer&) {}
Status decode(Reader&, PingRequest&) { return ok_status(); }

void encode(const GetStatsRequest&, Writer&) {}
Status decode(Reader&, GetStatsRequest&) { return ok_status(); }

void encode(const GetSnapshotRequest& request, Writer& writer) {
  if (request.snapshot_types.size() > UINT8_MAX) {
    writer.fail(Error::invalid_format);
    return;
  }
  writer.u8(request.compression);
  writer.u8(static_cast<uint8_t>(request.snapshot_types.size()));
  for (const uint8_t type : request.snapshot_types) writer.u8(type);
}

Status decode(Reader& reader, GetSnapshotRequest& request) {
  HARK_TRY_ASSIGN(request.compression, reader.u8());
  HARK_TRY_ASSIGN(const uint8_t types_count, reader.u8());
  // At most 255 entries, so the allocation is bounded whatever the input says.
  HARK_TRY_ASSIGN(const std::span<const std::byte> types, reader.bytes(types_count));
  request.snapshot_types.clear();
  for (const std::byte type : types)
    request.snapshot_types.push_back(std::to_integer<uint8_t>(type));
  return ok_status();
}

void encode(const GetClusterMetadataRequest&, Writer&) {}
Status decode(Reader&, GetClusterMetadataRequest&) { return ok_status(); }

void encode(const GetMeRequest&, Writer&) {}
Status decode(Reader&, GetMeRequest&) { return ok_status(); }

void encode(const GetClientRequest& request, Writer& writer) { writer.u32(request.client_id); }

Status decode(Reader& reader, GetClientRequest& request) {
  HARK_TRY_ASSIGN(request.client_id, reader.u32());
  return ok_status();
}

void encode(const GetClientsRequest&, Writer&) {}
Status decode(Reader&, GetClientsRequest&) { return ok_status(); }

}  // namespace hark::protocol
