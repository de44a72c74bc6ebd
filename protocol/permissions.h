#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hark/core/base/result.h"
#include "hark/protocol/reader.h"
#include "hark/protocol/writer.h"

namespace hark::protocol {

// A user's permissions as the wire carries them (create_user, update_permissions, get_user).
// Layout (docs/wire.md §Permissions): 10 global bools, [has_streams u8], then per stream
// [stream_id u32][6 bools][has_topics u8] {per topic [topic_id u32][4 bools][has_next u8]}
// [has_next_stream u8]. Bools are read as "non-zero is true". Control plane: allocates.

struct TopicPermissions {
  uint32_t topic_id = 0;
  bool manage_topic = false;
  bool read_topic = false;
  bool poll_messages = false;
  bool send_messages = false;

  bool operator==(const TopicPermissions&) const = default;
};

struct StreamPermissions {
  uint32_t stream_id = 0;
  bool manage_stream = false;
  bool read_stream = false;
  bool manage_topics = false;
  bool read_topics = false;
  bool poll_messages = false;
  bool send_messages = false;
  std::vector<TopicPermissions> topics;

  bool operator==(const StreamPermissions&) const = default;
};

struct GlobalPermissions {
  bool manage_servers = false;
  bool read_servers = false;
  bool manage_users = false;
  bool read_users = false;
  bool manage_streams = false;
  bool read_streams = false;
  bool manage_topics = false;
  bool read_topics = false;
  bool poll_messages = false;
  bool send_messages = false;

  bool operator==(const GlobalPermissions&) const = default;
};

struct Permissions {
  GlobalPermissions global;
  std::vector<StreamPermissions> streams;

  bool operator==(const Permissions&) const = default;
};

// Decodes the blob. Truncation → invalid_command. Each list entry consumes at least 5 bytes
// before the next is read, so a hostile "has_next" chain is bounded by the input's size.
Result<Permissions> read_permissions(Reader& reader);
void write_permissions(Writer& writer, const Permissions& permissions);

// Requests (create_user, update_permissions): [has u8][len u32][blob] where only has == 1 means
// present. As in 0.8.0 the blob is decoded from the rest of the payload and its size must equal
// `len`, else invalid_format.
Result<std::optional<Permissions>> read_permissions_field(Reader& reader);
void write_permissions_field(Writer& writer, const std::optional<Permissions>& permissions);

}  // namespace hark::protocol
