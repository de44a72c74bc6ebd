#pragma once

#include <string>
#include <vector>

#include "hark/core/base/error.h"
#include "hark/protocol/group_responses.h"
#include "hark/protocol/identifier.h"
#include "hark/protocol/stream_responses.h"
#include "hark/tools/cli/output.h"

namespace hark::cli {

// Small helpers the command files share.

// The error a newer Iggy server gives for what 0.8.0 answers with an empty payload (get_stream
// and get_topic of something missing), so the CLI reports a missing thing one way.
inline Error stream_missing(const protocol::Identifier& id) {
  return id.is_numeric() ? Error::stream_id_not_found : Error::stream_name_not_found;
}
inline Error topic_missing(const protocol::Identifier& id) {
  return id.is_numeric() ? Error::topic_id_not_found : Error::topic_name_not_found;
}
inline Error group_missing(const protocol::Identifier& id) {
  return id.is_numeric() ? Error::consumer_group_id_not_found
                         : Error::consumer_group_name_not_found;
}

// "'orders' (id 3)" — how the CLI names what it created or changed.
inline std::string named_id(const std::string& name, uint32_t id) {
  return "'" + name + "' (id " + std::to_string(id) + ")";
}

// Tables of what list and get commands show, as printed (header row first).
std::string streams_table_text(const std::vector<protocol::StreamResponse>& streams);
std::string topics_table_text(const std::vector<protocol::TopicResponse>& topics);
std::string partitions_table_text(const std::vector<protocol::PartitionResponse>& partitions);
std::string groups_table_text(const std::vector<protocol::ConsumerGroupResponse>& groups);

}  // namespace hark::cli
