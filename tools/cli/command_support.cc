#include "hark/tools/cli/command_support.h"

namespace hark::cli {

std::string streams_table_text(const std::vector<protocol::StreamResponse>& streams) {
  Table table({"ID", "NAME", "TOPICS", "MESSAGES", "SIZE", "CREATED"});
  for (const protocol::StreamResponse& stream : streams) {
    table.add({std::to_string(stream.id), stream.name, std::to_string(stream.topics_count),
               std::to_string(stream.messages_count), size_text(stream.size_bytes),
               time_text(stream.created_at)});
  }
  return table.text();
}

std::string topics_table_text(const std::vector<protocol::TopicResponse>& topics) {
  Table table({"ID", "NAME", "PARTITIONS", "MESSAGES", "SIZE", "EXPIRY", "MAX SIZE", "CREATED"});
  for (const protocol::TopicResponse& topic : topics) {
    table.add({std::to_string(topic.id), topic.name, std::to_string(topic.partitions_count),
               std::to_string(topic.messages_count), size_text(topic.size_bytes),
               expiry_text(topic.message_expiry), size_text(topic.max_topic_size, true),
               time_text(topic.created_at)});
  }
  return table.text();
}

std::string partitions_table_text(const std::vector<protocol::PartitionResponse>& partitions) {
  Table table({"PARTITION", "MESSAGES", "CURRENT OFFSET", "SEGMENTS", "SIZE", "CREATED"});
  for (const protocol::PartitionResponse& partition : partitions) {
    table.add({std::to_string(partition.id), std::to_string(partition.messages_count),
               std::to_string(partition.current_offset), std::to_string(partition.segments_count),
               size_text(partition.size_bytes), time_text(partition.created_at)});
  }
  return table.text();
}

std::string groups_table_text(const std::vector<protocol::ConsumerGroupResponse>& groups) {
  Table table({"ID", "NAME", "PARTITIONS", "MEMBERS"});
  for (const protocol::ConsumerGroupResponse& group : groups) {
    table.add({std::to_string(group.id), group.name, std::to_string(group.partitions_count),
               std::to_string(group.members_count)});
  }
  return table.text();
}

}  // namespace hark::cli
